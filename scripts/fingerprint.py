"""Behaviour fingerprint: the exact trials, recommendations and saved states of scripted scenarios.

A refactoring that claims to keep the behaviour identical runs this before and after and compares:

```
python scripts/fingerprint.py --out /tmp/before.json     # on the commit before
python scripts/fingerprint.py --out /tmp/after.json      # on the change
python scripts/fingerprint.py --compare /tmp/before.json /tmp/after.json
```

Every scenario records what a user sees (the pulls a policy issued, its recommendation, its saved state as
JSON; each Optuna trial's parameters, state, reported values and attributes; each Ray decision; the calibration
and bound numbers) and hashes it. Wall times and other clock-dependent fields are left out. It is a
development tool, not a test: the behaviour it pins is whatever the code did, so an intended change of
behaviour simply produces a new fingerprint.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCENARIOS: dict[str, Callable[[], Any]] = {}


def scenario(fn: Callable[[], Any]) -> Callable[[], Any]:
    SCENARIOS[fn.__name__] = fn
    return fn


def clean(x: Any) -> Any:
    """JSON-able, with floats rounded to 12 significant digits and clock fields dropped."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0])) if "time" not in str(k)}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x) or math.isinf(x):
            return repr(x)
        return float(f"{x:.12g}")
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    if hasattr(x, "to_dict"):
        return clean(x.to_dict())
    return repr(x)


# ---------------------------------------------------------------------------------------------------------------
# the core: every registered policy, played on published instances


