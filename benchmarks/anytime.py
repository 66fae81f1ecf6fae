"""Regret against epochs spent — the anytime curve — of racing (the default of the adapters) and its peers, on
learning curves the bound never saw.

Every method tunes the same ``K`` configurations of a task (listed in a random order), sees the same noisy
curves, and is scored on its *own* answer at every budget: regret = the best true final value of the ``K``
minus the true final value of the answer. Budgets are fractions of a full-fidelity search (``K × 27`` epochs);
a study stopped at a budget answers with what it knows then.

Data: every source's curves on 27 equal steps of training (a fraction grid, so that rungs 1/3/9/27 fall on the
same fractions everywhere): LCBench (34 tasks; the surrogate's mean curves + N(0, 0.01²) seed noise per step),
TaskSet (12 tasks; + N(0, 0.01²) in loss units), DeepOBS and AlgoPerf (one real seed per configuration; the
truth is the mean over seeds). AlgoPerf tasks have 5–24 configurations: there ``K`` is all of them.

**Held out.** The bound racing uses is fitted without the task it is tested on: LCBench and TaskSet tasks in
5 groups, each group tested with a bound fitted on every other task of the metric family (leave-tasks-out);
DeepOBS and AlgoPerf tested with a bound fitted on the family's *other* sources (leave-one-source-out: the
honest test of a new kind of task). Fitted with :func:`mf_sched.racing.fit.fit_curve_bound` as
``benchmarks/curve_bound.py`` does, cached in ``benchmarks/results/anytime_bounds/``.

Part ``ray`` — a Ray Tune experiment of ``K`` trials on 2 workers through the simulation of Tune's loop
(:mod:`benchmarks.tune_sim`: the real scheduler objects; a checkpoint with every report). FIFO, ASHA and
HyperBand at their documented defaults with rungs aligned to ours (reduction factor 3, grace period 1,
``max_t`` 27); ``IISEScheduler`` (anytime racing with the held-out curve-aware bound: the default), and two
ablations: the best-first schedule with the same bound, and today's zero-config racing before this change
(best-first with the unconditional ζ⁺ prior). Every Ray method answers as Tune's
``get_best_result(scope="last")`` does (the best latest value; racing's own answer rule is the same).

Peers in their own environments (their pins clash with the project's), added to the Ray part on the same draws
(configurations, their order, the noise), each scored on its own answer at every budget:

- ``--syne-python`` (syne-tune 0.16, :mod:`benchmarks.syne_tune_runner`): Syne Tune's ASHA and BOHB with its
  simulator backend on 2 workers (grace period 1, ``max_t`` 27, reduction factor 3), every configuration given as
  ``points_to_evaluate``. BOHB's KDE searcher then never chooses a configuration (all ``K`` are given, no more are
  asked for): on a fixed set BOHB is ASHA's stopping rule, and its rows equal Syne Tune's ASHA. The answer: Syne
  Tune's ``best_config`` rule (the trial with the best value reported at any epoch).
- ``--dehb-python`` (dehb 0.1.2, :mod:`benchmarks.dehb_runner`): DEHB through ask/tell, the ``K`` configurations
  as the choices of one categorical (DEHB's own encoding: ``x ∈ [0, 1)`` → choice ``⌊x·K⌋``), fidelities 1–27,
  eta 3, one job at a time. Two rows from the same run: ``DEHB (resumes checkpoints)`` counts what an objective
  that keeps a checkpoint per configuration trains (a job at fidelity ``b`` for a configuration trained to ``e``
  costs ``max(0, b − e)``), ``DEHB (from scratch)`` what DEHB's own examples train (``b`` every job). The answer:
  DEHB's incumbent (the best value told at any fidelity). DEHB never stops by itself: each row runs to a full
  search's epochs (the resume counting stops earlier if DEHB has asked 30 jobs per configuration); a job that
  would end past a budget is cut there, its result never told.

Part ``optuna`` — the same configurations as a categorical parameter (its choices in a random order): TPE with
Optuna's HyperbandPruner and SuccessiveHalvingPruner (rungs aligned: reduction factor 3, minimum resource 1), TPE
with MFPruner, and MFSampler + MFPruner on an ordinary objective (each trial trains from scratch) and on a
resumable one (``train_to``/``finish``), each until it stops itself or has spent a full search's epochs. Scored on
each method's own answer at every budget: MFSampler's recommendation, ``study.best_trial`` otherwise (before any
trial completes: a configuration drawn at random).

    python -m benchmarks.anytime --quick        # 2 tasks per source, 2 seeds, K = 24 (minutes)
    python -m benchmarks.anytime                # every task, 5 seeds, K = 24 and 64 (hours on 2 cores)
    python -m benchmarks.anytime --part ray --syne-python .venv-syne/bin/python --dehb-python .venv-dehb/bin/python

Prints tables (regret at 0.1×, 0.3×, 1× and with no budget; epochs and agreement with the full search), writes
``benchmarks/results/anytime.json`` and ``anytime.png`` (mean regret against epochs, per source family).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import meta, pyplot, run_jobs, save_figure, write_json

ROOT = Path(__file__).resolve().parents[1]
T = 27
GRID = np.arange(1, T + 1) / T
NOISE = 0.01
BUDGETS = (0.1, 0.3, 1.0)
PLOT_BUDGETS = np.round(np.geomspace(0.02, 1.0, 24), 4)
WITHIN = 0.005  # "within 0.5% of the full search's answer"
SOURCES = {  # name -> (family, how its tasks are held out)
    "lcbench": ("unit", "tasks"),
    "taskset": ("loss", "tasks"),
    "deepobs-acc": ("unit", "source"),
    "deepobs-loss": ("loss", "source"),
    "algoperf-unit": ("unit", "source"),
    "algoperf-loss": ("loss", "source"),
}
FOLDS = 5
BOUND_DIR = ROOT / "benchmarks" / "results" / "anytime_bounds"


# ------------------------------------------------------------------------------------------ data
def _grid_tasks(curves: Any) -> dict[str, dict[str, np.ndarray]]:
    """Per task: ``true`` (configurations × 27, the seed mean, score orientation) and ``seeds`` (× seeds × 27)."""
    fr = curves.to_fraction()
    rv = fr.values_at(GRID)
    means, sc = rv.means(), rv.score
    out = {}
    for ti, t in enumerate(fr.task_labels):
        sel = rv.config_task == ti
        m, x = means[sel], sc[sel]
        ok = np.isfinite(m).all(axis=1)
        if ok.sum() >= 5:
            out[str(t)] = {"true": m[ok], "seeds": x[ok]}
    return out


def load(quick: bool, sources: list[str]) -> tuple[dict, dict]:
    """(simulation data per source and task, observed runs for fitting bounds per source and task)."""
    from benchmarks.curve_bound import FRACTIONS, LCBENCH_NOISE
    from benchmarks.race_prior import ALGOPERF_LOSS, ALGOPERF_UNIT, algoperf_workloads
    from mf_sched.curves.datasets import LCBenchSurrogate, load_algoperf, load_deepobs, load_taskset
    from mf_sched.racing.fit import observed_runs

    def tables(name: str) -> list[tuple[str, Any]]:
        if name == "lcbench":
            return [("", LCBenchSurrogate().curves(n_configs=150 if quick else 500, epochs=list(range(1, 53)), seed=0))]
        if name == "taskset":
            return [("", load_taskset())]
        if name.startswith("deepobs"):
            return [("", load_deepobs(metric="test_acc" if name.endswith("acc") else "test_loss"))]
        wl = algoperf_workloads()
        out = []
        for prefix, metric in ALGOPERF_UNIT if name.endswith("unit") else ALGOPERF_LOSS:
            ws = [w for w in wl if w.startswith(prefix)]
            if ws:
                out.append((f"{metric}:", load_algoperf(workloads=ws, metric=metric)))
        return out

    sim, fit_data = {}, {}
    for name in SOURCES:
        fam = SOURCES[name][0]
        need_sim = name in sources
        sim_t, fit_t = {}, {}
        for i, (prefix, curves) in enumerate(tables(name)):
            if need_sim:
                sim_t.update({prefix + k: v for k, v in _grid_tasks(curves).items()})
            noise = LCBENCH_NOISE if name == "lcbench" else 0.0
            obs = observed_runs(curves.to_fraction(), FRACTIONS, noise=noise, seed=100 + i)
            fit_t.update({prefix + str(k): v for k, v in obs.items() if v.shape[0] >= 5})
        if need_sim:
            sim[name] = sim_t
        fit_data[name] = (fam, fit_t)
    return sim, fit_data


def load_or_say(quick: bool, sources: list[str]) -> tuple[dict, dict] | None:
    """:func:`load`, timed and said; None (after saying why on stderr) when the learning-curve data is missing."""
    t0 = time.perf_counter()
    try:
        out = load(quick, sources)
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the learning-curve data: {e}", file=sys.stderr)
        return None
    print(f"loaded the curves in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def held_out(sim: dict, sources: list[str], tasks: int | None, bound_of: Any) -> Any:
    """``(source, task name, its held-out bound)`` for the first ``tasks`` tasks of each source, each bound fitted
    (``bound_of(key)``, which caches) once before its tasks, with a progress line."""
    for source in sources:
        names = sorted(sim[source])[:tasks]
        hold = holdout_of(source, sorted(sim[source]))
        for key in sorted({hold[t] for t in names}):
            t1 = time.perf_counter()
            bound_of(key)
            print(f"bound {key} ({time.perf_counter() - t1:.0f} s)", flush=True)
        for name in names:
            yield source, name, bound_of(hold[name])


def draw(task: dict[str, np.ndarray], source: str, name: str, seed: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """``K`` configurations of a task (true curves) and their observed curves, the same for every method."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{source}/{name}".encode()), K])
    n = task["true"].shape[0]
    idx = rng.choice(n, min(K, n), replace=False)
    true = task["true"][idx]
    if source in ("lcbench", "taskset"):
        return true, true + NOISE * rng.standard_normal(true.shape)
    seeds = task["seeds"][idx]
    obs = np.empty_like(true)
    for i in range(idx.size):
        ok = np.flatnonzero(np.isfinite(seeds[i]).all(axis=1))
        obs[i] = seeds[i, rng.choice(ok)] if ok.size else true[i]
    return true, obs


