"""Small budgets: is racing's answer better than ASHA's, and than training a few candidates fully, when the study
is stopped after a few full trainings' worth of epochs — paired, on learning curves the bound never saw?

Protocol. Every study is the core ask/tell policy :class:`mf_sched.racing.policy.Race` driven directly (one worker,
resumable runs: a pull costs the epochs beyond what the configuration has trained), exactly as
:mod:`benchmarks.earned` drives it, on the ``K`` configurations and observed curves of
:func:`benchmarks.anytime.draw` (the same draws; LCBench and TaskSet with tasks held out in 5 groups, DeepOBS and
AlgoPerf with the whole source held out, and the new kinds of tasks with the shipped bound). Rungs at epochs 1, 3,
9 and 27 of 27. Each method is scored on its *own* answer at every budget (a fraction of a full search,
``K × 27`` epochs): regret = the best true final value of the ``K`` − the true final value of the answer (a random
configuration before any answer).

Methods, all on the *same* start order (the race's seeded random permutation of the ``K`` configurations):

- ``race``: ``Race()`` as shipped — the anytime schedule with ASHA's promotions by Algorithm 2 of Li et al. 2020
  (*A System for Massively Parallel Hyperparameter Tuning*, MLSys): a run at rung ``m`` goes on when it is among
  the best ``⌊n_m/η⌋`` values recorded there;
- ``race, best goes on at once (before)``: the same with ``max(1, ⌊n_m/η⌋)``, the schedule before this benchmark:
  the best run at a rung goes on before ``η`` values are recorded there, so the first configuration is trained to
  the top at once (an ablation, measured separately);
- ``ASHA``: Algorithm 2 written out directly (promote the best paused run at the highest rung where it is among the
  best ``⌊n_m/η⌋``, a tie at the cut included, else start the next configuration; η = 3), answering with the best
  latest value (Ray Tune's ``scope="last"``); it ends when every configuration has started and nothing is
  promotable;
- ``train fully``: the configurations trained to the top one after the other in the start order, answering with
  the best final value observed so far (what a user without a scheduler does).

Paired counts: for each (study, budget), whether the race's answer has a lower, equal or higher regret than the
peer's on the same draw; the goal of the issue this answers is "better at least 1.5 times as often as worse".

    python -m benchmarks.small_budget --quick     # 2 tasks per source, 2 seeds, K = 24 (a minute)
    python -m benchmarks.small_budget             # every task, 5 seeds, K = 8, 24, 64 (minutes)
    python -m benchmarks.small_budget --publish   # also docs/measured/small_budget.json, the table in
                                                  # docs/racing.md and the figure docs/racing_small_budget.png

Prints one table (per family and ``K``: median regret per method and budget, and the race's wins : losses against
each peer), writes ``benchmarks/results/small_budget.json`` (means too) and ``small_budget.png`` (median regret
against epochs, per family, ``K = 24``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import meta, put_table_after, pyplot, run_jobs, save_figure, write_json
from benchmarks.anytime import SOURCES, WITHIN, T, draw, held_out, load_or_say
from benchmarks.earned import ALPHA, EPOCHS, FRACTIONS, NEW_KINDS, ROOT, TOLERANCE, held_out_bound, new_kinds_tasks

BUDGETS = (0.05, 0.1, 0.2, 0.3, 0.5)
TABLE_BUDGETS = (0.1, 0.3)  # the docs' table
RACE, BEFORE, ASHA, FULL = "race", "race, best goes on at once (before)", "ASHA", "train fully"
METHODS = (RACE, BEFORE, ASHA, FULL)
PEERS = (BEFORE, ASHA, FULL)
ETA = 3


def race_trace(obs: np.ndarray, bound: Any, seed: int, keep_one: bool) -> tuple[list, np.ndarray, int, float]:
    """Race the maximised curves ``obs`` to the end; returns ``(trace, start order, final answer, epochs)`` with
    ``trace`` the ``(epochs spent, answer)`` after every result."""
    from mf_sched.ladder import FidelityLadder
    from mf_sched.racing.policy import Race

    class _Before(Race):
        _keep_one = True

    K = obs.shape[0]
    ladder = FidelityLadder(costs=list(EPOCHS), zeta=[0.3, 0.2, 0.1, 0.0], resources=list(EPOCHS))
    cls = _Before if keep_one else Race
    p = cls(n_arms=K, ladder=ladder, race_bias=bound, noise={"kind": "subgaussian", "sigma": 0.01}, seed=seed)
    reached = [-1] * K
    epochs, trace = 0, []
    cap = 10 * K * len(EPOCHS)
    while not p.done and len(trace) < cap:
        pull = p.ask()
        if pull is None:
            break
        a, m = pull.arm, pull.fidelity
        epochs += max(0, EPOCHS[m] - (EPOCHS[reached[a]] if reached[a] >= 0 else 0))
        reached[a] = max(reached[a], m)
        p.tell(pull, float(obs[a, EPOCHS[m] - 1]))
        key = p.engine.answer()[0]
        trace.append((epochs, -1 if key is None else int(key)))
    rec = p.recommendation()
    return trace, p._start_order.copy(), -1 if rec.arm is None else int(rec.arm), epochs


def asha_trace(obs: np.ndarray, order: np.ndarray, eta: int = ETA) -> list[tuple[int, int]]:
    """ASHA (Li et al. 2020, Algorithm 2) with one worker on the start order ``order``: the ``(epochs, answer)``
    after every result, the answer being the best latest value (ties: the higher rung, then the lower index)."""
    K, M = obs.shape[0], len(EPOCHS)
    vals: list[dict[int, float]] = [{} for _ in range(M)]
    promoted: list[set[int]] = [set() for _ in range(M)]
    reached = np.full(K, -1)
    last = np.full(K, -np.inf)
    nxt, epochs, trace = 0, 0, []
    while True:
        job = None
        for m in range(M - 2, -1, -1):
            k = len(vals[m]) // eta
            if k >= 1:  # the best k values; a tie at the cut goes on too (as the engine's promotions)
                cut = sorted(vals[m].values(), reverse=True)[k - 1]
                cand = sorted((a for a in vals[m] if vals[m][a] >= cut and a not in promoted[m]),
                              key=lambda a: (-vals[m][a], a))  # fmt: skip
                if cand:
                    job = (cand[0], m + 1)
                    promoted[m].add(cand[0])
                    break
        if job is None:
            if nxt >= K:
                return trace
            job = (int(order[nxt]), 0)
            nxt += 1
        a, m = job
        epochs += EPOCHS[m] - (EPOCHS[reached[a]] if reached[a] >= 0 else 0)
        reached[a] = m
        vals[m][a] = last[a] = float(obs[a, EPOCHS[m] - 1])
        trace.append((epochs, int(np.lexsort((np.arange(K), -reached, -last))[0])))


def full_trace(obs: np.ndarray, order: np.ndarray) -> list[tuple[int, int]]:
    """Train the configurations to the top one after the other in ``order``: ``(epochs, best final so far)``."""
    trace, best = [], -1
    for i, a in enumerate(order.tolist()):
        if best < 0 or obs[a, -1] > obs[best, -1]:
            best = int(a)
        trace.append(((i + 1) * T, best))
    return trace


def answer_at(trace: list[tuple[int, int]], budget: float) -> int:
    """The last answer given within ``budget`` epochs (−1: none yet)."""
    ans = -1
    for spent, a in trace:
        if spent > budget:
            break
        ans = a
    return ans


def job(a: tuple) -> list[dict]:
    """Every K of one (source, task, seed): ``a = (source, family, name, task, seed, Ks, bound)`` with ``bound``
    the held-out fit's dict (None: the shipped bound of the family)."""
    from mf_sched.racing import shipped_curve_bound
    from mf_sched.racing.curve_bound import CurveBoundFit

    source, family, name, task, seed, Ks, bound = a
    fit = shipped_curve_bound(family) if bound is None else CurveBoundFit.from_dict(bound)
    rows = []
    for K in Ks:
        true, obs = draw(task, source, name, seed, K)
        K_run = true.shape[0]
        tf = true[:, -1]
        full = int(np.argmax(obs[:, -1]))
        scale = abs(tf[full]) or 1.0
        b = fit.select(n_arms=K_run, alpha=ALPHA, tolerance=TOLERANCE, fractions=FRACTIONS)
        tr_race, order, end_race, ep_race = race_trace(obs, b, seed, keep_one=False)
        tr_before, order_b, end_before, ep_before = race_trace(obs, b, seed, keep_one=True)
        assert np.array_equal(order, order_b)
        traces = {RACE: tr_race, BEFORE: tr_before, ASHA: asha_trace(obs, order), FULL: full_trace(obs, order)}
        regret = {}
        for m, tr in traces.items():
            r = []
            for frac in BUDGETS:
                ans = answer_at(tr, frac * K_run * T)
                r.append(float(tf.max() - (tf[ans] if ans >= 0 else tf.mean())))
            regret[m] = r
        rows.append({
            "source": source, "family": family, "task": name, "seed": seed, "K": K, "K_run": K_run,
            "regret": regret,
            "end": {m: {"epochs_fraction": ep / (K_run * T), "within": bool(tf[e] >= tf[full] - WITHIN * scale)}
                    for m, e, ep in ((RACE, end_race, ep_race), (BEFORE, end_before, ep_before))},
        })  # fmt: skip
    return rows


