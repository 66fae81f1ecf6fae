"""Does racing's certificate hold, and what does it save, with no budget, on learning curves the bound never saw?

Protocol. Every study is the core ask/tell policy :class:`mf_sched.racing.policy.Race` driven directly (no Ray,
no Optuna), one worker, no budget, until the policy says it is done. The ``K`` configurations of a task and their
observed curves are drawn exactly as :func:`benchmarks.anytime.draw` draws them (the same seeds, so the numbers
compare with ``benchmarks/results/anytime.json``); the policy sees the observed values in the maximised
orientation (a loss is negated, as the curve bound of the loss family expects: relative form, ideal 0).

Ladder: rungs at epochs 1, 3, 9 and 27 of 27 (fractions 1/27, 1/9, 1/3, 1), resumable runs: the policy advances
an arm one rung per pull, and a pull costs the epochs beyond what the arm has already trained (counted here;
the policy's own ``cost`` counts independent pulls, the certificate's ``cost`` the resumable epochs).

Bound: the held-out fit of :func:`benchmarks.anytime.fitted_bound` (the same cached JSON), selected for the
study's ``K``, all-rung miss rate 0.05 and tolerance 0.005 on the rungs 1/27, 1/9, 1/3. Three modes on the same
draws: ``prior`` (the bound without its evidence model, where it has one: ``without_evidence()``: the behaviour
before the bound learned from the study), ``earned`` (the bound as selected: λ learned from the study's own
finished curves, :mod:`mf_sched.racing.evidence`) and ``audit`` (``earned``, and each run the rule stops is trained
on to the top with probability 0.1, ``Race(audit=0.1)``: what audits cost and what they catch). New kinds of
tasks (``benchmarks.new_kinds.load_new_kinds``, if its data file is present) are raced with the shipped bound of
their family, drawn like the held-out sources (one real seed per configuration).

Per study: epochs spent (and as a fraction of a full search, ``K × 27``), the answer, whether its true final value
is within 0.5% of the full search's answer (the best observed final value; as ``benchmarks.anytime`` scores it),
the certificate (whole), the recommendation, and ``claimed``: the certificate says its answer is certified.
A claim whose answer is not within 0.5% is a false claim.

    python -m benchmarks.earned --quick     # 2 tasks per source, 2 seeds, K = 24 (minutes; the bound fits once)
    python -m benchmarks.earned             # every task, 5 seeds, K = 8, 24, 64

Prints one table per family (rows: source, K, mode) with the pooled rows per family, and writes
``benchmarks/results/earned.json`` (every study and the summary).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import meta, print_table, put_table_after, run_jobs, write_json
from benchmarks.anytime import BOUND_DIR, ROOT, SOURCES, WITHIN, T, draw, fitted_bound, held_out, load_or_say

EPOCHS = (1, 3, 9, 27)  # the rungs, in epochs of T = 27
FRACTIONS = [e / T for e in EPOCHS[:-1]]
ALPHA, TOLERANCE = 0.05, 0.005
MODES = ("prior", "earned", "audit")
BUDGETS = (0.1, 0.3)  # anytime: regret at these fractions of a full search
AUDIT = 0.1  # mode "audit": earned, and a run the rule stops is trained on to the top with this probability
NEW_KINDS = "new-kinds"


def claimed(cert: dict, details: dict) -> bool:
    """Whether a study's certificate says its answer is certified: the certificate's own ``certified`` key when
    it has one (a future version), else the recommendation's ``certified`` detail if present, else today's rule
    (an ε was certified and the guarantee holds: ``epsilon is not None and guaranteed``)."""
    if "certified" in cert:
        return bool(cert["certified"])
    if isinstance(details.get("certified"), bool):
        return details["certified"]
    return cert.get("epsilon") is not None and bool(cert.get("guaranteed"))


def _plain(d: Any) -> dict:
    """The JSON-safe scalar and string items of a mapping."""
    out = {}
    for k, v in dict(d or {}).items():
        if isinstance(v, (bool, int, float, str)) or v is None:
            out[str(k)] = v
        elif isinstance(v, (np.bool_, np.integer, np.floating)):
            out[str(k)] = v.item()
    return out


def bound_of(fit: Any, K_run: int, mode: str) -> tuple[Any, bool]:
    """The study's curve bound and whether an evidence model was removed (``prior`` mode, where the bound has
    ``without_evidence``)."""
    b = fit.select(n_arms=K_run, alpha=ALPHA, tolerance=TOLERANCE, fractions=FRACTIONS)
    if mode == "prior" and hasattr(b, "without_evidence"):
        return b.without_evidence(), True
    return b, False


def held_out_bound(key: str, fit_data: dict, args: argparse.Namespace) -> dict:
    """:func:`benchmarks.anytime.fitted_bound`, refitted when its cached JSON predates the evidence model (the fit
    has no ``evidence`` entry while :class:`~mf_sched.racing.curve_bound.CurveBoundFit` has the field; a stale cache
    would make ``earned`` the same as ``prior``) or when ``--refit`` asks."""
    from mf_sched.racing.curve_bound import CurveBoundFit

    d = fitted_bound(key, fit_data, args)
    stale = "evidence" in getattr(CurveBoundFit, "__dataclass_fields__", {}) and "evidence" not in d
    if (stale or args.refit) and key not in args.checked_bounds:
        print(f"bound {key}: {'refit asked' if args.refit else 'cached fit has no evidence model'}; refitting")
        (BOUND_DIR / f"{key}{'-quick' if args.quick else ''}.json").unlink(missing_ok=True)
        d = fitted_bound(key, fit_data, args)
    args.checked_bounds.add(key)
    return d


def race(obs: np.ndarray, bound: Any, seed: int, audit: float = 0.0) -> dict:
    """Race the ``K`` observed curves ``obs`` (maximised, ``K × 27``) to the end with one worker; returns the
    answer, the epochs spent, the certificate and the recommendation (``hang``: the policy stopped handing out
    pulls before it was done, or passed the pull cap)."""
    from mf_sched.ladder import FidelityLadder
    from mf_sched.racing.policy import Race

    K = obs.shape[0]
    ladder = FidelityLadder(costs=list(EPOCHS), zeta=[0.3, 0.2, 0.1, 0.0], resources=list(EPOCHS))
    p = Race(n_arms=K, ladder=ladder, race_bias=bound, noise={"kind": "subgaussian", "sigma": 0.01}, seed=seed,
             audit=audit)  # fmt: skip
    reached = [-1] * K
    epochs, pulls, skips, hang = 0, 0, 0, ""
    trace: list[tuple[int, int]] = []
    cap = 10 * K * len(EPOCHS)
    while not p.done:
        if pulls >= cap:
            hang = "pull cap"
            break
        pull = p.ask()
        if pull is None:
            hang = "ask() gave None before done"
            break
        a, m = pull.arm, pull.fidelity
        skips += int(m != reached[a] + 1)
        epochs += max(0, EPOCHS[m] - (EPOCHS[reached[a]] if reached[a] >= 0 else 0))
        reached[a] = max(reached[a], m)
        p.tell(pull, float(obs[a, EPOCHS[m] - 1]))
        key = p.engine.answer()[0]
        trace.append((epochs, -1 if key is None else int(key)))  # the answer after every result (anytime)
        pulls += 1
    rec = p.recommendation()
    cert = p.engine.certificate().to_dict()
    cb = p.engine.curve_bound
    return {
        "answer": -1 if rec.arm is None else int(rec.arm), "epochs": epochs, "pulls": pulls, "skipped_rungs": skips,
        "policy_cost": p.cost, "hang": hang, "rec_certified": bool(rec.certified), "reason": rec.reason,
        "details": _plain(rec.details), "cert": cert, "lam_start": float(bound.lam),
        "lam_end": None if cb is None else float(cb.lam), "top_reached": reached.count(len(EPOCHS) - 1),
        "trace": trace,
    }  # fmt: skip


def job(a: tuple) -> list[dict]:
    """Every (K, mode) study of one (source, task, seed): ``a = (source, family, name, task, seed, Ks, modes,
    bound)``, ``bound`` the held-out fit's dict (None: the shipped bound of the family)."""
    from mf_sched.racing import shipped_curve_bound
    from mf_sched.racing.curve_bound import CurveBoundFit

    source, family, name, task, seed, Ks, modes, bound = a[:8]
    label = a[8] if len(a) > 8 else source  # "lcbench (source out)": the same draws, another held-out bound
    fit = shipped_curve_bound(family) if bound is None else CurveBoundFit.from_dict(bound)
    rows = []
    for K in Ks:
        true, obs = draw(task, source, name, seed, K)  # score orientation: maximised (a loss negated)
        K_run = true.shape[0]
        true_final = true[:, -1]
        full = int(np.argmax(obs[:, -1]))  # the full search's answer
        scale = abs(true_final[full]) or 1.0
        obs_best = obs[:, -1].max()
        for mode in modes:
            b, removed = bound_of(fit, K_run, mode)
            r = race(obs, b, seed, AUDIT if mode == "audit" else 0.0)
            end = r["answer"]
            end_true = true_final[end] if end >= 0 else true_final.mean()
            cert = r["cert"]
            row = {
                "source": label, "family": family, "task": name, "seed": seed, "K": K, "K_run": K_run, "mode": mode,
                "has_evidence": getattr(fit, "evidence", None) is not None, "evidence_removed": removed,
                "epochs_fraction": r["epochs"] / (K_run * T),
                "within": bool(end_true >= true_final[full] - WITHIN * scale),
                "within_observed": bool(end >= 0 and obs[end, -1] >= obs_best - WITHIN * (abs(obs_best) or 1.0)),
                "same_as_full": end == full, "regret_end": float(true_final.max() - end_true),
                "epsilon": cert.get("epsilon"), "guaranteed": bool(cert.get("guaranteed")),
                "identified": bool(cert.get("identified")), "violated": bool(cert.get("violated_by")),
                "claimed": claimed(cert, r["details"]), **r,
            }  # fmt: skip
            # anytime: the regret of the answer at 0.1× and 0.3× of a full search's epochs (random before any)
            for b in BUDGETS:
                at = [ans for spent, ans in r["trace"] if spent <= b * K_run * T]
                ans = at[-1] if at and at[-1] >= 0 else -1
                row[f"regret_{b:g}"] = float(true_final.max() - (true_final[ans] if ans >= 0 else true_final.mean()))
            del row["trace"]
            lam_end = r["lam_end"]
            row["raised"] = row["violated"] or (lam_end is not None and lam_end > r["lam_start"])
            rows.append(row)
    return rows