def _play(name: str, inst_name: str, seed: int, **kw: Any) -> Any:
    from mf_sched import policy_for, published_instance, run_policy

    inst = published_instance(inst_name)
    try:
        pol = policy_for(name, inst, seed=seed, **kw)
    except (TypeError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    res = run_policy(pol, inst, seed=seed + 100, max_pulls=3000, trace=True)
    d = res.to_dict()
    d["trace"] = [list(map(int, res.trace[0])), list(map(int, res.trace[1]))] if res.trace is not None else None
    try:
        d["state"] = json.loads(json.dumps(pol.state_dict(), default=repr))
    except Exception as e:  # noqa: BLE001
        d["state"] = f"{type(e).__name__}"
    return d


@scenario
def policies() -> Any:
    from mf_sched import list_policies

    out = {}
    for name in sorted(list_policies()):
        if name in ("gp-ucb", "mf-gp-ucb"):
            continue
        for inst in ("poiani2024-4x5", "poiani2022-synthetic-a"):
            for kw in ({"delta": 0.1}, {"budget": 400.0}):
                out[f"{name}/{inst}/{sorted(kw)}"] = _play(name, inst, 0, **kw)
    return out


@scenario
def policies_workers() -> Any:
    from mf_sched import policy_for, published_instance, run_policy

    inst = published_instance("poiani2024-4x5")
    out = {}
    for name in ("iise", "se", "sh", "hyperband", "race", "iise-rungs", "mf-grad"):
        try:
            pol = policy_for(name, inst, seed=1, delta=0.1)
        except (TypeError, ValueError) as e:
            out[name] = str(e)
            continue
        out[name] = run_policy(pol, inst, seed=3, workers=3, max_pulls=2000).to_dict()
    return out


@scenario
def gp_policies() -> Any:
    from mf_sched import get_policy

    out = {}
    for name in ("gp-ucb", "mf-gp-ucb"):
        cls = get_policy(name)
        out[name] = {"signature": str(__import__("inspect").signature(cls))}
    # a run on a small continuous problem (Currin, two fidelities)

    return out | _gp_run()


def _gp_run() -> Any:
    from mf_sched import get_policy
    from mf_sched.continuous import functions

    f = functions.currin()
    out = {}
    for name in ("mf-gp-ucb", "gp-ucb"):
        p = get_policy(name)(f.space, f.ladder, budget=120, seed=0, acq_maxfun=100)
        log = []
        while not p.done:
            q = p.ask()
            y = f(p.x(q), q.fidelity if name == "mf-gp-ucb" else f.ladder.M - 1)
            p.tell(q, y)
            log.append((q.arm, q.fidelity, y))
        out[name] = {
            "log": log,
            "rec": p.recommendation().to_dict(),
            "state": json.loads(json.dumps(p.state_dict(), default=repr)),
        }
    return out


@scenario
def bounds() -> Any:
    from mf_sched import published_instance
    from mf_sched.sim import bounds as b

    out = {}
    for name in ("poiani2024-4x5", "poiani2024-5x2", "poiani2022-synthetic-a"):
        inst = published_instance(name)
        out[name] = {
            "lb": b.instance_lower_bound(inst, 0.1),
            "tight": b.instance_tight_lower_bound(inst, 0.1),
        }
        for fn in ("kandasamy_regret_lower_bound", "wang_regret_lower_bound", "mfucb_analysis"):
            try:
                f = getattr(b, fn)
                import inspect

                params = inspect.signature(f).parameters
                kw: dict[str, Any] = {}
                if "means" in params:
                    kw["means"] = inst.means
                if "costs" in params:
                    kw["costs"] = inst.ladder.costs
                if "zeta" in params:
                    kw["zeta"] = inst.ladder.zeta
                if "sigma" in params:
                    kw["sigma"] = 0.5
                if "kind" in params:
                    kw["kind"] = "gaussian"
                out[name][fn] = f(**kw)
            except Exception as e:  # noqa: BLE001
                out[name][fn] = f"{type(e).__name__}: {e}"
    return out


# ---------------------------------------------------------------------------------------------------------------
# learning curves and calibration


def _curves(seed: int = 0, n: int = 40, epochs: int = 27) -> Any:
    from mf_sched.curves.learning_curves import LearningCurves

    rng = np.random.default_rng(seed)
    q = rng.uniform(0.5, 0.95, n)
    rate = rng.uniform(0.05, 0.5, n)
    recs = []
    for i in range(n):
        for s in range(2):
            for t in range(1, epochs + 1):
                v = q[i] * (1 - math.exp(-rate[i] * t)) + 0.01 * rng.standard_normal()
                recs.append({"config": i, "fidelity": t, "acc": v, "seed": s})
    return LearningCurves.from_records(recs, metric="acc", mode="max", seed="seed")


@scenario
def calibration() -> Any:
    from mf_sched.curves import calibration as c

    lc = _curves()
    out: dict[str, Any] = {"lc": repr(lc)}
    for fid in ([1, 3, 9, 27], [2, 6, 18, 27]):
        for method in ("bootstrap",):
            cal = c.calibrate(lc, fid, method=method, seed=0)
            out[f"{fid}/{method}"] = cal.to_dict() if hasattr(cal, "to_dict") else repr(cal)
            out[f"{fid}/{method}/repr"] = repr(cal)
    out["suggest"] = repr(c.suggest_ladder(lc, seed=0))
    rv = lc.values_at([1, 3, 9, 27])
    out["rv"] = repr(rv)
    out["sigma"] = c.estimate_sigma(rv)
    out["costs"] = c.estimate_costs(rv)
    out["coverage"] = repr(
        c.holdout_coverage(rv, seed=1) if "seed" in str(__import__("inspect").signature(c.holdout_coverage)) else None
    )
    out["bound_count"] = [c.bound_count(n, 0.9, 0.95, m) for n in (30, 50, 200) for m in ("bootstrap", "order")]
    return out


# ---------------------------------------------------------------------------------------------------------------
# racing: the engine and the race policy


@scenario
def race_policy() -> Any:
    from mf_sched import FidelityLadder, get_policy

    out = {}
    ladder = FidelityLadder(costs=[1, 3, 9, 27], zeta=[0.3, 0.1, 0.03, 0.0], resources=[1, 3, 9, 27])
    rng = np.random.default_rng(4)
    K = 30
    q = rng.uniform(0.5, 0.95, K)
    rate = rng.uniform(0.05, 0.5, K)
    for kw in ({}, {"bound": "zeta+"}, {"metric_family": "accuracy"}):
        try:
            pol = get_policy("race")(n_arms=K, ladder=ladder, seed=0, **kw)
        except TypeError as e:
            out[str(kw)] = str(e)
            continue
        log = []
        for _ in range(2000):
            p = pol.ask()
            if p is None:
                break
            r = ladder.resources[p.fidelity]
            y = float(q[p.arm] * (1 - math.exp(-rate[p.arm] * r)) + 0.005 * rng.standard_normal())
            pol.tell(p, y)
            log.append((p.arm, p.fidelity, round(y, 9)))
        out[str(kw)] = {
            "log": log,
            "rec": pol.recommendation().to_dict(),
            "state": json.loads(json.dumps(pol.state_dict(), default=repr)),
        }
    return out


# ---------------------------------------------------------------------------------------------------------------
# Optuna


def _study_record(study: Any) -> Any:
    rows = []
    for t in study.get_trials(deepcopy=False):
        rows.append(
            {
                "n": t.number,
                "state": t.state.name,
                "params": t.params,
                "value": t.value,
                "iv": dict(sorted(t.intermediate_values.items())),
                "ua": {k: v for k, v in t.user_attrs.items()},
                "sa": {k: v for k, v in t.system_attrs.items() if "heartbeat" not in k},
            }
        )
    return {
        "trials": rows,
        "study_ua": dict(study.user_attrs),
        "study_sa": dict(study._storage.get_study_system_attrs(study._study_id)),
    }


def _objective(kind: str) -> Callable[[Any], float]:
    from mf_sched.integrations.optuna import train_to

    def acc(x: float, e: int) -> float:
        return (0.9 - 0.3 * (x - 0.6) ** 2) * (1 - math.exp(-0.25 * e * (0.5 + x)))

    def objective(trial: Any) -> float:
        if kind == "grid":
            x = trial.suggest_categorical("x", [0.1, 0.2, 0.35, 0.5, 0.6, 0.7, 0.8, 0.95])
        else:
            x = trial.suggest_float("x", 0.0, 1.0)
        top = train_to(trial)
        v = 0.0
        for e in range(1, top + 1):
            v = acc(x, e)
            trial.report(v, e)
            if trial.should_prune():
                import optuna

                raise optuna.TrialPruned()
        return v

    return objective


@scenario
def optuna_studies() -> Any:
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    out = {}
    configs = {
        "grid-default": ("grid", {}, {}, 40),
        "grid-zeta+": ("grid", {"bound": "zeta+"}, {}, 40),
        "grid-budget": ("grid", {"budget": 60}, {"budget": 60}, 60),
        "cont-tpe": ("cont", {"n_candidates": 8}, {}, 40),
        "cont-sobol": ("cont", {"n_candidates": 8, "proposer": "sobol"}, {}, 40),
    }
    for name, (kind, skw, pkw, n) in configs.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sampler = MFSampler(seed=0, max_resource=27, **skw)
                pruner = MFPruner(max_resource=27, **pkw)
                study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
                study.optimize(_objective(kind), n_trials=n)
                rec = sampler.recommendation(study)
                spent = sampler.resources_spent(study)
                eng = sampler.engine(study)
                eng_d = eng.state_dict() if eng is not None and hasattr(eng, "state_dict") else repr(eng)
            out[name] = {"study": _study_record(study), "rec": clean(rec), "spent": spent, "engine": clean(eng_d)}
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"
    # MFPruner behind TPE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.TPESampler(seed=0), pruner=MFPruner(max_resource=27)
        )
        study.optimize(_objective("cont"), n_trials=30)
    out["tpe+mfpruner"] = _study_record(study)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Ray schedulers, driven by stub trials as Tune would


