"""mf-sched's racing sampler and pruner, packaged for OptunaHub: `optunahub.load_module("samplers/mf_sched")`.

The classes are those of the `mf-sched` package (`pip install "mf-sched[optuna]"`, see `requirements.txt`);
this module re-exports them so that OptunaHub can list and load them. See `README.md`.
"""

from __future__ import annotations

from mf_sched.integrations.optuna import MFPruner, MFRecommendation, MFSampler, finish, train_to

__all__ = ["MFSampler", "MFPruner", "MFRecommendation", "train_to", "finish"]