def new_kinds_tasks() -> dict[str, dict]:
    """The new kinds of tasks (``benchmarks.new_kinds.load_new_kinds``) in maximised orientation, or ``{}`` when
    that module or its data is absent. A loss given as a raw loss (``mode`` "min", or no ``mode`` and a
    positive median) is negated; configurations without a finite true curve are left out."""
    try:
        from benchmarks.new_kinds import load_new_kinds

        raw = load_new_kinds()
    except (ImportError, FileNotFoundError, ValueError) as e:
        print(f"no new kinds of tasks ({type(e).__name__}: {e})")
        return {}
    out = {}
    for name, t in raw.items():
        fam = str(t["family"])
        true, seeds = np.asarray(t["true"], dtype=float), np.asarray(t["seeds"], dtype=float)
        mode = t.get("mode")
        if mode == "min" or (mode is None and fam == "loss" and np.nanmedian(true) > 0):
            true, seeds = -true, -seeds
        ok = np.isfinite(true).all(axis=1)
        if ok.sum() >= 5 and true.shape[1] == T:
            out[str(name)] = {"true": true[ok], "seeds": seeds[ok], "family": fam}
    return out


# ------------------------------------------------------------------------------------------ report
def _mean(rs: list[dict], f: Any) -> float:
    return float(np.mean([f(r) for r in rs])) if rs else math.nan


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per (family, source, K, mode) and pooled per (family, mode) over the public sources: studies, mean epochs
    fraction, shares within 0.5%, claimed, claimed and not within (false claims), λ raised or violated, hangs."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["source"], r["K"], r["mode"]), []).append(r)
        if r["source"] in SOURCES:
            groups.setdefault((r["family"], "pooled", 0, r["mode"]), []).append(r)
    out = {}
    for (fam, src, K, mode), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "pooled", kv[0])):
        out[f"{fam}|{src}|{K}|{mode}"] = {
            "family": fam, "source": src, "K": K, "mode": mode, "studies": len(rs),
            "epochs_fraction": _mean(rs, lambda r: r["epochs_fraction"]),
            "within": _mean(rs, lambda r: r["within"]), "claimed": _mean(rs, lambda r: r["claimed"]),
            "false_claims": _mean(rs, lambda r: r["claimed"] and not r["within"]),
            "false_claims_observed": _mean(rs, lambda r: r["claimed"] and not r["within_observed"]),
            "identified": _mean(rs, lambda r: r["identified"]), "raised": _mean(rs, lambda r: r["raised"]),
            "regret_end": _mean(rs, lambda r: r["regret_end"]), "hangs": sum(bool(r["hang"]) for r in rs),
            **{f"regret_{b:g}": _mean(rs, lambda r, b=b: r.get(f"regret_{b:g}", math.nan)) for b in BUDGETS},
            "has_evidence": _mean(rs, lambda r: r["has_evidence"]),
        }  # fmt: skip
    return out