# ------------------------------------------------------------------------------------------ summary
def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per (family, K) and per (family, source, K): studies; per method and budget the mean and median regret; per
    peer and budget the race's wins, ties and losses; per race variant the mean epochs fraction and the share within
    0.5% of the full search's answer when it ends by itself."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["family"], "all", r["K"]), []).append(r)
        groups.setdefault((r["family"], r["source"], r["K"]), []).append(r)
    out = {}
    for (fam, src, K), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1], kv[0][2])):
        reg = {m: np.array([r["regret"][m] for r in rs]) for m in METHODS}
        entry: dict[str, Any] = {"family": fam, "source": src, "K": K, "studies": len(rs), "budgets": list(BUDGETS)}
        entry["mean"] = {m: reg[m].mean(axis=0).tolist() for m in METHODS}
        entry["median"] = {m: np.median(reg[m], axis=0).tolist() for m in METHODS}
        entry["paired"] = {
            p: {"wins": (reg[RACE] < reg[p] - 1e-12).sum(axis=0).tolist(),
                "losses": (reg[RACE] > reg[p] + 1e-12).sum(axis=0).tolist()} for p in PEERS
        }  # fmt: skip
        entry["end"] = {
            m: {"epochs_fraction": float(np.mean([r["end"][m]["epochs_fraction"] for r in rs])),
                "within": float(np.mean([r["end"][m]["within"] for r in rs]))} for m in (RACE, BEFORE)
        }  # fmt: skip
        out[f"{fam}|{src}|{K}"] = entry
    return out


