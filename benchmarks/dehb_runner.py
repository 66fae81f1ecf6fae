"""DEHB (Awad, Mallik & Hutter, IJCAI 2021, the ``dehb`` package) on replayed learning curves, through its ask/tell
interface.

Runs in a separate environment: ``dehb==0.1.2`` requires ``numpy<2`` (the project's environment has numpy 2)::

    python -m venv .venv-dehb && .venv-dehb/bin/pip install "dehb==0.1.2"
    .venv-dehb/bin/python benchmarks/dehb_runner.py curves.npz results.json --budget 1.0

This file imports nothing of the project (numpy and ``dehb`` only), so any Python with ``dehb`` runs it.

**What DEHB tunes here.** The ``K`` configurations of a curve set (one row each; ``curves[k, e - 1]`` is row
``k``'s metric after epoch ``e``) are the choices of one ConfigSpace ``CategoricalHyperparameter`` ``row``, listed in
the order of the rows (the benchmark draws them in a random order). DEHB searches the unit interval and maps a point
``x`` to choice ``⌊x·K⌋`` — its own encoding of a categorical (``dehb.optimizers.de.DE.vector_to_configspace``), so
a mutant or a crossover lands on one of the ``K`` rows. DEHB's documented defaults otherwise (mutation factor 0.5,
crossover probability 0.5, ``rand1_bin``, one worker, asked and told one job at a time); fidelities ``min 1, max T,
eta 3`` (rungs 1, 3, 9, 27 for ``T = 27``: DEHB's Hyperband brackets).

**What an evaluation costs.** DEHB asks for ``(configuration, fidelity)`` and is told the metric at that epoch.
It does not itself resume anything: its examples train from scratch at every fidelity. The objective here keeps a
checkpoint per row, as the benchmark's Ray trainables do: a job at fidelity ``b`` for a row already trained to
epoch ``e`` trains ``max(0, b − e)`` epochs (``cost_resume``; 0 when the row went further already, its value at
``b`` being known from its curve). ``cost_scratch = b`` is what DEHB's own examples would train. Both are recorded
for every job; the benchmark scores both.

**Its answer** at any moment is DEHB's incumbent (``DEHB.get_incumbents()``): in dehb 0.1.2 that is the job with
the lowest fitness told so far *at any fidelity* (``DEHB.tell`` updates ``inc_score`` whenever a fitness beats it,
whatever the fidelity), not the best at the highest fidelity. Fitness = the metric (``mode='min'``) or minus it
(``'max'``); a NaN (a diverged run) is told as ``+inf``.

**When it stops.** DEHB has no end of its own. A run stops once ``--budget × K × T`` epochs are spent under the
resume counting (a full search's epochs at ``--budget 1``: then every row has been trained to ``T``), or after
``--max-jobs-per-config × K`` jobs (DEHB keeps re-proposing rows it has already trained, at no cost, once its
populations have converged).

Input: an ``.npz`` file loaded with ``allow_pickle=False``: ``curves_0``, ``curves_1``, … (each ``K × T`` floats,
NaN allowed) and, optionally, ``maximize`` (one bool per set; else ``--mode`` for all) and ``seed`` (one int per
set; else ``--seed``). Output JSON: per set, the jobs in the order DEHB asked them (``row``, ``fidelity``,
``cost_resume``, ``cost_scratch``, ``fitness``) and the incumbent row after each.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def load_sets(path: Path) -> tuple[list[np.ndarray], np.ndarray | None, np.ndarray | None]:
    """The curve sets of an ``.npz`` batch, validated: (curves per set, ``maximize`` or None, ``seed`` or None)."""
    if path.suffix != ".npz":
        raise ValueError(f"{path}: the accepted format is .npz (arrays curves_0, curves_1, …)")
    with np.load(path, allow_pickle=False) as f:
        names = sorted((n for n in f.files if n.startswith("curves_")), key=lambda n: int(n.split("_", 1)[1]))
        if not names:
            raise ValueError(f"{path} has no array named curves_0, curves_1, …")
        sets = []
        for n in names:
            c = np.asarray(f[n], dtype=float)
            if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 2 or np.isinf(c).any():
                raise ValueError(f"{path}: {n} must be a finite (or NaN) K × T array with K ≥ 1, T ≥ 2")
            sets.append(c)
        maximize = np.asarray(f["maximize"], dtype=bool) if "maximize" in f.files else None
        seed = np.asarray(f["seed"], dtype=np.int64) if "seed" in f.files else None
    for name, arr in (("maximize", maximize), ("seed", seed)):
        if arr is not None and arr.shape != (len(sets),):
            raise ValueError(f"{path}: {name} must hold one value per curve set ({len(sets)}); got shape {arr.shape}")
    return sets, maximize, seed


def run_dehb(
    curves: np.ndarray,
    *,
    mode: str = "max",
    seed: int = 0,
    budget: float = 1.0,
    max_jobs_per_config: int = 30,
    eta: int = 3,
    output_path: str | None = None,
) -> dict[str, Any]:
    """One DEHB run on the ``K × T`` curves (see the module docstring); returns its jobs and answers.

    Args:
        curves: ``curves[k, e - 1]``, row ``k``'s metric after epoch ``e`` (NaN: diverged).
        mode: ``"max"`` or ``"min"``: whether a larger metric is better.
        seed: DEHB's seed.
        budget: stop once ``budget × K × T`` epochs are spent (resume counting); in ``(0, 1]``.
        max_jobs_per_config: stop after this many jobs per row at most (≥ 1).
        eta: DEHB's reduction factor (its brackets: fidelities ``T·eta^-i`` down to 1).
        output_path: the folder DEHB writes its log to (a temporary folder when None).

    Returns:
        ``{"jobs": [[row, fidelity, cost_resume, cost_scratch, fitness], …], "answers": [row after each job], …}``.
    """
    import ConfigSpace
    from dehb import DEHB

    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min'; got {mode!r}")
    if not 0 < budget <= 1:
        raise ValueError(f"budget must be in (0, 1]; got {budget}")
    if max_jobs_per_config < 1:
        raise ValueError(f"max_jobs_per_config must be ≥ 1; got {max_jobs_per_config}")
    K, T = curves.shape
    cs = ConfigSpace.ConfigurationSpace(seed=int(seed))
    cs.add(ConfigSpace.CategoricalHyperparameter("row", choices=[str(k) for k in range(K)]))
    sign = -1.0 if mode == "max" else 1.0  # DEHB minimises its fitness
    with tempfile.TemporaryDirectory() as tmp:
        opt = DEHB(
            cs=cs, min_fidelity=1, max_fidelity=T, eta=eta, n_workers=1, seed=int(seed),
            output_path=output_path or tmp, save_freq="end", log_level="ERROR",
        )  # fmt: skip
        trained = np.zeros(K, dtype=int)  # the checkpoint of each row: the last epoch trained
        limit = budget * K * T
        jobs, answers = [], []
        t0 = time.perf_counter()
        while trained.sum() < limit and len(jobs) < max_jobs_per_config * K:
            job = opt.ask()
            row = int(job["config"]["row"])
            fidelity = int(round(float(job["fidelity"])))
            if not 1 <= fidelity <= T:
                raise RuntimeError(f"DEHB asked for fidelity {job['fidelity']} outside [1, {T}]")
            cost_resume = max(0, fidelity - int(trained[row]))
            trained[row] = max(trained[row], fidelity)
            value = float(curves[row, fidelity - 1])
            fitness = sign * value if math.isfinite(value) else math.inf
            opt.tell(job, {"fitness": fitness, "cost": float(cost_resume)})
            inc_config, _ = opt.get_incumbents()
            jobs.append([row, fidelity, cost_resume, fidelity, fitness])
            answers.append(int(inc_config["row"]))
        wall = time.perf_counter() - t0
        if getattr(opt, "client", None) is not None:  # n_workers=1: no Dask client; close one if ever made
            opt.client.close()
    return {
        "jobs": jobs, "answers": answers, "trained": trained.tolist(), "epochs_resume": int(trained.sum()),
        "epochs_scratch": int(sum(j[3] for j in jobs)), "wall_s": wall,
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("curves", type=Path, help=".npz with arrays curves_0, curves_1, … (optional: maximize, seed)")
    ap.add_argument("out", type=Path, help="results JSON")
    ap.add_argument("--mode", choices=("max", "min"), default="max", help="when the file has no 'maximize'")
    ap.add_argument("--seed", type=int, default=0, help="when the file has no 'seed'")
    ap.add_argument("--budget", type=float, default=1.0, help="× a full search's epochs (resume counting), (0, 1]")
    ap.add_argument("--max-jobs-per-config", type=int, default=30)
    ap.add_argument("--eta", type=int, default=3)
    args = ap.parse_args()
    sets, maximize, seeds = load_sets(args.curves)
    results = []
    for i, curves in enumerate(sets):
        mode = ("max" if maximize[i] else "min") if maximize is not None else args.mode
        seed = int(seeds[i]) if seeds is not None else args.seed
        r = run_dehb(curves, mode=mode, seed=seed, budget=args.budget, max_jobs_per_config=args.max_jobs_per_config,
                     eta=args.eta)  # fmt: skip
        r.update(set=i, mode=mode, seed=seed)
        results.append(r)
        print(f"DEHB set {i + 1}/{len(sets)}: {len(r['jobs'])} jobs, {r['epochs_resume']} epochs (resume), "
              f"{r['epochs_scratch']} (from scratch), {r['wall_s']:.1f} s", file=sys.stderr, flush=True)  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": {"sets": len(sets), "budget": args.budget, "eta": args.eta,
                                             "max_jobs_per_config": args.max_jobs_per_config},
                                    "results": results}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