@scenario
def ray_schedulers() -> Any:
    from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler, RungScheduler
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    from mf_sched import FidelityLadder

    ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])
    quality = [0.9, 0.85, 0.5, 0.3, 0.88, 0.1, 0.7, 0.86]

    class Ctl:
        def __init__(self, trials: list) -> None:
            self.trials = trials

        def get_trials(self) -> list:
            return self.trials

        def stop_trial(self, t: Any) -> None:
            t.set_status(Trial.TERMINATED)

    def drive(sched: Any, n: int) -> Any:
        trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={"q": quality[i]}) for i in range(n)]
        ctl = Ctl(trials)
        log = []
        for t in trials:
            sched.on_trial_add(ctl, t)
        for t in trials[:3]:
            t.set_status(Trial.RUNNING)
        epochs = {t.trial_id: 0 for t in trials}
        for _ in range(80):
            for t in trials:
                if t.status != Trial.RUNNING:
                    continue
                epochs[t.trial_id] += 1
                e = epochs[t.trial_id]
                res = {"training_iteration": e, "acc": t.config["q"] * (1 - 0.2 / e), "should_checkpoint": True}
                act = sched.on_trial_result(ctl, t, res)
                log.append((t.trial_id, e, act))
                if act == TrialScheduler.STOP:
                    t.set_status(Trial.TERMINATED)
                    sched.on_trial_complete(ctl, t, res)
                elif act == TrialScheduler.PAUSE:
                    t.set_status(Trial.PAUSED)
            while sum(t.status == Trial.RUNNING for t in trials) < 3:
                nxt = sched.choose_trial_to_run(ctl)
                if nxt is None:
                    break
                nxt.set_status(Trial.RUNNING)
            if all(t.status == Trial.TERMINATED for t in trials):
                break
        cert = sched.certificate()
        return {
            "log": log,
            "epochs": epochs,
            "cert": clean(cert),
            "debug": sched.debug_string(),
            "best": sched.best_config() if hasattr(sched, "best_config") else None,
        }

    out = {}
    specs = {
        "iise": lambda: IISEScheduler(ladder, rule="iise", metric="acc", mode="max", sigma=0.01, n_trials=8),
        "iise-default": lambda: IISEScheduler(metric="acc", mode="max", max_t=9),
        "async": lambda: AsyncIISEScheduler(ladder, rule="iise", metric="acc", mode="max", sigma=0.01),
        "race": lambda: RungScheduler(ladder, rule="race", metric="acc", mode="max", n_trials=8),
        "race-zeta": lambda: RungScheduler(ladder, rule="race", metric="acc", mode="max", n_trials=8, bound="zeta+"),
    }
    for name, mk in specs.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name] = drive(mk(), 8)
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"
    return out