def _ratio(w: int, lo: int) -> str:
    return f"{w} : {lo}"


def render_table(summary: dict[str, dict]) -> str:
    """The docs' table (markdown): per family and ``K``, pooled over the held-out sources and the new kinds, at
    0.1× and 0.3× a full search: the race's wins : losses against each peer, and the median regret of each method
    (means are dominated by the few studies whose answer later diverges: the JSON holds both)."""
    idx = {b: BUDGETS.index(b) for b in TABLE_BUDGETS}
    lines = [
        "| family | K | studies | budget | race vs ASHA | race vs train fully | race vs before | median regret: "
        "race / ASHA / train fully / before |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in summary.values():
        if v["source"] != "all":
            continue
        name = "accuracy-like" if v["family"] == "unit" else "losses"
        for b, i in idx.items():
            pr = v["paired"]
            cells = [_ratio(pr[p]["wins"][i], pr[p]["losses"][i]) for p in (ASHA, FULL, BEFORE)]
            means = " / ".join(f"{v['median'][m][i]:.3g}" for m in (RACE, ASHA, FULL, BEFORE))
            lines.append(f"| {name} | {v['K']} | {v['studies']} | {b:g}× | {' | '.join(cells)} | {means} |")
    return "\n".join(lines)


def print_summary(summary: dict[str, dict]) -> None:
    print(render_table(summary))
    print("\nper source (K, budget: race wins : losses against ASHA / train fully / before):")
    for v in summary.values():
        if v["source"] == "all":
            continue
        pr = v["paired"]
        cells = "  ".join(
            f"{b:g}×: " + " / ".join(_ratio(pr[p]["wins"][i], pr[p]["losses"][i]) for p in (ASHA, FULL, BEFORE))
            for i, b in enumerate(BUDGETS)
        )
        end = v["end"]
        print(f"{v['source']:14s} K={v['K']:<3d} n={v['studies']:<4d} {cells}  | no budget: epochs "
              f"{end[RACE]['epochs_fraction']:.2f} (before {end[BEFORE]['epochs_fraction']:.2f}), within 0.5% "
              f"{end[RACE]['within']:.3f} (before {end[BEFORE]['within']:.3f})")  # fmt: skip


def plot(summary: dict[str, dict], path: Path, K: int = 24) -> None:
    """Median regret against the budget, per family, at ``K`` (medians: a few diverging answers dominate means)."""
    plt = pyplot()
    if plt is None:
        return
    fams = [v for v in summary.values() if v["source"] == "all" and v["K"] == K]
    fig, axes = plt.subplots(1, max(1, len(fams)), figsize=(5.5 * max(1, len(fams)), 4), squeeze=False)
    for ax, v in zip(axes[0], fams):
        for m in METHODS:
            ax.plot(v["budgets"], v["median"][m], marker="o", label=m)
        ax.set_xlabel("budget (fraction of a full search's epochs)")
        ax.set_ylabel("median regret (true final value)")
        ax.set_title(f"{'accuracy-like' if v['family'] == 'unit' else 'losses'}, K = {K} ({v['studies']} studies)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


PUBLISHED = ROOT / "docs" / "measured" / "small_budget.json"
MARK = "<!-- table: benchmarks.small_budget -->"
FIGURE = ROOT / "docs" / "racing_small_budget.png"


def publish(summary: dict[str, dict], meta_: dict, doc: Path) -> None:
    """Write the summary to :data:`PUBLISHED`, its table into ``doc`` after :data:`MARK` (replacing the table
    that follows it) and the figure to :data:`FIGURE`."""
    write_json(PUBLISHED, {"summary": summary, "meta": meta_})
    put_table_after(doc, MARK, render_table(summary))
    plot(summary, FIGURE)
    print(f"published {PUBLISHED}, the table in {doc} and {FIGURE}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 tasks per source, 2 seeds, K = 24")
    ap.add_argument("--sources", default=",".join(SOURCES) + "," + NEW_KINDS)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tasks per source")
    ap.add_argument("--K", default="8,24,64")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/small_budget.json")
    ap.add_argument("--publish", action="store_true", help="also write docs/measured/small_budget.json, the docs' "
                    "table and figure")  # fmt: skip
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.tasks, args.K = min(args.seeds, 2), args.tasks or 2, "24"
    sources = [s for s in args.sources.split(",") if s]
    bad = [s for s in sources if s not in SOURCES and s != NEW_KINDS]
    if bad:
        print(f"unknown sources {bad}; accepted: {', '.join([*SOURCES, NEW_KINDS])}", file=sys.stderr)
        return 2
    Ks = tuple(int(k) for k in args.K.split(","))
    args.refit, args.checked_bounds = False, set()
    t0 = time.perf_counter()
    public = [s for s in sources if s in SOURCES]
    loaded = load_or_say(args.quick, public)
    if loaded is None:
        return 1
    sim, fit_data = loaded
    jobs = []
    for source, name, bound in held_out(sim, public, args.tasks, lambda key: held_out_bound(key, fit_data, args)):
        jobs += [(source, SOURCES[source][0], name, sim[source][name], s, Ks, bound) for s in range(args.seeds)]
    if NEW_KINDS in sources:
        new = new_kinds_tasks()
        for name in sorted(new)[: args.tasks]:
            t = new[name]
            jobs += [(NEW_KINDS, t["family"], name, t, s, Ks, None) for s in range(args.seeds)]
    rows = [r for rs in run_jobs(job, jobs, args.jobs, "studies") for r in rs]
    table = summarise(rows)
    print_summary(table)
    wall = time.perf_counter() - t0
    print(f"\n{len(rows)} studies; wall time {wall:.0f} s")
    args.checked_bounds = sorted(args.checked_bounds)
    write_json(ROOT / args.out, {"summary": table, "rows": rows, "meta": meta(args, wall_s=wall)})
    plot(table, (ROOT / args.out).with_suffix(".png"))
    if args.publish:
        publish(table, meta(args, wall_s=wall), ROOT / "docs" / "racing.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
