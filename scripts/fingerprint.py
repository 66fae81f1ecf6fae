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


def _refused(call: Callable[[], Any]) -> str:
    """The exception a refused call raises, as its class name and message ("accepted" when nothing is raised)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return "accepted"


def _drive(pol: Any, rng: np.random.Generator, steps: int) -> Any:
    """Every call of the protocol, in a fixed mix: batches handed out, one pull of each given back, an outside pull
    adopted, results told one by one and in batches (uniform rewards in [0, 1]); what happened, step by step."""
    log = []
    for step in range(steps):
        batch = pol.ask_batch(3)
        if not batch:
            pull = pol.ask()
            batch = [] if pull is None else [pull]
        if not batch and not pol.outstanding:
            break
        if len(batch) > 1:
            pol.give_back(batch.pop(0))
        if step % 4 == 1:
            batch.append(pol.adopt(int(rng.integers(pol.n_arms)), int(rng.integers(pol.M))))
        values = rng.uniform(0.0, 1.0, size=len(batch)).tolist()
        if step % 2 and batch:
            pol.tell_batch(batch, values)
        else:
            for pull, v in zip(batch, values):
                pol.tell(pull, v)
        log.append([[p.id, p.arm, p.fidelity] for p in batch] + [pol.cost, pol.done])
    for pull in pol.outstanding:
        pol.tell(pull, 0.5)
    return log


def _protocol_run(name: str, inst: Any) -> Any:
    """One registered policy driven through every call of the protocol on `inst` (see :func:`policy_protocol`)."""
    from mf_sched import Policy, get_policy, policy_for

    params = get_policy(name).example_params(inst)
    pol = policy_for(name, inst, seed=2, delta=0.1, budget=600.0, **params)
    pol.stall_warning_pulls = None
    pol.record_history()
    rec: dict[str, Any] = {"drive": _drive(pol, np.random.default_rng(11), 25)}
    saved = json.loads(json.dumps(pol.state_dict()))
    twin = Policy.from_state_dict(saved)
    rec["continued"] = _drive(pol, np.random.default_rng(12), 15)
    rec["twin"] = _drive(twin, np.random.default_rng(12), 15)
    replayed = policy_for(name, inst, seed=2, delta=0.1, budget=600.0, **params)
    replayed.replay(pol.history)
    rec["replayed_state"] = replayed.state_dict()
    rec["state"] = pol.state_dict()
    rec["recommendation"] = pol.recommendation().to_dict()
    rec["describe"] = pol.describe()
    rec["statistics"] = [pol.counts, pol.means, pol.cost, pol.committed_cost, pol.n_pulls, pol.done]
    rec["refused"] = [
        _refused(lambda: pol.tell(10**6, 0.5)),
        _refused(lambda: pol.tell(0, 0.5)),
        _refused(lambda: pol.give_back("x")),
        _refused(lambda: pol.adopt(pol.n_arms, 0)),
        _refused(lambda: pol.ask_batch(-1)),
        _refused(lambda: replayed.replay([("ask", 99, 0)])),
        _refused(lambda: replayed.replay([("jump",)])),
    ]
    fresh = policy_for(name, inst, seed=2, delta=0.1, budget=600.0, **params)
    pull = fresh.ask()
    if pull is not None:
        rec["refused"].append(_refused(lambda: fresh.tell(pull, float("nan"))))
        rec["refused"].append(_refused(lambda: fresh.tell_batch([pull, pull], [0.1, 0.2])))
    damaged = []
    for section, key, value in (
        ("base", "_cost", 1e9),
        ("base", "_next_id", -1),
        ("base", "_outstanding", [[0, 99, 0, True]]),
        ("format", None, 99),
        ("policy", None, "nope"),
        ("config", "seed", 3),
    ):
        bad = json.loads(json.dumps(saved))
        if key is None:
            bad[section] = value
        else:
            bad[section][key] = value
        damaged.append(_refused(lambda bad=bad: Policy.from_state_dict(bad)))
        damaged.append(_refused(lambda bad=bad: twin.load_state_dict(bad)))
    rec["damaged"] = damaged
    rec["twin_after_damage"] = twin.state_dict()
    return rec


@scenario
def policy_protocol() -> Any:
    """The ask/tell protocol beyond ask and tell (`mf_sched.policy`): give-back, adopt, tell_batch, a saved state
    loaded back and continued, a recorded history replayed, a round completed from per-arm totals, the answers
    (`recommendation`, `describe`, statistics) and the messages of refused calls and of damaged saved states."""
    from mf_sched import list_policies, published_instance
    from mf_sched.constrained import constrained_policy
    from mf_sched.constrained.tang2024 import tang2024_instance

    inst = published_instance("poiani2024-4x5")
    out: dict[str, Any] = {}
    for name in sorted(list_policies()):
        if name in ("gp-ucb", "mf-gp-ucb", "sfsr", "uslp"):
            continue
        try:
            out[name] = _protocol_run(name, inst)
        except Exception as e:  # noqa: BLE001
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    # rounds completed from per-arm totals (the simulators' sufficient-statistics path) and one tell per pull
    for name in ("sfsr", "uslp"):
        pol = constrained_policy(name, tang2024_instance("D1P"), pull_budget=3000, seed=3)
        rng = np.random.default_rng(5)
        rounds = []
        for r in range(3):
            if pol.done:
                break
            if r == 1:
                pulls = pol.ask_batch()
                pol.tell_batch(pulls, rng.normal(size=(len(pulls), pol.value_width)))
                rounds.append([[p.arm, p.fidelity] for p in pulls])
                continue
            counts = pol.round_counts()
            sums = rng.normal(size=(pol.n_arms, pol.value_width)) * counts[:, None]
            pol.observe_round_totals(counts, sums, np.abs(sums[:, 0]) + counts)
            rounds.append([counts, pol.describe()])
        out[f"{name}/totals"] = {
            "rounds": rounds,
            "refused": _refused(lambda pol=pol: pol.observe_round_totals(pol.round_counts(), 0.0, 0.0)),
            "state": pol.state_dict(),
            "recommendation": pol.recommendation().to_dict(),
        }
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