def _ray_run(make: Callable[[], Any], n: int, **how: Any) -> Any:
    """Drive a Ray scheduler through Tune's calls with stub trials (a richer script than `ray_schedulers`:
    trials that end, fail and are retried, diverge, lose their checkpoint, are paused behind the scheduler's
    back; a restore from the saved state; the callback's race metrics after every result).

    `how`: `workers`; `epochs` (each trial's natural end); `stop_crit` (give trials a stopping criterion);
    `checkpoint`; `fail` ({trial: epoch}: an error there, retried once unless `retry=False`); `nan`
    ({trial: epoch}); `skip` ({trial: epoch}: a result without the metric); `restart` (a resumed trial
    restarts from epoch 0); `restore_at` (loop step); `outside_pause` ((step, trial): Ray pauses it);
    `curve` (value of trial i at epoch e); `metric`; `set_props`; `staged` (trials added at the start; one
    more every other step)."""
    import copy
    import tempfile

    from mf_sched.integrations.ray import SchedulerStateCallback, load_certificate
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    metric = how.get("metric", "acc")
    epochs_max = how.get("epochs", 9)
    fail, nan = dict(how.get("fail", {})), how.get("nan", {})
    curve = how.get("curve", lambda i, e: [0.9, 0.85, 0.5, 0.3, 0.88, 0.1, 0.7, 0.86][i % 8] * (1 - 0.2 / e))
    log: list[Any] = []
    last: dict[str, dict[str, Any]] = {}  # each trial's last result (Trial.last_result)

    class Ctl:
        def __init__(self) -> None:
            self.trials: list[Any] = []
            self.sched: Any = None

        def get_trials(self) -> list:
            return self.trials

        def stop_trial(self, t: Any) -> None:  # as TuneController.stop_trial
            log.append(("stop_trial", t.trial_id, t.status))
            if t.status in (Trial.PENDING, Trial.PAUSED):
                self.sched.on_trial_remove(self, t)
            elif t.status == Trial.RUNNING:
                self.sched.on_trial_complete(self, t, dict(last.get(t.trial_id, {})))
            if t.status not in (Trial.ERROR, Trial.TERMINATED):
                t.set_status(Trial.TERMINATED)

    ctl = Ctl()
    sched = ctl.sched = make()
    if how.get("set_props"):
        log.append(("props", sched.set_search_properties(metric, how.get("mode", "max"))))
    callback = SchedulerStateCallback(sched)
    crit = {"training_iteration": epochs_max} if how.get("stop_crit") else None

    def add(i: int) -> None:
        t = Trial("__fake", trial_id=f"t{i}", stub=True, config={"i": i}, stopping_criterion=crit)
        ctl.trials.append(t)
        sched.on_trial_add(ctl, t)

    for i in range(how.get("staged", n)):
        add(i)
    epochs = {f"t{i}": 0 for i in range(n)}
    paused_at: dict[str, int] = {}
    out: dict[str, Any] = {"log": log}
    try:
        for step in range(200):
            if len(ctl.trials) < n and step % 2 == 0:
                add(len(ctl.trials))  # a searcher adds trials as the experiment goes
            if how.get("restore_at") == step:
                state = copy.deepcopy(sched.get_state())
                sched = ctl.sched = make()
                callback = SchedulerStateCallback(sched)
                callback.set_state(state)
                for t in ctl.trials:
                    if t.status == Trial.RUNNING:
                        t.set_status(Trial.PENDING)
                    sched.on_trial_add(ctl, t)
                log.append(("restored", sorted((t.trial_id, t.status) for t in ctl.trials)))
            if how.get("outside_pause", (None,))[0] == step:
                t = ctl.trials[how["outside_pause"][1]]
                if t.status == Trial.RUNNING:
                    t.set_status(Trial.PAUSED)
                    log.append(("outside_pause", t.trial_id))
            while sum(t.status == Trial.RUNNING for t in ctl.trials) < how.get("workers", 3):
                nxt = sched.choose_trial_to_run(ctl)
                if nxt is None:
                    break
                log.append(("run", nxt.trial_id, nxt.status))
                if nxt.status == Trial.PAUSED and how.get("restart"):
                    epochs[nxt.trial_id] = 0
                nxt.set_status(Trial.RUNNING)
            for i, t in enumerate(ctl.trials):
                if t.status != Trial.RUNNING:
                    continue
                tid = t.trial_id
                epochs[tid] += 1
                e = epochs[tid]
                if fail.get(tid) == e:
                    del fail[tid]
                    t.set_status(Trial.ERROR)
                    sched.on_trial_error(ctl, t)
                    log.append(("error", tid, e))
                    if how.get("retry", True):
                        epochs[tid] = 0
                        t.set_status(Trial.PENDING)  # retried (FailureConfig(max_failures=1)): re-added, same id
                        sched.on_trial_add(ctl, t)
                    continue
                v = math.nan if nan.get(tid) == e else curve(i, e)
                res = {"training_iteration": e, metric: v, "should_checkpoint": how.get("checkpoint", True)}
                if how.get("skip", {}).get(tid) == e:
                    del res[metric]  # a result without the metric
                if e >= epochs_max:
                    res["done"] = True
                last[tid] = res
                if crit and e >= epochs_max:
                    act = TrialScheduler.STOP  # Tune stops it by its criterion without asking the scheduler
                else:
                    act = sched.on_trial_result(ctl, t, res)
                shown = dict(res)
                callback.on_trial_result(0, ctl.trials, t, shown)
                log.append((tid, e, act, {k: v for k, v in shown.items() if k.startswith("race/")}))
                if act == TrialScheduler.STOP or (act == TrialScheduler.CONTINUE and e >= epochs_max):
                    t.set_status(Trial.TERMINATED)
                    sched.on_trial_complete(ctl, t, res)
                elif act == TrialScheduler.PAUSE:
                    t.set_status(Trial.PAUSED)
                    paused_at[tid] = e
            if step % 7 == 0:
                log.append(("debug", sched.debug_string()))
            if len(ctl.trials) == n and all(t.status in (Trial.TERMINATED, Trial.ERROR) for t in ctl.trials):
                break
    except Exception as e:  # noqa: BLE001
        out["raised"] = f"{type(e).__name__}: {e}"
    # synchronous IISE stops a rung's losers in the order of a set of trial ids (hash order): sort each run
    i = 0
    while i < len(log):
        j = i
        while j < len(log) and log[j][0] == "stop_trial":
            j += 1
        log[i:j] = sorted(log[i:j])
        i = j + 1 if j == i else j
    out["epochs"] = epochs
    out["cert"] = clean(sched.certificate())
    out["best"] = sched.best_config()
    out["debug"] = sched.debug_string()
    out["state"] = clean(sched.get_state())
    out["metrics"] = {t.trial_id: sched.race_metrics(t.trial_id, last.get(t.trial_id)) for t in ctl.trials}
    with tempfile.TemporaryDirectory() as d:
        callback.write_state(d)
        c = load_certificate(d)
        out["loaded"] = None if c is None else clean(c)
    return out