# ------------------------------------------------------------------------------------------ held-out bounds
def holdout_of(source: str, tasks: list[str]) -> dict[str, str]:
    """task -> the name of the bound that did not see it."""
    if SOURCES[source][1] == "source":
        return {t: f"{SOURCES[source][0]}-without-{source}" for t in tasks}
    order = sorted(tasks)
    return {t: f"{SOURCES[source][0]}-without-{source}-group{order.index(t) % FOLDS}" for t in tasks}


def fitted_bound(key: str, fit_data: dict, args: argparse.Namespace) -> dict:
    """The held-out fit named ``key`` (cached as JSON)."""
    from benchmarks.curve_bound import fit

    path = BOUND_DIR / f"{key}{'-quick' if args.quick else ''}.json"
    if path.exists():
        return json.loads(path.read_text())
    fam, rest = key.split("-without-")
    source, _, group = rest.partition("-group")
    tasks = {}
    for name, (f, d) in fit_data.items():
        if f != fam or (name == source and not group):
            continue
        order = sorted(d)
        for t in d:
            if name == source and group and order.index(t) % FOLDS == int(group):
                continue
            tasks[f"{name}/{t}"] = d[t]
    ns = argparse.Namespace(per_task=40, draws=100 if args.quick else 200)
    b = fit(tasks, fam, ns, provenance={"held_out": key}).to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(b))
    return b


