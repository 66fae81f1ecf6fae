"""Per-pull overhead of every finite-armed policy at K = 10, 1,000 and 100,000 arms (M = 5), with a time cap.

**Per-pull cells.** For each registered finite-armed policy (or those given with ``--policies``) and each
K, a fresh policy is driven pull by pull (``ask()`` then ``tell()``, the sequential path adapters use)
with Bernoulli rewards drawn in advance (arm means uniform in [0.2, 0.8], the same at every fidelity), and
every ask+tell pair is timed with ``perf_counter_ns``. We report

* the **median** pair time (the typical pull; the goal of issue 18 is ≤ 20 µs at K = 1,000 for every
  finite-armed policy except mf-grad/grad, ≤ 100 µs for those), and the **late median**, over the second
  half of the timed pairs (after the initial sweep of K·M pulls at most when ``pairs ≥ 2KM``: the goal is
  checked on the larger of the two),
* the **mean** pair time (amortised: includes the once-per-round work of round-based policies and the
  decision pulls of LUCB, whose rounds are two pulls, so its median mixes cheap and deciding pulls),
* both as **ratios** to a floor measured in the same process — a minimal policy that hands out
  round-robin pulls through the same base-class protocol — because these machines are noisy,
* the construction time of the policy (``build_ms``).

Every cell has a wall-clock cap (``--cap`` seconds, construction included): a cell that reaches it stops
and is reported as ``capped`` with the pairs it timed; a single call that hangs is interrupted at twice
the cap (``timeout``, POSIX only). The script never stalls on one cell.

**Completion runs** (``--completion``, on by default): ``iise`` and ``lucb-explore-c`` run to completion
(:func:`mf_sched.sim.simulate.run_policy`, sequential, one worker) on a K = 100,000 × M = 5 Gaussian instance
of Poiani et al. (2022)'s generator (:meth:`mf_sched.Instance.synthetic`, corrected; true means N(0, 1),
a best-arm gap of at least 0.5, noise σ = 0.1 so that most arms need only a few samples: the run measures
the policies' per-pull cost at scale, not a statistically hard problem), each under its own cap
(``--completion-cap``, default 120 s; goal of issue 18: ≤ 60 s). Wall and CPU time, pulls, cost and
correctness are reported (on shared machines the wall time includes waiting for a core).

Prints a table, writes JSON (``--out``) and a PNG next to it (median µs per cell, log scale, with the goal
lines; capped cells hatched).

    python -m benchmarks.overhead                                   # everything (~15 min on 2 busy cores)
    python -m benchmarks.overhead --policies ucb1 mf-ucb --arms 10 1000 --pairs 20000 --no-completion
"""

from __future__ import annotations

import argparse
import inspect
import signal
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import meta, pyplot, save_figure, write_json
from mf_sched import FidelityLadder, Instance, Policy, get_policy, list_policies, run_policy
from mf_sched._progress import Progress

LADDER = FidelityLadder(costs=[1, 3, 9, 27, 81], zeta=[0.2, 0.1, 0.05, 0.02, 0.0])
#: per-pull goals of issue 18 at K = 1,000 (µs, median ask+tell)
GOAL_US = 20.0
GOAL_GRAD_US = 100.0
GRAD_POLICIES = ("mf-grad", "grad")
COMPLETION_POLICIES = ("iise", "lucb-explore-c")
COMPLETION_GOAL_S = 60.0


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


class _CellTimeout(Exception):
    """A single call ran past the hard cap of its cell."""


#: the race policy as the adapters run it: with the shipped curve-aware bound (not the ladder's ζ)
RACE_CURVE = "race-curve"


