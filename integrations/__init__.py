"""Framework adapters, installed as :mod:`mf_sched.integrations`.

Each adapter imports its framework at module import (`mf_sched.integrations.optuna` needs the
`optuna` extra, `mf_sched.integrations.ray` the `ray` extra); importing this package alone needs
nothing beyond the core. The core never imports an adapter.
"""

from __future__ import annotations

__all__: list[str] = []