def print_summary(table: dict[str, dict]) -> None:
    """One table per family: a row per (source, K, mode), then the pooled rows."""
    cols = [("source", "<14"), ("K", ">3"), ("mode", "<7"), ("studies", ">7"), ("epochs", ">7.3f"),
            ("≤0.5%", ">6.2f"), ("claimed", ">7.2f"), ("false", ">6.3f"), ("false(obs)", ">10.3f"),
            ("ident.", ">6.2f"), ("λ up", ">5.2f"), ("regret", ">8.4f"), ("r@0.1×", ">8.4f"), ("r@0.3×", ">8.4f"),
            ("hangs", ">5d")]  # fmt: skip
    for fam in sorted({v["family"] for v in table.values()}):
        print(f"\n== family {fam}: epochs = mean fraction of a full search; false = claimed and not within 0.5% "
              "(true finals); false(obs) = the same on observed finals;\n   λ up = λ ended above its start (the "
              "study's evidence raised it) or the bound was violated")  # fmt: skip
        print_table(cols, [(v["source"], v["K"] or "all", v["mode"], v["studies"], v["epochs_fraction"], v["within"],
                            v["claimed"], v["false_claims"], v["false_claims_observed"], v["identified"],
                            v["raised"], v["regret_end"], v.get("regret_0.1", math.nan),
                            v.get("regret_0.3", math.nan), v["hangs"])
                           for v in table.values() if v["family"] == fam], rule=True)  # fmt: skip