def _make(name: str, K: int, seed: int, means: np.ndarray | None = None) -> Policy:
    if name == "floor":
        return _Floor(K, LADDER)
    if name == RACE_CURVE:
        from mf_sched.racing import shipped_curve_bound

        fr = (np.asarray(LADDER.costs) / LADDER.costs[-1])[:-1].tolist()
        bound = shipped_curve_bound("unit").select(n_arms=K, alpha=0.05, tolerance=0.005, fractions=fr)
        return get_policy("race")(n_arms=K, ladder=LADDER, seed=seed, delta=0.05, race_bias=bound)
    cls = get_policy(name)
    kw: dict = {"seed": seed}
    if means is not None:  # required extras (e.g. the prior bounds of EXPLORE-A/B) from the simulated means
        kw.update(cls.example_params(Instance(np.tile(means[:, None], (1, LADDER.M)), LADDER, {"kind": "bernoulli"})))
    params = inspect.signature(cls.__init__).parameters
    if "delta" in params:
        kw["delta"] = 0.05
    if name in ("ucb1", "uniform") or cls.objective == "regret":
        kw["budget"] = 1e12
    return cls(n_arms=K, ladder=LADDER, **kw)


class _HardCap:
    """Raise :class:`_CellTimeout` after ``seconds`` of wall time (POSIX; a no-op elsewhere)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ok = hasattr(signal, "setitimer")

    def _fire(self, *_: object) -> None:
        raise _CellTimeout

    def __enter__(self) -> _HardCap:
        if self.ok:
            self._old = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ok:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)


def time_policy(name: str, K: int, pairs: int, cap_s: float = 30.0, seed: int = 0) -> dict:
    """Time up to ``pairs`` ask+tell pairs of ``name`` at ``K`` arms, for at most ``cap_s`` seconds."""
    rng = np.random.default_rng(seed)
    # arm means spread over [0.2, 0.8]; Bernoulli rewards in [0, 1]
    means = rng.uniform(0.2, 0.8, size=K)
    uniforms = rng.random(pairs + 1).tolist()
    times = np.zeros(pairs, dtype=np.int64)
    restarts = 0
    perf = time.perf_counter_ns
    i = 0
    status = "ok"
    t_start = perf()
    deadline = t_start + int(cap_s * 1e9)
    build_ns = 0
    try:
        with _HardCap(2.0 * cap_s):
            t0 = perf()
            policy = _make(name, K, seed, means)
            build_ns = perf() - t0
            while i < pairs:
                if perf() > deadline:
                    status = "capped"
                    break
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
    except _CellTimeout:
        status = "timeout"
    wall = (perf() - t_start) / 1e9
    t = times[:i]
    row = {
        "policy": name,
        "K": K,
        "M": LADDER.M,
        "pairs": int(i),
        "pairs_requested": pairs,
        "status": status,
        "cap_s": cap_s,
        "wall_s": wall,
        "build_ms": build_ns / 1e6,
        "median_us": float(np.median(t)) / 1e3 if i else None,
        # the second half of the timed pairs: past the initial sweep (K·M pulls at most) whenever pairs ≥ 2KM
        "median_late_us": float(np.median(t[i // 2 :])) / 1e3 if i >= 2 else None,
        "mean_us": float(t.mean()) / 1e3 if i else None,
        "p99_us": float(np.percentile(t, 99)) / 1e3 if i else None,
        "restarts": restarts,
        "note": "first sweep over the arms only" if 0 < i < K else "",
    }
    return row


def completion_instance(K: int = 100_000, seed: int = 0) -> Instance:
    """The K × 5 Gaussian instance of the completion runs (see the module docstring)."""
    return Instance.synthetic(
        K,
        LADDER.costs,
        offsets=[0.15, 0.07, 0.03, 0.01, 0.0],
        gamma=[0.1, 0.06, 0.04, 0.02, 0.0],  # ζ = offsets + γ/2 = (0.2, 0.1, 0.05, 0.02, 0), as LADDER
        sigma=0.1,
        min_gap=0.5,
        seed=seed,
    )


def run_to_completion(name: str, instance: Instance, cap_s: float, seed: int = 0) -> dict:
    """Run ``name`` on ``instance`` until it is done, under a wall-clock cap of ``cap_s`` seconds."""
    cls = get_policy(name)
    kw: dict = {"seed": seed, "noise": instance.policy_noise, "delta": 0.05}
    kw.update(cls.example_params(instance))
    row: dict = {"policy": name, "K": instance.K, "M": instance.M, "cap_s": cap_s, "goal_s": COMPLETION_GOAL_S}
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        with _HardCap(cap_s):
            policy = cls(n_arms=instance.K, ladder=instance.ladder, **kw)
            build = time.perf_counter() - t0
            res = run_policy(policy, instance, seed=seed, workers=1)
        row.update(
            status="done" if res.stop_reason == "done" else res.stop_reason,
            wall_s=time.perf_counter() - t0,
            cpu_s=time.process_time() - c0,
            build_s=build,
            pulls=int(res.n_pulls),
            cost=float(res.cost),
            correct=bool(res.correct),
            us_per_pull=(time.perf_counter() - t0) / max(res.n_pulls, 1) * 1e6,
        )
    except _CellTimeout:
        row.update(status="capped", wall_s=time.perf_counter() - t0)
    return row


def _goal(name: str) -> float:
    return GOAL_GRAD_US if name in GRAD_POLICIES else GOAL_US


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _plot(rows: list[dict], completion: list[dict], arms: list[int], out: Path) -> None:
    plt = pyplot()
    if plt is None:
        return None
    pols = [n for n in dict.fromkeys(r["policy"] for r in rows)]
    ncols = 2 if completion else 1
    fig, axes = plt.subplots(
        1,
        ncols,
        figsize=(11 if completion else 9, 4.5),
        squeeze=False,
        gridspec_kw={"width_ratios": [4, 1] if completion else [1]},
    )
    ax = axes[0, 0]
    width = 0.8 / len(arms)
    for j, K in enumerate(arms):
        cells = [next((r for r in rows if r["policy"] == p and r["K"] == K), None) for p in pols]
        vals = [c["median_us"] if c and c["median_us"] is not None else np.nan for c in cells]
        bars = ax.bar(np.arange(len(pols)) + j * width, vals, width, label=f"K={K:,}")
        for b, c in zip(bars, cells):
            if c and c["status"] != "ok":
                b.set_hatch("//")
    ax.axhline(GOAL_US, color="k", ls="--", lw=1, label=f"{GOAL_US:g} µs goal (K=1,000)")
    ax.axhline(GOAL_GRAD_US, color="grey", ls=":", lw=1, label=f"{GOAL_GRAD_US:g} µs goal (grad, mf-grad)")
    ax.set_xticks(np.arange(len(pols)) + width * (len(arms) - 1) / 2, pols, rotation=40, ha="right")
    ax.set_ylabel("median ask+tell (µs)")
    ax.set_yscale("log")
    ax.set_title("per-pull overhead (hatched: capped)")
    ax.legend(fontsize=8)
    if completion:
        ax2 = axes[0, 1]
        names = [c["policy"] for c in completion]
        ax2.bar(
            names,
            [c["wall_s"] for c in completion],
            color=["C0" if c["status"] == "done" else "C3" for c in completion],
        )
        ax2.axhline(COMPLETION_GOAL_S, color="k", ls="--", lw=1)
        ax2.set_ylabel("wall time to completion (s)")
        ax2.set_title(f"K={completion[0]['K']:,} × M={completion[0]['M']}")
        ax2.tick_params(axis="x", rotation=30)
    save_figure(fig, out.with_suffix(".png"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", nargs="*", default=None, help="policy names (default: all finite-armed)")
    ap.add_argument("--arms", nargs="*", type=int, default=[10, 1000, 100_000])
    ap.add_argument("--pairs", type=int, default=20_000, help="ask+tell pairs timed per (policy, K)")
    ap.add_argument("--cap", type=float, default=20.0, help="wall-clock cap per (policy, K) cell, seconds")
    ap.add_argument(
        "--completion",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run iise and lucb-explore-c to completion at K = 100,000 × M = 5",
    )
    ap.add_argument("--completion-arms", type=int, default=100_000)
    ap.add_argument("--completion-cap", type=float, default=120.0, help="cap per completion run, seconds")
    ap.add_argument("--out", default="benchmarks/results/overhead.json")
    args = ap.parse_args(argv)
    registered = list_policies()  # imports every policy module now, not inside the first timed cell
    names = args.policies or [n for n, c in registered.items() if c.finite_armed] + [RACE_CURVE]
    rows = []
    # the floor is timed before and after the policies (the faster of the two is the reference: a warm
    # process), after a short warm-up run
    time_policy("floor", 10, min(args.pairs, 5000), args.cap)
    jobs = [("floor", K) for K in args.arms] + [(n, K) for n in names for K in args.arms]
    jobs += [("floor", K) for K in args.arms]
    with Progress(len(jobs), "overhead", True) as bar:
        for name, K in jobs:
            rows.append(time_policy(name, K, args.pairs, args.cap))
            bar.update()
    floors = [r for r in rows if r["policy"] == "floor"]
    floor = {K: min((r for r in floors if r["K"] == K), key=lambda r: r["median_us"]) for K in args.arms}
    rows = [r for r in rows if r["policy"] != "floor" or r is floor[r["K"]]]
    for r in rows:
        f = floor[r["K"]]
        ok = r["median_us"] is not None and f["median_us"]
        r["median_ratio_to_floor"] = r["median_us"] / f["median_us"] if ok else None
        r["mean_ratio_to_floor"] = r["mean_us"] / f["mean_us"] if ok else None
        r["goal_us"] = _goal(r["policy"]) if r["K"] == 1000 and r["policy"] != "floor" else None
        # the goal is checked on the larger of the median and the late median (after the initial sweep)
        typical = None if r["median_us"] is None else max(r["median_us"], r["median_late_us"])
        r["meets_goal"] = None if r["goal_us"] is None else bool(typical is not None and typical <= r["goal_us"])
    head = (
        f"{'policy':<16}{'K':>8}{'pairs':>7}{'median µs':>11}{'late med':>10}{'mean µs':>10}{'p99 µs':>10}"
        f"{'med/floor':>10}{'mean/floor':>11}{'build ms':>10}  status"
    )
    print(head)
    for r in rows:
        goal = (
            ""
            if r["meets_goal"] is None
            else ("  goal met" if r["meets_goal"] else f"  GOAL MISSED (≤ {r['goal_us']:g} µs)")
        )
        print(
            f"{r['policy']:<16}{r['K']:>8}{r['pairs']:>7}{_fmt(r['median_us'], '11.2f')}"
            f"{_fmt(r['median_late_us'], '10.2f')}{_fmt(r['mean_us'], '10.2f')}"
            f"{_fmt(r['p99_us'], '10.1f')}{_fmt(r['median_ratio_to_floor'], '10.2f')}"
            f"{_fmt(r['mean_ratio_to_floor'], '11.2f')}"
            f"{r['build_ms']:>10.1f}  {r['status']}{goal}  {r['note']}"
        )
    completion: list[dict] = []
    if args.completion:
        inst = completion_instance(args.completion_arms)
        with Progress(len(COMPLETION_POLICIES), "completion", True) as bar:
            for name in COMPLETION_POLICIES:
                completion.append(run_to_completion(name, inst, args.completion_cap))
                bar.update()
        print(f"\ncompletion runs, K = {inst.K:,} × M = {inst.M} (goal ≤ {COMPLETION_GOAL_S:g} s)")
        for c in completion:
            extra = (
                f"cpu {c['cpu_s']:.1f} s  pulls {c['pulls']:,}  cost {c['cost']:.4g}  correct {c['correct']}  "
                f"{c['us_per_pull']:.1f} µs/pull (wall)"
                if c["status"] != "capped"
                else f"not finished within the {c['cap_s']:g} s cap"
            )
            print(f"{c['policy']:<16}{c['wall_s']:>9.1f} s  {c['status']:<8} {extra}")
    out = Path(args.out)
    goals = {"default": GOAL_US, **{p: GOAL_GRAD_US for p in GRAD_POLICIES}}
    info = meta(ladder=LADDER.to_dict(), pairs=args.pairs, cap_s=args.cap, goals_us=goals)
    write_json(out, {"meta": info, "rows": rows, "completion": completion})
    _plot(rows, completion, args.arms, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