@scenario
def ray_scheduler_paths() -> Any:
    """The rule branches `ray_schedulers` leaves out: rungs inferred from the first finished trial, the
    stopping criterion, best-first, async racing (no pause), no checkpoints, a loss (min, family change, study
    size buckets), a metric without a family, failures and retries, divergence, restores, synchronous IISE's
    release/unblock and its refusals, asynchronous IISE."""
    from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler, RungScheduler

    from mf_sched import FidelityLadder

    ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])
    acc = {"metric": "acc", "mode": "max"}

    def loss(i: int, e: int) -> float:
        return 2.5 * (0.3 + 0.07 * (i % 11)) * (1 + 2.0 / e) / (1 + 0.5 * (e >= 5))

    def reward(i: int, e: int) -> float:
        return (i % 2 * 2 - 1) * (5.0 + i) + e * (1 + 0.1 * i)

    runs: dict[str, tuple[Callable[[], Any], int, dict[str, Any]]] = {
        "race-inferred-at-first-finish": (lambda: RungScheduler(), 8, {"set_props": True}),
        "race-stop-criterion-best-first": (
            lambda: IISEScheduler(**acc, schedule="best-first", order="estimate"),
            9,
            {"stop_crit": True, "epochs": 27, "fail": {"t2": 4}, "nan": {"t5": 3}, "workers": 2},
        ),
        "race-order-bound-restore": (
            lambda: IISEScheduler(**acc, max_t=27, order="bound", fixed_arms=True, tolerance=0.01),
            8,
            {"epochs": 27, "restore_at": 9, "outside_pause": (5, 0), "fail": {"t6": 2}},
        ),
        "async-race": (lambda: AsyncIISEScheduler(**acc, max_t=9), 8, {"fail": {"t1": 2}, "nan": {"t4": 1}}),
        "race-no-checkpoint": (
            lambda: IISEScheduler(**acc, max_t=9),
            8,
            {"checkpoint": False, "skip": {"t1": 1, "t2": 3}},
        ),
        "race-restart-without-checkpoint": (lambda: IISEScheduler(**acc, max_t=9), 8, {"restart": True}),
        "race-loss-min": (
            lambda: IISEScheduler(metric="loss", mode="min", max_t=9, sigma=0.02),
            26,
            {"metric": "loss", "curve": loss, "workers": 4, "staged": 6},
        ),
        "race-loss-zeta+": (
            lambda: RungScheduler(metric="loss", mode="min", max_t=9, bound="zeta+", metric_family="loss"),
            10,
            {"metric": "loss", "curve": loss},
        ),
        "race-negated-loss-raised": (
            lambda: IISEScheduler(metric="r", mode="max"),
            8,
            {"metric": "r", "curve": lambda i, e: (i % 7 - 3) * 10.0 + e * (1 + 0.1 * i)},
        ),
        "race-reward-no-family": (
            lambda: IISEScheduler(metric="r", mode="max"),
            8,
            {"metric": "r", "curve": reward},
        ),
        "iise-sync-faults": (
            lambda: IISEScheduler(ladder, rule="iise", **acc, sigma=0.01, eta=2),
            8,
            {"fail": {"t1": 2}, "nan": {"t3": 3}, "workers": 4},
        ),
        "iise-sync-crash": (
            lambda: IISEScheduler(ladder, rule="iise", **acc, sigma=0.01),
            8,
            {"fail": {"t7": 3}, "retry": False, "workers": 8},
        ),
        "iise-sync-outside-pause": (
            lambda: IISEScheduler(ladder, rule="iise", **acc, sigma=0.01),
            6,
            {"outside_pause": (2, 0), "workers": 6},
        ),
        "race-outside-pause-all-running": (
            lambda: IISEScheduler(**acc, max_t=9),
            8,
            {"outside_pause": (4, 5), "workers": 8},
        ),
        "iise-sync-restore": (
            lambda: RungScheduler(ladder, rule="iise", **acc, sigma=0.01, n_trials=8),
            8,
            {"restore_at": 4, "workers": 3},
        ),
        "iise-sync-no-checkpoint": (
            lambda: IISEScheduler(ladder, rule="iise", **acc, sigma=0.01),
            6,
            {"checkpoint": False},
        ),
        "iise-sync-restart": (
            lambda: IISEScheduler(ladder, rule="iise", **acc, sigma=0.01),
            6,
            {"restart": True},
        ),
        "iise-async-min": (
            lambda: AsyncIISEScheduler(ladder, rule="iise", metric="loss", mode="min", sigma=0.05),
            8,
            {"metric": "loss", "curve": loss, "fail": {"t0": 1}, "nan": {"t2": 3}},
        ),
    }
    out: dict[str, Any] = {}
    for name, (mk, n, how) in runs.items():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out[name] = _ray_run(mk, n, **how)
            out[name]["warnings"] = sorted({str(w.message) for w in caught})
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"
    # the arguments each constructor refuses (the message names the argument)
    bad = {
        "rule": dict(rule="halving"),
        "mode": dict(mode="up"),
        "sync-race": dict(synchronous=True),
        "eta-race": dict(eta=2),
        "family": dict(metric_family="nope"),
        "schedule": dict(schedule="fifo"),
        "bound": dict(bound="x"),
        "iise-inferred": dict(rule="iise", max_t=9),
    }
    for name, kw in bad.items():
        try:
            RungScheduler(**kw)
            out[f"refused/{name}"] = None
        except (TypeError, ValueError) as e:
            out[f"refused/{name}"] = f"{type(e).__name__}: {e}"
    s = RungScheduler(metric="acc", mode="max")
    out["search-properties"] = [s.set_search_properties("other", "max"), s.set_search_properties("acc", "min")]
    for name, call in {
        "mode": lambda: RungScheduler().set_search_properties("acc", "up"),
        "no-metric": lambda: RungScheduler(max_t=9).on_trial_result(None, None, {"acc": 1.0}),
    }.items():
        try:
            out[f"refused/{name}"] = call()
        except (TypeError, ValueError) as e:
            out[f"refused/{name}"] = f"{type(e).__name__}: {e}"
    s = AsyncIISEScheduler(ladder, rule="iise", metric="acc", mode="max")
    out["attributes"] = {
        name: [getattr(x, a) for a in ("rule", "synchronous", "pause", "schedule", "tolerance", "bound", "time_attr")]
        for name, x in (("async-iise", s), ("async", AsyncIISEScheduler(max_t=9)), ("default", IISEScheduler()))
    }
    return out