#: the committed copy of the summary that the docs' tables are made from (tests/test_measured.py checks them)
PUBLISHED = ROOT / "docs" / "measured" / "earned.json"
MARK = "<!-- table: benchmarks.earned -->"
LABEL = {"prior": "shipped bound (before)", "earned": "learned from the study", "audit": "learned + audits (0.1)"}


def _pool(entries: list[dict], field: str) -> float:
    n = sum(e["studies"] for e in entries)
    return sum(e[field] * e["studies"] for e in entries) / n if n else math.nan


def render_table(summary: dict[str, dict]) -> str:
    """The docs' table (markdown) from a summary: per family, source and mode, pooled over the study sizes ``K``
    (weighted by studies): studies, epochs as a fraction of a full search, the share of answers within 0.5% of the
    full search's, the share certified, and the share certified whose answer is not within 0.5% (false claims)."""
    head = ("| family | tasks (held out) | bound | studies | epochs / full search | within 0.5% | certified "
            "| certified but not within 0.5% | mean regret at 0.1× / 0.3× |\n"
            "|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    lines = [head]
    cells: dict[tuple, list[dict]] = {}
    for v in summary.values():
        if v["source"] != "pooled":
            cells.setdefault((v["family"], v["source"], v["mode"]), []).append(v)
    for v in summary.values():
        if v["source"] == "pooled":
            cells.setdefault((v["family"], "all public sources", v["mode"]), []).append(v)
    order = {m: i for i, m in enumerate(MODES)}
    for (fam, src, mode), es in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all public sources",
                                                                       kv[0][1], order.get(kv[0][2], 9))):  # fmt: skip
        lines.append(f"| {fam} | {src} | {LABEL.get(mode, mode)} | {sum(e['studies'] for e in es)} | "
                     f"{_pool(es, 'epochs_fraction'):.2f} | {100 * _pool(es, 'within'):.1f}% | "
                     f"{100 * _pool(es, 'claimed'):.1f}% | {100 * _pool(es, 'false_claims'):.1f}% | "
                     f"{_pool(es, 'regret_0.1'):.3g} / {_pool(es, 'regret_0.3'):.3g} |")  # fmt: skip
    return "\n".join(lines)


README_BEGIN, README_END = "<!-- measured: benchmarks.earned -->", "<!-- /measured -->"


def render_readme(summary: dict[str, dict]) -> str:
    """The README's short table: per metric family and bound, pooled over every held-out public source and study
    size."""
    rows = ["| metric family | held out | bound | studies | epochs / full search | within 0.5% | certified | certified "
            "but not within 0.5% |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    order = {m: i for i, m in enumerate(MODES)}
    cells: dict[tuple, list[dict]] = {}
    for v in summary.values():
        if v["source"] in ("pooled", NEW_KINDS):
            where = "public sources" if v["source"] == "pooled" else "new kinds of task"
            cells.setdefault((v["family"], where, v["mode"]), []).append(v)
    for (fam, where, mode), es in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] != "public sources",
                                                                       order.get(kv[0][2], 9))):  # fmt: skip
        name = "accuracy-like" if fam == "unit" else "losses" if fam == "loss" else fam
        rows.append(f"| {name} | {where} | {LABEL.get(mode, mode)} | {sum(e['studies'] for e in es)} | "
                    f"{_pool(es, 'epochs_fraction'):.2f} | {100 * _pool(es, 'within'):.1f}% | "
                    f"{100 * _pool(es, 'claimed'):.1f}% | {100 * _pool(es, 'false_claims'):.1f}% |")  # fmt: skip
    return "\n".join(rows)