# ------------------------------------------------------------------------------------------ Ray part
def ray_methods(bound: dict, K: int, family: str) -> dict:
    from mf_sched.integrations.ray import IISEScheduler
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler

    from mf_sched.racing.curve_bound import CurveBoundFit

    fit = CurveBoundFit.from_dict(bound)
    named = "accuracy" if family == "unit" else "loss"  # a WER in [0, 1] would read as an error rate otherwise
    return {
        "FIFO": lambda: FIFOScheduler(),
        "ASHA (Ray)": lambda: ASHAScheduler(max_t=T, grace_period=1, reduction_factor=3),
        "HyperBand (Ray)": lambda: HyperBandScheduler(max_t=T, reduction_factor=3),
        "racing: anytime + curve bound (default)": lambda: IISEScheduler(
            race_bias=fit, n_trials=K, metric_family=named
        ),
        "racing: best-first + curve bound": lambda: IISEScheduler(
            race_bias=fit, n_trials=K, metric_family=named, schedule="best-first"
        ),
        "racing before (best-first + ζ⁺ prior)": lambda: IISEScheduler(
            bound="zeta+", schedule="best-first", metric_family=named
        ),
    }


def trajectory(events: list, observed: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """From a simulation's events: cumulative epochs after each result, and the answer then (Tune's
    ``scope="last"``: the trial with the best latest value; −1 before any)."""
    last = np.full(observed.shape[0], -np.inf)
    spent, answers = [], []
    n = 0
    for _, kind, row, epoch, _ in events:
        if kind != "result":
            continue
        n += 1
        last[row] = sign * observed[row, epoch - 1]
        spent.append(n)
        answers.append(int(np.argmax(last)))
    return np.asarray(spent), np.asarray(answers)


def score(a: tuple, part: str, method: str, spent: np.ndarray, answers: np.ndarray, **extra: Any) -> dict:
    """One run's row: regret at every budget, and where it ended, of the answers ``answers`` given after ``spent``
    epochs (−1: none yet, scored as a configuration drawn at random); ``a`` is the job (its draw is repeated)."""
    source, name, task, seed, K, _ = a
    true, obs = draw(task, source, name, seed, K)
    full = true.shape[0] * T
    true_final = true[:, -1]
    fifo_answer = int(np.argmax(obs[:, -1]))
    scale = abs(true_final[fifo_answer]) or 1.0
    end = int(answers[-1])
    end_true = true_final[end] if end >= 0 else true_final.mean()
    return {
        "part": part, "source": source, "family": SOURCES[source][0], "task": name, "seed": seed, "K": K,
        "K_run": true.shape[0], "method": method, "epochs": int(spent[-1]), "epochs_fraction": spent[-1] / full,
        "regret": regret_at(spent, answers, np.array(BUDGETS) * full, true_final).tolist(),
        "regret_curve": regret_at(spent, answers, PLOT_BUDGETS * full, true_final).tolist(),
        "regret_end": float(true_final.max() - end_true), "relative_scale": scale, "same_as_full": end == fifo_answer,
        "within": bool(end_true >= true_final[fifo_answer] - WITHIN * scale), **extra,
    }  # fmt: skip


def job(a: tuple) -> list[dict]:
    from benchmarks.tune_sim import simulate

    source, name, task, seed, K, bound = a
    true, obs = draw(task, source, name, seed, K)
    mode = "max" if SOURCES[source][0] == "unit" else "min"
    metric = obs if mode == "max" else -obs  # what the trainable reports (a loss for the loss family)
    sign = 1.0 if mode == "max" else -1.0
    rows = []
    for label, make in ray_methods(bound, true.shape[0], SOURCES[source][0]).items():
        r = simulate(make(), metric, workers=2, metric="acc", mode=mode, max_t=T, checkpoint=True,
                     reuse_actors=True, record_events=True, seed=seed)  # fmt: skip
        spent, answers = trajectory(r.events, metric, sign)
        rows.append(score(a, "ray", label, spent, answers, hang=bool(r.hang)))
    return rows


# ------------------------------------------------------------------------------ Ray part: peers in other environments
SYNE_METHODS = {"ASHA": "ASHA (Syne Tune)", "BOHB": "BOHB (Syne Tune)"}
DEHB_METHODS = {"resume": "DEHB (resumes checkpoints)", "scratch": "DEHB (from scratch)"}


def budget_trajectory(costs: np.ndarray, answers: np.ndarray, full: float) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative epochs after each job of ``costs`` and the answer then, stopped at ``full`` epochs: a job that would
    end past it is cut there (its result never comes; the answer stays the one before it)."""
    spent = np.cumsum(np.asarray(costs, dtype=float))
    answers = np.asarray(answers, dtype=int)
    keep = spent <= full
    if keep.all():
        return spent, answers
    n = int(np.argmin(keep))  # the first job that ends past the budget
    last = answers[n - 1] if n else -1
    return np.append(spent[:n], full), np.append(answers[:n], last)


def _run_runner(cmd: list[str], label: str) -> None:
    """Run a peer's runner (another Python environment), its progress lines shown, its other output dropped."""
    import subprocess

    print(f"{label}: {' '.join(cmd)}", flush=True)
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as p:
        assert p.stderr is not None
        tail: list[str] = []
        for line in p.stderr:
            tail = (tail + [line])[-20:]
            if line.startswith(("set ", "DEHB set ")):
                print(f"  {line.rstrip()}", flush=True)
    if p.returncode:
        raise RuntimeError(f"{label} failed (exit {p.returncode}):\n{''.join(tail)}")


def peer_rows(jobs: list[tuple], syne_python: str | None, dehb_python: str | None, folder: Path) -> list[dict]:
    """Syne Tune's ASHA and BOHB (:mod:`benchmarks.syne_tune_runner`) and DEHB (:mod:`benchmarks.dehb_runner`) on
    every job's curves — the same draw (configurations, their order, the noise) as the Ray schedulers — each in
    its own environment, all curve sets in one call per peer (one start-up); scored like the Ray schedulers, on
    each peer's own answer at every budget."""
    arrays, maximize, seeds = {}, [], []
    for i, a in enumerate(jobs):
        source, name, task, seed, K, _ = a
        true, obs = draw(task, source, name, seed, K)
        mode = "max" if SOURCES[source][0] == "unit" else "min"
        arrays[f"curves_{i}"] = obs if mode == "max" else -obs  # what the trainable reports, as in job()
        maximize.append(mode == "max")
        seeds.append(seed)
    npz = folder / "curves.npz"
    np.savez(npz, **arrays, maximize=np.array(maximize), seed=np.array(seeds, dtype=np.int64))
    rows: list[dict] = []
    if syne_python:
        res = folder / "syne.json"
        _run_runner([syne_python, str(ROOT / "benchmarks" / "syne_tune_runner.py"), str(npz), str(res),
                     "--schedulers", ",".join(SYNE_METHODS), "--workers", "2", "--grace-period", "1",
                     "--reduction-factor", "3"], "Syne Tune")  # fmt: skip
        for r in json.loads(res.read_text())["results"]:
            a = jobs[r["set"]]
            spent = np.arange(1, len(r["events"]) + 1)
            rows.append(score(a, "ray", SYNE_METHODS[r["scheduler"]], spent, np.asarray(r["answers"]), hang=False))
    if dehb_python:
        res = folder / "dehb.json"
        _run_runner([dehb_python, str(ROOT / "benchmarks" / "dehb_runner.py"), str(npz), str(res), "--budget", "1"],
                    "DEHB")  # fmt: skip
        for r in json.loads(res.read_text())["results"]:
            a = jobs[r["set"]]
            full = min(a[4], a[2]["true"].shape[0]) * T
            jobs_ = np.asarray(r["jobs"], dtype=float).reshape(-1, 5)
            for col, key in ((2, "resume"), (3, "scratch")):
                spent, answers = budget_trajectory(jobs_[:, col], np.asarray(r["answers"]), full)
                rows.append(score(a, "ray", DEHB_METHODS[key], spent, answers, hang=False, dehb_jobs=len(r["jobs"])))
    return rows


# ------------------------------------------------------------------------------------------ Optuna part
OPTUNA_METHODS = (
    "TPE + HyperbandPruner",
    "TPE + SuccessiveHalvingPruner",
    "TPE + MFPruner",
    "MFSampler + MFPruner (ordinary)",
    "MFSampler + MFPruner (resumable)",
)


def optuna_study(label: str, true: np.ndarray, obs: np.ndarray, family: str, bound: dict, seed: int) -> dict:
    """One study of ``label`` on the ``K`` configurations (a categorical parameter, its choices in the random
    order of the draw) until it stops itself or spends a full search's epochs; the answer (the sampler's
    recommendation for MFSampler, ``study.best_trial`` otherwise) is recorded at every rung step."""
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to

    from mf_sched.racing.curve_bound import CurveBoundFit

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    K = true.shape[0]
    full = K * T
    mode = "max" if family == "unit" else "min"
    sign = 1.0 if mode == "max" else -1.0
    fit = CurveBoundFit.from_dict(bound)
    named = "accuracy" if family == "unit" else "loss"
    mf = dict(race_bias=fit, metric_family=named, max_resource=T)
    s, p = optuna.samplers, optuna.pruners
    resumable = label.endswith("(resumable)")
    if label == "TPE + HyperbandPruner":
        sampler, pruner = s.TPESampler(seed=seed), p.HyperbandPruner(min_resource=1, max_resource=T, reduction_factor=3)
    elif label == "TPE + SuccessiveHalvingPruner":
        sampler, pruner = s.TPESampler(seed=seed), p.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    elif label == "TPE + MFPruner":
        sampler, pruner = s.TPESampler(seed=seed), MFPruner(**mf)
    else:
        sampler, pruner = MFSampler(**mf, search_space={"arm": list(range(K))}, seed=seed), MFPruner()
    spent = [0]
    ckpt: dict[int, int] = {}
    log: list[tuple[int, int]] = []

    def answer(study: optuna.Study) -> int:
        if isinstance(sampler, MFSampler):
            rec = sampler.recommendation(study)
            return -1 if rec.params is None else int(rec.params["arm"])
        try:
            return int(study.best_trial.params["arm"])
        except ValueError:
            return -1

    def step(trial: optuna.Trial, a: int, e: int) -> float:
        if spent[0] >= full:
            trial.study.stop()
            raise optuna.TrialPruned("a full search's epochs are spent")
        spent[0] += 1
        v = sign * obs[a, e - 1]
        trial.report(v, e)
        if e in (1, 3, 9, 27):
            log.append((spent[0], answer(trial.study)))
        return v

    def ordinary(trial: optuna.Trial) -> float:
        a = trial.suggest_categorical("arm", list(range(K)))
        v = 0.0
        for e in range(1, T + 1):
            v = step(trial, a, e)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v

    def resumable_objective(trial: optuna.Trial) -> float:
        a = trial.suggest_categorical("arm", list(range(K)))
        target = train_to(trial)
        v = sign * obs[a, max(ckpt.get(a, 1), 1) - 1]
        for e in range(ckpt.get(a, 0) + 1, target + 1):
            v = step(trial, a, e)
            ckpt[a] = e
        return finish(trial, v)

    study = optuna.create_study(direction="maximize" if mode == "max" else "minimize", sampler=sampler,
                                pruner=pruner, study_name=f"{label}-{seed}-{K}")  # fmt: skip
    study.optimize(resumable_objective if resumable else ordinary, n_trials=20 * K,
                   callbacks=[lambda st, tr: log.append((spent[0], answer(st)))])  # fmt: skip
    log.append((spent[0], answer(study)))
    return {"spent": [x for x, _ in log], "answers": [a for _, a in log], "trials": len(study.trials)}


def optuna_job(a: tuple) -> list[dict]:
    source, name, task, seed, K, bound = a
    true, obs = draw(task, source, name, seed, K)
    rows = []
    for label in OPTUNA_METHODS:
        r = optuna_study(label, true, obs, SOURCES[source][0], bound, seed)
        rows.append(score(a, "optuna", label, np.asarray(r["spent"]), np.asarray(r["answers"]), trials=r["trials"]))
    return rows


def regret_at(spent: np.ndarray, answers: np.ndarray, budgets: np.ndarray, true_final: np.ndarray) -> np.ndarray:
    """Regret of the answer once ``budget`` epochs were spent (the last answer given within it); with no answer
    yet (none, or −1), the mean regret of a configuration drawn at random."""
    best = true_final.max()
    out = np.empty(budgets.size)
    for i, b in enumerate(budgets):
        j = np.searchsorted(spent, b, side="right") - 1
        a = answers[j] if j >= 0 else -1
        out[i] = best - (true_final[a] if a >= 0 else true_final.mean())
    return out


# ------------------------------------------------------------------------------------------ report
def summarise(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        key = (r["part"], r["source"], r["K"], r["method"])
        out.setdefault(key, []).append(r)
    table = {}
    for (part, source, K, method), rs in out.items():
        reg = np.array([r["regret"] for r in rs])
        table[f"{part}|{source}|{K}|{method}"] = {
            "part": part, "source": source, "K": K, "method": method, "runs": len(rs),
            "regret": dict(zip(map(str, BUDGETS), reg.mean(axis=0).round(5).tolist())),
            "regret_median": dict(zip(map(str, BUDGETS), np.median(reg, axis=0).round(5).tolist())),
            "K_run_mean": float(np.mean([r["K_run"] for r in rs])),
            "regret_end": float(np.mean([r["regret_end"] for r in rs])),
            "epochs_fraction": float(np.mean([r["epochs_fraction"] for r in rs])),
            "same_as_full": float(np.mean([r["same_as_full"] for r in rs])),
            "within": float(np.mean([r["within"] for r in rs])),
            "curve": np.array([r["regret_curve"] for r in rs]).mean(axis=0).round(6).tolist(),
        }  # fmt: skip
    return table


def print_tables(table: dict) -> None:
    by = {}
    for v in table.values():
        by.setdefault((v["part"], v["source"], v["K"]), []).append(v)
    for (part, source, K), vs in sorted(by.items()):
        kr = vs[0]["K_run_mean"]
        print(f"\n== {part}: {source}, K = {K}{f' (at most: {kr:.1f} on average)' if kr < K else ''} "
              f"({vs[0]['runs']} runs each); regret at a budget (× full search): mean (median)")  # fmt: skip
        print(f"{'method':42s} {'0.1×':>17s} {'0.3×':>17s} {'1×':>8s} {'no budget':>9s} {'epochs':>7s} "
              f"{'=full':>6s} {'≤0.5%':>6s}")  # fmt: skip
        for v in vs:
            g, md = v["regret"], v["regret_median"]
            print(f"{v['method']:42s} {g['0.1']:8.4f} ({md['0.1']:6.4f}) {g['0.3']:8.4f} ({md['0.3']:6.4f}) "
                  f"{g['1.0']:8.4f} {v['regret_end']:9.4f} {v['epochs_fraction']:7.3f} {v['same_as_full']:6.2f} "
                  f"{v['within']:6.2f}")  # fmt: skip


def plot(table: dict, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    keys = sorted({(v["part"], v["source"], v["K"]) for v in table.values()})
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for i, v in enumerate(x for x in table.values() if (x["part"], x["source"], x["K"]) == key):
            style = "-" if "racing: anytime" in v["method"] else "--" if "racing" in v["method"] else ":"
            ax.plot(PLOT_BUDGETS, np.maximum(v["curve"], 1e-5), style, color=f"C{i}", label=v["method"], lw=1.6)
        for b in BUDGETS[:2]:
            ax.axvline(b, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epochs spent (× a full-fidelity search)")
        ax.set_ylabel("mean regret")
        ax.set_title(f"{key[0]}: {key[1]}, K = {key[2]}", fontsize=9)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6)
    save_figure(fig, path)


def replot(path: Path, args: argparse.Namespace) -> int:
    """Tables and plot of a saved run, restricted to ``args.sources``, ``args.K`` and ``args.methods``."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        print(f"{path}: not a results JSON of benchmarks.anytime (no 'summary' object)", file=sys.stderr)
        return 2
    sources = set(args.sources.split(","))
    ks = {int(k) for k in args.K.split(",")}
    methods = [m for m in (args.methods or "").split(",") if m]
    table = {key: v for key, v in data["summary"].items()
             if isinstance(v, dict) and v.get("source") in sources and v.get("K") in ks
             and (not methods or any(m in str(v.get("method")) for m in methods))}  # fmt: skip
    if not table:
        print(f"{path}: nothing left after filtering by --sources, --K and --methods", file=sys.stderr)
        return 2
    print_tables(table)
    plot(table, (ROOT / args.out).with_suffix(".png"))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 tasks per source, 2 seeds, K = 24")
    ap.add_argument("--sources", default=",".join(SOURCES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tasks per source")
    ap.add_argument("--K", default="24,64")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--part", default="ray,optuna", help="ray, optuna or both")
    ap.add_argument("--out", default="benchmarks/results/anytime.json")
    ap.add_argument("--syne-python", default=None,
                    help="python of an environment with syne-tune 0.16 (see benchmarks/syne_tune_runner.py): adds its "
                         "ASHA and BOHB to the Ray part")  # fmt: skip
    ap.add_argument("--dehb-python", default=None,
                    help="python of an environment with dehb 0.1.2 (see benchmarks/dehb_runner.py): adds DEHB to the "
                         "Ray part")  # fmt: skip
    ap.add_argument("--replot", default=None,
                    help="a results JSON of an earlier run: print its tables and draw its plot (to --out's .png), "
                         "only --sources, --K and --methods (comma-separated substrings; default all)")  # fmt: skip
    ap.add_argument("--methods", default=None, help="with --replot: the methods to show (substrings of their names)")
    args = ap.parse_args()
    if args.replot:
        return replot(Path(args.replot), args)
    if args.quick:
        args.seeds, args.tasks, args.K = min(args.seeds, 2), args.tasks or 2, "24"
    sources = [s for s in args.sources.split(",") if s]
    bad = [s for s in sources if s not in SOURCES]
    if bad:
        print(f"unknown sources {bad}; accepted: {', '.join(SOURCES)}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    loaded = load_or_say(args.quick, sources)
    if loaded is None:
        return 1
    sim, fit_data = loaded
    jobs = []
    for source, name, bound in held_out(sim, sources, args.tasks, lambda key: fitted_bound(key, fit_data, args)):
        for K in (int(k) for k in args.K.split(",")):
            for seed in range(args.seeds):
                jobs.append((source, name, sim[source][name], seed, K, bound))
    parts = args.part.split(",")
    rows = []
    if "ray" in parts:
        rows += [r for rs in run_jobs(job, jobs, args.jobs, "Ray runs") for r in rs]
        if args.syne_python or args.dehb_python:
            import tempfile

            with tempfile.TemporaryDirectory() as d:
                rows += peer_rows(jobs, args.syne_python, args.dehb_python, Path(d))
    if "optuna" in parts:
        rows += [r for rs in run_jobs(optuna_job, jobs, args.jobs, "Optuna studies") for r in rs]
    table = summarise(rows)
    print_tables(table)
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")
    out = ROOT / args.out
    write_json(out, {"summary": table, "rows": rows, "meta": meta(args), "budgets": BUDGETS,
                     "plot_budgets": PLOT_BUDGETS.tolist()})  # fmt: skip
    plot(table, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
