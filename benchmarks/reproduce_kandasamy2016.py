"""Reproduce Kandasamy, Dasarathy, Schneider, Póczos (2016), *The Multi-fidelity Multi-armed Bandit*, §6 and
App. C: MF-UCB against UCB on the four synthetic problems, regret (Eq. 1) against capital Λ.

Problems (App. C; the appendix's "M = 500, M = 3" means K = 500, M = 3):

===== ========== ====== === ======================== ========================= ===============================
id    rewards    K      M   ζ                        λ                         true means µ_k^(M)
===== ========== ====== === ======================== ========================= ===============================
1     Gaussian   500    3   (0.2, 0.1, 0)            (1, 10, 1000)             grid in (0, 1), σ = 0.2
1b    Gaussian   500    3   (0.2, 0.1, 0)            (1, 10, 100)              same (the cost question below)
2     Gaussian   500    4   (1, 0.5, 0.2, 0)         (1, 5, 20, 50)            N(0, 1) (new draw per seed), σ = 1
3     Bernoulli  200    2   (0.2, 0)                 (1, 10)                   grid in (0.1, 0.9)
4     Bernoulli  1000   5   (0.5, 0.2, 0.1, 0.05, 0) (1, 3, 10, 30, 100)       grid in (0.1, 0.9)
===== ========== ====== === ======================== ========================= ===============================

Lower-fidelity means are drawn uniformly in ``µ_k^(M) ± ζ(m)`` (new draw per seed). For the Gaussian
problems the optimal arm's lower-fidelity means are "modified to be lower than the corresponding mean of a
suboptimal arm": we set them to ``µ⋆ − ζ(m)``, the lowest admissible value (App. C does not say by how much). Bernoulli
means outside [0, 1] are "truncated": clipped (which keeps the ζ band). Grids: ``linspace(0, 1, K+2)[1:-1]``
and ``linspace(0.1, 0.9, K)``. Policies: MF-UCB (``mf-ucb``) and UCB at the highest fidelity (``ucb1``),
both with ρ = 2 as in the paper (UCB1's own bonus is ρ = 4) and ψ(ε) = ε²/(2σ²) (σ = ½ for Bernoulli).

**The (1, 10, 1000) question.** App. C prints λ = (1, 10, 1000) for problem 1; with every other problem's
top cost ≤ 100 and a 10× ladder below, (1, 10, 100) may be meant. The figure titles that state the costs
are not in the text we have, so we cannot check. The paper wins: problem 1 uses (1, 10, 1000) as written,
and problem 1b runs (1, 10, 100) so that the conclusion is shown not to hinge on it. Both are run to the
same number of top-fidelity plays ``n_Λ = Λ/λ(M)``.

The paper gives no capital range, number of repetitions or error bars (only the figures), and no numbers:
its claims are qualitative — MF-UCB's regret is below UCB's on all four problems, its gradient (slope in
log Λ) is smaller, and the clearly bad arms are played mostly at the low fidelities. We report, per
problem, the regret of both at ``n_Λ = 2·10⁴`` top-fidelity plays (``--quick``: 2·10³) averaged over seeds
(mean ± standard error), the ratio MF-UCB/UCB, both slopes over the upper half of the log-capital range,
the share of the plays (and of the capital) spent on arms of home fidelity ⟦k⟧ < M (Theorem 2's sets
𝒦^(1..M−1), :func:`mf_sched.sim.bounds.mfucb_analysis`) that went to fidelities below M, Theorem 2's predicted
ratio ``C_MF/C_UCB`` (constants hidden) and Theorem 4's lower-bound coefficient. Each run goes to the top
capital once and :func:`mf_sched.sim.simulate.regret_curve` reads the regret at every smaller capital
(both policies are anytime).

    python -m benchmarks.reproduce_kandasamy2016 --quick            # ~1–2 min
    python -m benchmarks.reproduce_kandasamy2016 --seeds 10 --jobs 2  # the full run (tens of minutes)

Writes ``benchmarks/results/kandasamy2016.json`` (``_quick`` in quick mode) and a PNG next to it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import RESULTS, meta, pyplot, run_jobs, save_figure, seeds, write_json
from benchmarks._regret import band, log_slope, mean_se
from mf_sched import FidelityLadder, Instance, policy_for, run_policy
from mf_sched.sim.bounds import kandasamy_regret_lower_bound, mfucb_analysis
from mf_sched.sim.simulate import regret_curve

N_TOP_FULL, N_TOP_QUICK = 20_000, 2_000
PROBLEMS: dict[str, dict[str, Any]] = {
    "1": {"kind": "gaussian", "K": 500, "zeta": [0.2, 0.1, 0.0], "costs": [1, 10, 1000], "sigma": 0.2, "top": "grid01"},
    "1b": {"kind": "gaussian", "K": 500, "zeta": [0.2, 0.1, 0.0], "costs": [1, 10, 100], "sigma": 0.2, "top": "grid01"},
    "2": {
        "kind": "gaussian",
        "K": 500,
        "zeta": [1.0, 0.5, 0.2, 0.0],
        "costs": [1, 5, 20, 50],
        "sigma": 1.0,
        "top": "normal",
    },
    "3": {"kind": "bernoulli", "K": 200, "zeta": [0.2, 0.0], "costs": [1, 10], "top": "grid19"},
    "4": {
        "kind": "bernoulli",
        "K": 1000,
        "zeta": [0.5, 0.2, 0.1, 0.05, 0.0],
        "costs": [1, 3, 10, 30, 100],
        "top": "grid19",
    },
}
PLAYS_PANEL = "1"  # the paper's last two panels: plays per arm and fidelity on problem 1


def make_instance(pid: str, rng: np.random.Generator) -> Instance:
    """Problem ``pid`` of App. C, with its random parts drawn from ``rng``."""
    cfg = PROBLEMS[pid]
    K, z = cfg["K"], np.asarray(cfg["zeta"], dtype=float)
    if cfg["top"] == "grid01":
        top = np.linspace(0.0, 1.0, K + 2)[1:-1]
    elif cfg["top"] == "grid19":
        top = np.linspace(0.1, 0.9, K)
    else:
        top = rng.standard_normal(K)
    means = top[:, None] + rng.uniform(-1.0, 1.0, (K, z.size)) * z[None, :]
    means[:, -1] = top
    if cfg["kind"] == "gaussian":
        best = int(np.argmax(top))
        means[best, :-1] = top[best] - z[:-1]  # the optimal arm looks bad at the low fidelities
        noise: dict[str, Any] = {"kind": "gaussian", "sigma": cfg["sigma"]}
    else:
        means = np.clip(means, 0.0, 1.0)
        noise = {"kind": "bernoulli"}
    return Instance(means, FidelityLadder(cfg["costs"], z.tolist()), noise, name=f"kandasamy2016-{pid}")


def grid(pid: str, capital: float, points: int) -> np.ndarray:
    K, lam = PROBLEMS[pid]["K"], PROBLEMS[pid]["costs"]
    return np.geomspace(2.0 * K * lam[0], capital, points)


def one(job: tuple[str, int, int, float, float, int]) -> dict[str, Any]:
    """Both policies on one seed of one problem: regret curves, shares, counts."""
    pid, rep, root, capital, rho, points = job
    rng, pol_seed, obs_seed = seeds(root, list(PROBLEMS).index(pid), rep)
    inst = make_instance(pid, rng)
    M = inst.M
    sigma = inst.policy_noise.sigma
    caps = grid(pid, capital, points)
    out: dict[str, Any] = {"pid": pid, "rep": rep}
    counts = {}
    for name, params in (("mf-ucb", {"rho": rho}), ("ucb1", {"rho": rho})):
        t0 = time.perf_counter()
        pol = policy_for(name, inst, budget=capital, seed=pol_seed, **params)
        r = run_policy(pol, inst, seed=obs_seed, trace=True)
        curve = regret_curve(inst, *r.trace, caps)
        out[name] = {
            "regret": curve["kandasamy"],
            "regret_wang_final": r.regret_wang,
            "pulls": r.n_pulls,
            "pulls_per_fidelity": r.pulls_per_fidelity,
            "seconds": time.perf_counter() - t0,
        }
        counts[name] = pol.counts
    a = mfucb_analysis(inst.means, inst.ladder.costs, inst.ladder.zeta, sigma, rho=rho)
    bad = (~a.optimal) & (a.home < M - 1)
    n = counts["mf-ucb"][bad]
    lam = np.asarray(inst.ladder.costs, dtype=float)
    out["bad"] = {
        "n_arms": int(bad.sum()),
        "plays_below_M": float(n[:, :-1].sum() / max(n.sum(), 1)),
        "cost_below_M": float((n[:, :-1] * lam[:-1]).sum() / max((n * lam).sum(), 1e-300)),
        "plays_at_lowest": float(n[:, 0].sum() / max(n.sum(), 1)),
        "never_at_M": float(np.mean(n[:, -1] == 0)) if n.size else float("nan"),
    }
    out["theory_ratio"] = a.c_mfucb / a.c_ucb
    kind = inst.noise.kind
    lb = kandasamy_regret_lower_bound(inst.means, inst.ladder.costs, inst.ladder.zeta, kind=kind, sigma=sigma)
    out["lower_bound_at_capital"] = lb.at(capital)
    if pid == PLAYS_PANEL:
        out["counts_mf"] = counts["mf-ucb"]
        out["counts_ucb"] = counts["ucb1"][:, -1]
        out["order"] = np.argsort(inst.true_means, kind="stable")
    return out


def summarise(pid: str, runs: list[dict[str, Any]], capital: float, points: int) -> dict[str, Any]:
    caps = grid(pid, capital, points)
    res: dict[str, Any] = {"problem": pid, **PROBLEMS[pid], "capital": capital, "capitals": caps, "seeds": len(runs)}
    for name in ("mf-ucb", "ucb1"):
        R = np.array([r[name]["regret"] for r in runs])
        m, se = mean_se(R)
        res[name] = {
            "regret_mean": m,
            "regret_se": se,
            "final_mean": float(m[-1]),
            "final_se": float(se[-1]),
            "slope": log_slope(caps, m),
            "pulls_mean": float(np.mean([r[name]["pulls"] for r in runs])),
            "pulls_per_fidelity_mean": np.mean([r[name]["pulls_per_fidelity"] for r in runs], axis=0),
            "seconds_mean": float(np.mean([r[name]["seconds"] for r in runs])),
        }
    per_seed = np.array([r["mf-ucb"]["regret"][-1] / r["ucb1"]["regret"][-1] for r in runs])
    res["ratio"] = res["mf-ucb"]["final_mean"] / res["ucb1"]["final_mean"]
    res["ratio_per_seed"] = per_seed
    mid = len(caps) // 2
    res["ratio_mid_capital"] = float(res["mf-ucb"]["regret_mean"][mid] / res["ucb1"]["regret_mean"][mid])
    res["mid_capital"] = float(caps[mid])
    res["bad_arms"] = {k: float(np.nanmean([r["bad"][k] for r in runs])) for k in runs[0]["bad"]}
    res["theory_ratio"] = float(np.mean([r["theory_ratio"] for r in runs]))
    res["lower_bound_at_capital"] = float(np.mean([r["lower_bound_at_capital"] for r in runs]))
    res["below_ucb_at_every_capital"] = bool(np.all(res["mf-ucb"]["regret_mean"] < res["ucb1"]["regret_mean"]))
    if pid == PLAYS_PANEL:
        order = runs[0]["order"]
        res["plays_mf"] = np.mean([r["counts_mf"] for r in runs], axis=0)[order]
        res["plays_ucb"] = np.mean([r["counts_ucb"] for r in runs], axis=0)[order]
    return res


def plot(results: list[dict[str, Any]], path: Any) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(2, 4, figsize=(19, 8.5))
    flat = axes.ravel()
    for ax, res in zip(flat, results):
        band(ax, res["capitals"], res["mf-ucb"]["regret_mean"], res["mf-ucb"]["regret_se"], "MF-UCB")
        band(ax, res["capitals"], res["ucb1"]["regret_mean"], res["ucb1"]["regret_se"], "UCB")
        ax.set_xscale("log")
        ax.set_title(f"({res['problem']}) K={res['K']}, M={len(res['costs'])}, λ={tuple(res['costs'])}", fontsize=9)
        ax.set_xlabel("capital Λ")
        ax.set_ylabel("R(Λ) (Eq. 1)")
        ax.legend(fontsize=8)
    used = len(results)
    p1 = next((r for r in results if r["problem"] == PLAYS_PANEL), None)
    if p1 is not None and used + 2 <= len(flat):
        x = np.arange(p1["K"])
        flat[used].bar(x, p1["plays_ucb"], width=1.0, color="C1")
        flat[used].set_title(f"UCB: plays per arm at fidelity M, problem {PLAYS_PANEL}", fontsize=9)
        ax = flat[used + 1]
        for m in range(p1["plays_mf"].shape[1]):
            ax.plot(x, np.maximum(p1["plays_mf"][:, m], 0.5), lw=0.8, label=f"MF-UCB, m={m + 1}")
        ax.plot(x, np.maximum(p1["plays_ucb"], 0.5), "k:", lw=0.8, label="UCB, m=M")
        ax.set_yscale("log")
        ax.set_title(f"plays per arm and fidelity, problem {PLAYS_PANEL} (0 shown as 0.5)", fontsize=9)
        ax.legend(fontsize=8)
        for a in (flat[used], ax):
            a.set_xlabel("arms, by increasing µ^(M)")
        used += 2
    if used < len(flat):
        ax = flat[used]
        ids = [r["problem"] for r in results]
        ax.bar(ids, [r["bad_arms"]["plays_below_M"] for r in results], color="C2")
        ax.set_ylim(0, 1.05)
        ax.set_title("MF-UCB: share of plays of arms with ⟦k⟧ < M made below M", fontsize=9)
        used += 1
    for ax in flat[used:]:
        ax.axis("off")
    save_figure(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"n_Λ = {N_TOP_QUICK} top plays, 2 seeds")
    ap.add_argument("--seeds", type=int, default=None, help="repetitions per problem (default 10; quick 2)")
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    ap.add_argument("--n-top", type=int, default=None, help="capital = n_top · λ(M) (default 20000; quick 1000)")
    ap.add_argument("--rho", type=float, default=2.0, help="ρ of both policies (the paper: 2)")
    ap.add_argument("--points", type=int, default=40, help="capitals on the log grid")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--replot", default=None, metavar="JSON", help="only redraw the PNG of a saved result")
    args = ap.parse_args(argv)
    if args.replot:
        saved = json.loads(Path(args.replot).read_text())["problems"]
        arrays = ("capitals", "regret_mean", "regret_se", "plays_mf", "plays_ucb")
        for res in saved:
            for d in (res, res["mf-ucb"], res["ucb1"]):
                d.update({k: np.asarray(v) for k, v in d.items() if k in arrays})
        plot(saved, Path(args.replot).with_suffix(".png"))
        return 0
    n_seeds = args.seeds or (2 if args.quick else 10)
    n_top = args.n_top or (N_TOP_QUICK if args.quick else N_TOP_FULL)
    capital = {pid: float(n_top * PROBLEMS[pid]["costs"][-1]) for pid in args.problems}
    jobs = [
        (pid, rep, args.seed, capital[pid], args.rho, args.points) for pid in args.problems for rep in range(n_seeds)
    ]
    # the longest jobs first, so that the processes finish together
    jobs.sort(key=lambda j: -PROBLEMS[j[0]]["K"] * len(PROBLEMS[j[0]]["costs"]))
    t0 = time.perf_counter()
    runs = run_jobs(one, jobs, args.jobs, "kandasamy2016")
    results = [summarise(pid, [r for r in runs if r["pid"] == pid], capital[pid], args.points) for pid in args.problems]
    wall = time.perf_counter() - t0

    print(f"\nMF-UCB vs UCB (ρ = {args.rho}), regret of Eq. 1 at Λ = {n_top} λ(M); mean ± s.e. over {n_seeds} seeds")
    print("paper (Fig. 2, no numbers in the text): MF-UCB below UCB on all four problems, smaller gradient,")
    print("clearly bad arms played mostly at low fidelities\n")
    head = (
        f"{'pb':<4}{'Λ':>10}{'R MF-UCB':>18}{'R UCB':>18}{'ratio':>7}{'seeds':>13}{'mid':>6}"
        f"{'slope MF':>10}{'slope UCB':>10}{'Thm2':>6}{'bad<M':>7}{'bad@1':>7}{'never M':>8}{'pulls MF':>10}"
    )
    print(head)
    for r in results:
        mf, ucb = r["mf-ucb"], r["ucb1"]
        print(
            f"{r['problem']:<4}{r['capital']:>10.3g}{mf['final_mean']:>11.4g} ± {mf['final_se']:<5.2g}"
            f"{ucb['final_mean']:>11.4g} ± {ucb['final_se']:<5.2g}{r['ratio']:>7.3f}"
            f"{r['ratio_per_seed'].min():>6.2f}–{r['ratio_per_seed'].max():<5.2f}{r['ratio_mid_capital']:>7.2f}"
            f"{mf['slope']:>10.4g}{ucb['slope']:>10.4g}{r['theory_ratio']:>6.2f}"
            f"{r['bad_arms']['plays_below_M']:>7.3f}{r['bad_arms']['plays_at_lowest']:>7.3f}"
            f"{r['bad_arms']['never_at_M']:>8.2f}{mf['pulls_mean']:>10.3g}"
        )
    print(
        "\nratio = mean R(MF-UCB) / mean R(UCB) at Λ; seeds = per-seed range; mid = ratio at the middle capital of "
        "the grid;\nslope = dR/dlog Λ over the upper half; Thm2 = C_MF/C_UCB of Theorem 2 (constants hidden); "
        "bad<M = share of the\nplays of arms with home fidelity < M made below M (bad@1: at fidelity 1); never M = "
        f"share of those arms never played at M.\nWall time {wall:.0f} s."
    )
    suffix = "_quick" if args.quick else ""
    out = RESULTS / f"kandasamy2016{suffix}.json" if args.out is None else Path(args.out)
    write_json(
        out, {"meta": {**meta(args), "wall_seconds": wall, "n_top": n_top, "seeds": n_seeds}, "problems": results}
    )
    plot(results, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
