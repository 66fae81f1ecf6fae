"""Per-pull overhead of the policies: time of one ask + tell, at K = 10, 100, 1,000 and 100,000 arms, M = 5.

For each registered finite-armed policy (or those given with --policies) and each K, a fresh policy is
driven pull by pull (``ask()`` then ``tell()``, the sequential path adapters use) with rewards drawn in
advance, and every ask+tell pair is timed with ``perf_counter_ns``. We report

* the **median** pair time (the typical pull; what the < 20 µs goal of the foundation issue is about),
* the **mean** pair time (amortised: includes the vectorised end-of-round work, O(K) once per round),
* both as **ratios** to a floor measured in the same process — a minimal policy subclass that hands out
  round-robin pulls through the same base-class protocol — because these machines are noisy.

Prints a table, writes JSON (and a PNG bar chart when matplotlib is installed).

    python benchmarks/overhead.py                      # all finite-armed policies
    python benchmarks/overhead.py --policies se sh --arms 10 1000 --pairs 20000
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from mf_sched import FidelityLadder, Instance, Policy, get_policy, list_policies
from mf_sched._progress import Progress

LADDER = FidelityLadder(costs=[1, 3, 9, 27, 81], zeta=[0.2, 0.1, 0.05, 0.02, 0.0])


class _Floor(Policy):
    """Round-robin through the base protocol: the cost of the ask/tell machinery itself."""

    name = "floor"
    paper = "benchmark floor"

    def __init__(self, n_arms: int, ladder: FidelityLadder, **kw: object) -> None:
        super().__init__(n_arms, ladder)
        self._i = 0

    def _propose(self) -> tuple[int, int]:
        return self._i % self.n_arms, self.ladder.top

    def _on_issue(self, arm: int, fidelity: int) -> None:
        self._i += 1

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        pass

    def _is_done(self) -> bool:
        return False


def _make(name: str, K: int, seed: int, means: np.ndarray | None = None) -> Policy:
    if name == "floor":
        return _Floor(K, LADDER)
    cls = get_policy(name)
    kw: dict = {"seed": seed}
    if means is not None:  # required extras (e.g. the prior bounds of EXPLORE-A/B) from the simulated means
        kw.update(cls.example_params(Instance(np.tile(means[:, None], (1, LADDER.M)), LADDER, {"kind": "bernoulli"})))
    import inspect

    params = inspect.signature(cls.__init__).parameters
    if "delta" in params:
        kw["delta"] = 0.05
    if name in ("ucb1", "uniform") or cls.objective == "regret":
        kw["budget"] = 1e12
    return cls(n_arms=K, ladder=LADDER, **kw)


def time_policy(name: str, K: int, pairs: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    # arm means spread over [0.2, 0.8]; Bernoulli-like rewards in [0, 1]
    means = rng.uniform(0.2, 0.8, size=K)
    uniforms = rng.random(pairs + 1).tolist()
    policy = _make(name, K, seed, means)
    times = np.empty(pairs, dtype=np.int64)
    restarts = 0
    perf = time.perf_counter_ns
    i = 0
    while i < pairs:
        t0 = perf()
        p = policy.ask()
        if p is None:
            if policy.done:
                policy = _make(name, K, seed + restarts + 1, means)
                restarts += 1
                continue
            raise RuntimeError(f"{name} waits with one worker: protocol violation")
        policy.tell(p, 1.0 if uniforms[i] < means[p.arm] else 0.0)
        times[i] = perf() - t0
        i += 1
    return {
        "policy": name,
        "K": K,
        "pairs": pairs,
        "median_us": float(np.median(times)) / 1e3,
        "mean_us": float(times.mean()) / 1e3,
        "p99_us": float(np.percentile(times, 99)) / 1e3,
        "restarts": restarts,
        "note": "pairs < K: first sweep over the arms only" if pairs < K else "",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", nargs="*", default=None, help="policy names (default: all finite-armed)")
    ap.add_argument("--arms", nargs="*", type=int, default=[10, 100, 1000, 100_000])
    ap.add_argument("--pairs", type=int, default=30_000, help="ask+tell pairs timed per (policy, K)")
    ap.add_argument("--out", default="benchmarks/results/overhead.json")
    args = ap.parse_args(argv)
    names = args.policies or [n for n, c in list_policies().items() if c.finite_armed]
    rows = []
    jobs = [("floor", K) for K in args.arms] + [(n, K) for n in names for K in args.arms]
    with Progress(len(jobs), "overhead", True) as bar:
        for name, K in jobs:
            rows.append(time_policy(name, K, args.pairs))
            bar.update()
    floor = {r["K"]: r for r in rows if r["policy"] == "floor"}
    for r in rows:
        f = floor[r["K"]]
        r["median_ratio_to_floor"] = r["median_us"] / f["median_us"]
        r["mean_ratio_to_floor"] = r["mean_us"] / f["mean_us"]
    print(f"{'policy':<16}{'K':>8}{'median µs':>11}{'mean µs':>10}{'p99 µs':>10}{'median/floor':>14}{'mean/floor':>12}")
    for r in rows:
        print(
            f"{r['policy']:<16}{r['K']:>8}{r['median_us']:>11.2f}{r['mean_us']:>10.2f}{r['p99_us']:>10.1f}"
            f"{r['median_ratio_to_floor']:>14.2f}{r['mean_ratio_to_floor']:>12.2f}  {r['note']}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
        "ladder": LADDER.to_dict(),
        "pairs": args.pairs,
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {out}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 0
    fig, ax = plt.subplots(figsize=(8, 4))
    pols = [n for n in dict.fromkeys(r["policy"] for r in rows)]
    width = 0.8 / len(args.arms)
    for j, K in enumerate(args.arms):
        vals = [next(r["median_us"] for r in rows if r["policy"] == p and r["K"] == K) for p in pols]
        ax.bar(np.arange(len(pols)) + j * width, vals, width, label=f"K={K}")
    ax.axhline(20, color="k", ls="--", lw=1, label="20 µs goal")
    ax.set_xticks(np.arange(len(pols)) + width * (len(args.arms) - 1) / 2, pols, rotation=30)
    ax.set_ylabel("median ask+tell (µs)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)
    print(f"wrote {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