def digest(x: Any) -> str:
    return hashlib.sha256(json.dumps(clean(x), sort_keys=True).encode()).hexdigest()[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--compare", nargs=2, type=Path)
    a = ap.parse_args()
    if a.compare:
        before, after = (json.loads(p.read_text()) for p in a.compare)
        bad = 0
        for k in sorted(set(before) | set(after)):
            same = before.get(k, {}).get("digest") == after.get(k, {}).get("digest")
            print(f"{'same' if same else 'DIFFERENT':9s} {k}")
            if not same:
                bad += 1
                _diff(before.get(k, {}).get("data"), after.get(k, {}).get("data"), k)
        return 1 if bad else 0
    result = {}
    for name, fn in SCENARIOS.items():
        if a.only and name not in a.only:
            continue
        try:
            data = clean(fn())
        except Exception:  # noqa: BLE001
            data = {"crashed": traceback.format_exc(limit=3)}
        result[name] = {"digest": digest(data), "data": data}
        print(f"{result[name]['digest']} {name}", flush=True)
    if a.out:
        a.out.write_text(json.dumps(result, sort_keys=True))
    return 0


def _diff(a: Any, b: Any, path: str, limit: list[int] | None = None) -> None:
    limit = limit if limit is not None else [0]
    if limit[0] > 8:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _diff(a.get(k), b.get(k), f"{path}.{k}", limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", limit)
    elif a != b:
        limit[0] += 1
        print(f"    {path}: {str(a)[:150]} != {str(b)[:150]}")


if __name__ == "__main__":
    raise SystemExit(main())