def _between(text: str, begin: str, end: str, body: str, name: str) -> str:
    if begin not in text or end not in text:
        raise SystemExit(f"{name} has no {begin!r} ... {end!r} block")
    head, rest = text.split(begin, 1)
    return head + begin + "\n" + body + "\n" + end + rest.split(end, 1)[1]


def publish(summary: dict[str, dict], meta_: dict, doc: Path) -> None:
    """Write the summary to :data:`PUBLISHED` and its table into ``doc`` after the line :data:`MARK` (replacing the
    table that follows it)."""
    write_json(PUBLISHED, {"summary": summary, "meta": meta_})
    put_table_after(doc, MARK, render_table(summary))
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    readme.write_text(_between(text, README_BEGIN, README_END, render_readme(summary), "README.md"), encoding="utf-8")
    print(f"published {PUBLISHED} and the tables in {doc} and {readme}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 tasks per source, 2 seeds, K = 24")
    ap.add_argument("--sources", default=",".join(SOURCES) + "," + NEW_KINDS)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tasks per source")
    ap.add_argument("--K", default="8,24,64")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--refit", action="store_true", help="refit the held-out bounds (ignore their cached JSON)")
    ap.add_argument("--out", default="benchmarks/results/earned.json")
    ap.add_argument("--whole-sources", action="store_true",
                    help="also race LCBench and TaskSet with a bound fitted without their whole source")  # fmt: skip
    ap.add_argument("--publish", action="store_true", help="also write docs/measured/earned.json and the docs' table")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.tasks, args.K = min(args.seeds, 2), args.tasks or 2, "24"
    sources = [s for s in args.sources.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    bad = [s for s in sources if s not in SOURCES and s != NEW_KINDS] + [m for m in modes if m not in MODES]
    if bad:
        print(f"unknown sources or modes {bad}; accepted: {', '.join([*SOURCES, NEW_KINDS])}; {', '.join(MODES)}",
              file=sys.stderr)  # fmt: skip
        return 2
    Ks = tuple(int(k) for k in args.K.split(","))
    args.checked_bounds = set()
    t0 = time.perf_counter()
    public = [s for s in sources if s in SOURCES]
    loaded = load_or_say(args.quick, public)
    if loaded is None:
        return 1
    sim, fit_data = loaded
    jobs = []
    for source, name, bound in held_out(sim, public, args.tasks, lambda key: held_out_bound(key, fit_data, args)):
        jobs += [(source, SOURCES[source][0], name, sim[source][name], s, Ks, modes, bound)
                 for s in range(args.seeds)]  # fmt: skip
        if args.whole_sources and SOURCES[source][1] == "tasks":  # also held out as a whole source
            whole = held_out_bound(f"{SOURCES[source][0]}-without-{source}", fit_data, args)
            jobs += [(source, SOURCES[source][0], name, sim[source][name], s, Ks, modes, whole,
                      f"{source} (source out)") for s in range(args.seeds)]  # fmt: skip
    if NEW_KINDS in sources:
        new = new_kinds_tasks()
        for name in sorted(new)[: args.tasks]:
            t = new[name]
            jobs += [(NEW_KINDS, t["family"], name, t, s, Ks, modes, None) for s in range(args.seeds)]
    rows = [r for rs in run_jobs(job, jobs, args.jobs, "studies") for r in rs]
    table = summarise(rows)
    print_summary(table)
    bare = sum(r["mode"] == "earned" and not r["has_evidence"] for r in rows)
    if bare:
        print(f"\n{bare} earned studies had a bound without an evidence model: there earned = prior")
    hangs = [r for r in rows if r["hang"]]
    for r in hangs[:5]:
        print(f"hang: {r['source']} {r['task']} seed {r['seed']} K {r['K']} {r['mode']}: {r['hang']}")
    wall = time.perf_counter() - t0
    print(f"\n{len(rows)} studies, {len(hangs)} hangs; wall time {wall:.0f} s")
    args.checked_bounds = sorted(args.checked_bounds)
    write_json(ROOT / args.out, {"summary": table, "rows": rows, "meta": meta(args, wall_s=wall)})
    if args.publish:
        publish(table, meta(args, wall_s=wall), ROOT / "docs" / "racing.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
