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


@scenario
def bounds_paths() -> Any:
    """Every bound function on the paths the `bounds` scenario leaves out: Bernoulli and `form="gap"`, the
    decomposition and the automatic switch to it (K·M > 1,000), the MF-UCB caps, a bound's value at a capital."""
    from mf_sched.sim import bounds as b

    rng = np.random.default_rng(7)
    mu = [[0.7, 0.8, 0.9], [0.75, 0.775, 0.8], [0.5, 0.6, 0.7], [0.5, 0.55, 0.6], [0.3, 0.45, 0.5]]
    lam, z = [1.0, 1.1, 1.2], [0.3, 0.15, 0.0]
    out: dict[str, Any] = {"gaps": b.gaps(np.array(mu), np.array(z))}
    out["cost_bernoulli"] = b.cost_lower_bound(mu, lam, z, 0.05, kind="bernoulli")
    out["cost_proxy"] = b.cost_lower_bound(mu, lam, z, 0.2, sigma=0.5, proxy=True)
    for fn in ("kandasamy_regret_lower_bound", "wang_regret_lower_bound"):
        for kind in ("bernoulli", "gaussian"):
            for form in ("kl", "gap"):
                lb = getattr(b, fn)(mu, lam, z, kind=kind, sigma=0.5, form=form)
                out[f"{fn}/{kind}/{form}"] = {"lb": lb, "per_arm": lb.per_arm, "at": [lb.at(c) for c in (1, 50, 1e4)]}
    a = b.mfucb_analysis(mu, lam, z, 0.5, rho=3.0)
    out["mfucb"] = {
        "a": a,
        "gaps": a.gaps,
        "caps": a.caps(5000),
        "free": b.mfucb_low_fidelity_caps(100, 2.0, [0.1, 0.0], 1.0),
    }
    base = np.sort(rng.uniform(0.2, 0.8, 300))
    big = np.stack([base - 0.04, base - 0.01, base - 0.005, base], axis=1) + rng.uniform(-0.003, 0.003, (300, 4))
    big[:, -1] = base
    for method in ("auto", "decomposition", "cutting-plane"):
        for name, means, costs, zeta in (
            ("5x2", [[0.4, 0.5]] * 4 + [[0.5, 0.6]], [0.5, 5.0], [0.1, 0.0]),
            ("300x4", big, [1.0, 2.0, 4.0, 8.0], [0.05, 0.02, 0.01, 0.0]),
        ):
            if name == "300x4" and method == "cutting-plane":
                continue
            lb = b.tight_lower_bound(means, costs, zeta, 0.01, sigma=0.2, method=method, max_iter=60)
            out[f"tight/{name}/{method}"] = {"lb": lb, "fid": lb.optimal_fidelity(1e-3)}
    return out


@scenario
def gp_options() -> Any:
    """MF-GP-UCB and GP-UCB with the options the `gp_policies` scenario leaves at their defaults, parallel workers,
    given-back and adopted pulls, a mixed (float, int, categorical) space, the acquisition and a replayed history."""
    from mf_sched import get_policy
    from mf_sched.continuous import functions
    from mf_sched.continuous.space import Categorical, Float, Int, SearchSpace
    from mf_sched.ladder import FidelityLadder

    f = functions.currin()
    out: dict[str, Any] = {}
    variants = {
        "lhs-ard-code": {"init_design": "lhs", "kernel": "se-ard", "beta": "code"},
        "kmeans-matern-fit": {"init_design": "kmeans", "kernel": "matern52", "noise_var": "fit", "refit_every": 3},
        "ladder-gamma-beta": {"zeta": "ladder", "gamma": [0.05], "beta": 2.0, "polish": False},
        "factors-noise": {"gamma_factor": 2.0, "zeta_factor": 1.5, "noise_var": 1e-3, "init_capital": 25.0},
    }
    for label, kw in variants.items():
        for name in ("mf-gp-ucb", "gp-ucb"):
            p = get_policy(name)(f.space, f.ladder, budget=200, seed=3, acq_maxfun=60, **kw)
            log = []
            while not p.done:
                q = p.ask()
                y = f(p.x(q), q.fidelity)
                p.tell(q, y)
                log.append((q.arm, q.fidelity, y))
            out[f"{name}/{label}"] = {"log": log, "rec": p.recommendation().to_dict(), "state": p.state_dict()}
    # parallel workers, a given-back pull, an adopted outside point, the acquisition, history replay
    p = get_policy("mf-gp-ucb")(f.space, f.ladder, budget=220, seed=5, acq_maxfun=60)
    p.record_history()
    log = []
    first = p.ask_batch()
    p.give_back(first[0])
    p.tell_batch(first[1:], [f(p.x(q), q.fidelity) for q in first[1:]])
    extra = p.adopt_point({"x0": 0.25, "x1": 0.75}, 1)
    p.tell(extra, f(p.x(extra), 1))
    while not p.done:
        batch = p.ask_batch(3)
        if not batch:
            break
        log.append([(q.arm, q.fidelity) for q in batch])
        p.tell_batch(batch, [f(p.x(q), q.fidelity) for q in batch])
    grid = np.linspace(0.0, 1.0, 7)
    Z = np.array([[u, v] for u in grid for v in grid])
    fresh = get_policy("mf-gp-ucb")(f.space, f.ladder, budget=220, seed=5, acq_maxfun=60)
    fresh.replay(p.history)
    out["workers"] = {
        "log": log,
        "rec": p.recommendation().to_dict(),
        "state": p.state_dict(),
        "acq": p.acquisition(Z),
        "obs": p.observations(),
        "gp0": p.gp_inputs(0),
        "props": [p.zeta_current, p.gamma_current, p.prior_mean, p.y_scale, p.n_refits, p.n_points],
        "points": [p.point(a) for a in range(p.n_points)],
        "unit": p.unit_point(3),
        "beta": [p.beta_t(t) for t in (1, 10, 100)],
        "replayed": fresh.state_dict(),
    }
    # a mixed space: snapping of ints and one-hot categoricals, the polish of the float coordinate only
    space = SearchSpace(
        [Float("x", -1.0, 2.0), Int("n", 1, 6), Categorical("c", ["a", "b", "c"]), Float("lr", 1e-3, 1.0, log=True)]
    )
    ladder = FidelityLadder(costs=[1.0, 10.0], zeta=[0.2, 0.0])

    def g(params: dict[str, Any], m: int) -> float:
        bonus = {"a": 0.0, "b": 0.4, "c": 0.1}[params["c"]]
        v = -((params["x"] - 0.5) ** 2) - 0.1 * (params["n"] - 4) ** 2 + bonus - 0.2 * abs(math.log10(params["lr"]) + 2)
        return v - (0.15 if m == 0 else 0.0)

    for name in ("mf-gp-ucb", "gp-ucb"):
        p = get_policy(name)(space, ladder, budget=160, seed=11, acq_maxfun=80)
        log = []
        while not p.done:
            q = p.ask()
            y = g(p.params(q), q.fidelity)
            p.tell(q, y)
            log.append((p.params(q), q.fidelity, y))
        out[f"mixed/{name}"] = {"log": log, "rec": p.recommendation().to_dict(), "state": p.state_dict()}
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


def _table(lc: Any) -> Any:
    """Everything a learning-curve table shows: its columns, labels and derived views."""
    starts, lengths = lc.runs()
    return {
        "repr": repr(lc),
        "columns": [lc.config, lc.seed, lc.fidelity, lc.metric, lc.cost, lc.task, lc.config_task],
        "labels": [repr(lc.config_labels), repr(lc.seed_labels), repr(lc.task_labels)],
        "names": [lc.metric_name, lc.mode, lc.fidelity_name, lc.cost_name, lc.source, lc.n_dropped],
        "params": repr(lc.params),
        "runs": [starts, lengths],
        "seeds_per_config": lc.seeds_per_config(),
        "keys": [repr(lc.config_key(k)) for k in range(lc.n_configs)],
        "has_cost": lc.has_cost,
        "score": lc.score,
    }


def _rung_values(rv: Any) -> Any:
    var, dof = rv.seed_variance()
    return {
        "repr": repr(rv),
        "metric": rv.metric,
        "cost": rv.cost,
        "bias": rv.bias(),
        "means": rv.means(),
        "var": [var, dof],
        "subset": repr(rv.subset(np.arange(rv.n_configs) % 2 == 0)),
    }


@scenario
def learning_curves() -> Any:
    """The table's readers (records, CSV long/list/gzip/filtered, data frames), its transformations and
    `values_at` under every `how`, and the errors that bad inputs get."""
    import gzip
    import tempfile

    from mf_sched.curves.learning_curves import LearningCurves, check_mode, parse_fidelities, read_csv_columns

    class Frame(dict):  # the smallest duck-typed data frame
        columns = property(lambda self: list(self))

    out: dict[str, Any] = {}
    rng = np.random.default_rng(7)
    recs = []
    for task in ("a", "b"):
        for cfg in range(5):
            for s in (0, 1):
                horizon = 9 if (cfg + s) % 4 else 6  # some runs stop early
                for t in (1, 2, 3, 5, 6, 8, 9):
                    if t <= horizon:
                        v = 0.5 + 0.04 * cfg * (1 - math.exp(-t / 3)) + 0.01 * rng.standard_normal()
                        recs.append({"task": task, "cfg": f"c{cfg}", "ep": t, "acc": v, "s": s, "sec": 1.5 * t + s})
    params = {(task, f"c{c}"): {"lr": 10.0**-c} for task in ("a", "b") for c in range(5)}
    lc = LearningCurves.from_records(
        recs, metric="acc", mode="max", config="cfg", fidelity="ep", seed="s", cost="sec", task="task", params=params
    )
    out["records"] = _table(lc)
    for how in ("previous", "interpolate", "exact"):
        for tol in (0.0, 0.2):
            out[f"values_at/{how}/{tol}"] = _rung_values(lc.values_at([2, 4, 6, 9], how=how, tolerance=tol))
    out["select"] = _table(lc.select(tasks=["b"], configs=[5, 6, 7, 9]))
    out["to_fraction"] = _table(lc.to_fraction(min_length=0.8))
    out["to_records"] = lc.to_records()[:25]

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)

        def hide(s: str) -> str:
            return s.replace(str(root), "<dir>")

        long = root / "long.csv"
        lc.to_csv(long)
        back = LearningCurves.from_csv(long, metric="metric", mode="max", seed="seed", cost="cost", task="task")
        out["csv/roundtrip"] = {k: v for k, v in _table(back).items() if k != "names"}
        gz = root / "long.csv.gz"
        gz.write_bytes(gzip.compress(long.read_bytes()))
        flt = LearningCurves.from_csv(gz, metric="metric", mode="min", task="task", seed="seed", where={"task": ["a"]})
        out["csv/gzip_where"] = {k: v for k, v in _table(flt).items() if k != "names"}
        semi = root / "semi.csv"
        semi.write_text("run;f;loss\nr1;1;0.9\nr1;2;0.5\nr2;1;nan\nr2;2;0.7\nr3;1;inf\n")
        out["csv/delimiter_drop"] = {
            k: v
            for k, v in _table(
                LearningCurves.from_csv(
                    semi, metric="loss", mode="min", config="run", fidelity="f", delimiter=";", nonfinite="drop"
                )
            ).items()
            if k != "names"
        }
        lst = root / "list.csv"
        lst.write_text(
            'run,seed,loss,cost,steps\nr1,0,"[0.9, 0.5, 0.4]","[1, 2, 3]","[10, 20, 30]"\n'
            'r1,1,"[0.8, 0.6, null]","[1, 2, 4]","[10, 20, 40]"\nr2,0,"[0.7, NaN, 0.3]","[2, 3, 5]","[5, 25, 35]"\n'
        )
        for name, kw in {
            "fidelity_column": {"fidelity": "steps"},
            "list_fidelities": {"fidelity": "absent", "list_fidelities": [2, 4, 8]},
            "default_fidelities": {"fidelity": "absent"},
        }.items():
            c = LearningCurves.from_csv(
                lst,
                metric="loss",
                mode="min",
                config="run",
                seed="seed",
                cost="cost",
                layout="list",
                nonfinite="drop",
                **kw,
            )
            out[f"csv/list/{name}"] = {k: v for k, v in _table(c).items() if k != "names"}
        out["read_csv_columns"] = read_csv_columns(
            lst, ["run", "loss", "nothing"], where={"seed": ["0"]}, optional=frozenset({"nothing"})
        )

        bad_files = {
            "empty": "",
            "width": "config,fidelity,acc\na,1,0.5\nb,2\n",
            "no_rows": "config,fidelity,acc\n",
            "not_number": "config,fidelity,acc\na,1,high\n",
            "negative_fidelity": "config,fidelity,acc\na,-1,0.5\n",
            "duplicate": "config,fidelity,acc\na,1,0.5\na,1,0.6\n",
            "nonfinite": "config,fidelity,acc\na,1,0.5\na,2,nan\n",
            "missing_label": "config,fidelity,acc\n,1,0.5\n",
            "bad_cost": "config,fidelity,acc,cost\na,1,0.5,-3\n",
        }
        errors: dict[str, str] = {}
        for name, text in bad_files.items():
            p = root / f"{name}.csv"
            p.write_text(text)
            kw = {"cost": "cost"} if name == "bad_cost" else {}
            try:
                LearningCurves.from_csv(p, metric="acc", mode="max", **kw)
                errors[name] = "accepted"
            except (ValueError, FileNotFoundError) as e:
                errors[name] = hide(f"{type(e).__name__}: {e}")
        bad_lists = {
            "json": 'run,loss\nr1,"[0.9, 0.5"\n',
            "not_list": 'run,loss\nr1,"{""a"": 1}"\n',
            "not_number": 'run,loss\nr1,"[0.9, ""x""]"\n',
            "lengths": 'run,loss,cost\nr1,"[0.9, 0.5]","[1]"\n',
        }
        for name, text in bad_lists.items():
            p = root / f"list_{name}.csv"
            p.write_text(text)
            kw = {"cost": "cost"} if name == "lengths" else {}
            try:
                LearningCurves.from_csv(p, metric="loss", mode="min", config="run", layout="list", **kw)
                errors[f"list/{name}"] = "accepted"
            except ValueError as e:
                errors[f"list/{name}"] = hide(f"{type(e).__name__}: {e}")
        for name, call in {
            "missing_file": lambda: LearningCurves.from_csv(root / "nope.csv", metric="acc", mode="max"),
            "missing_column": lambda: LearningCurves.from_csv(long, metric="acc", mode="max"),
            "layout": lambda: LearningCurves.from_csv(long, metric="metric", mode="max", layout="wide"),
            "list_fidelities": lambda: LearningCurves.from_csv(
                lst, metric="loss", mode="min", config="run", layout="list", list_fidelities=[1, 2]
            ),
        }.items():
            try:
                call()
                errors[name] = "accepted"
            except (ValueError, FileNotFoundError) as e:
                errors[name] = hide(f"{type(e).__name__}: {e}")
        out["csv/errors"] = errors

    frame = Frame(
        cfg=np.array(["x", "x", "y", "y"], dtype=object), ep=np.array([1, 3, 1, 3]), loss=np.array([0.9, 0.4, 0.8, 0.5])
    )
    out["frame/long"] = _table(
        LearningCurves.from_dataframe(frame, metric="loss", mode="min", config="cfg", fidelity="ep")
    )
    ragged = np.empty(2, dtype=object)  # as pandas gives a column of lists
    ragged[0], ragged[1] = [0.9, 0.5], np.array([0.8, 0.7, 0.6])
    secs = np.empty(2, dtype=object)
    secs[0], secs[1] = [1, 2], (1, 2, 3)
    lframe = Frame(run=["r1", "r2"], loss=ragged, sec=secs)
    out["frame/list"] = _table(
        LearningCurves.from_dataframe(lframe, metric="loss", mode="min", config="run", cost="sec", layout="list")
    )
    errors = {}
    for name, call in {
        "not_frame": lambda: LearningCurves.from_dataframe([1, 2], metric="loss", mode="min"),
        "frame_column": lambda: LearningCurves.from_dataframe(frame, metric="acc", mode="min", config="cfg"),
        "same_column": lambda: LearningCurves.from_dataframe(
            frame, metric="ep", mode="min", config="cfg", fidelity="ep"
        ),
        "frame_ragged_lists": lambda: LearningCurves.from_dataframe(
            Frame(run=[1, 2], loss=[[0.5], [0.5, 0.6]]), metric="loss", mode="min", config="run", layout="list"
        ),
        "record_key": lambda: LearningCurves.from_records([{"config": 1, "fidelity": 1}], metric="acc", mode="max"),
        "record_type": lambda: LearningCurves.from_records([[1, 2]], metric="acc", mode="max"),
        "mode": lambda: check_mode("maximize"),
        "fidelities": lambda: parse_fidelities("1,,3"),
        "fidelities_order": lambda: parse_fidelities([1, 3, 2]),
        "fidelities_type": lambda: parse_fidelities([1, True]),
        "values_at_how": lambda: lc.values_at([1, 2], how="nearest"),
        "values_at_tolerance": lambda: lc.values_at([1, 2], tolerance=1.0),
        "select_task": lambda: lc.select(tasks=["z"]),
        "select_config": lambda: lc.select(configs=[99]),
        "to_fraction": lambda: lc.to_fraction(min_length=2),
        "nonfinite_all": lambda: LearningCurves(config=[0], fidelity=[1], metric=[math.nan], nonfinite="drop"),
        "nonfinite_arg": lambda: LearningCurves(config=[0], fidelity=[1], metric=[1.0], nonfinite="skip"),
        "bool_metric": lambda: LearningCurves(config=[0], fidelity=[1], metric=np.array([True])),
        "label_type": lambda: LearningCurves(config=[[1]], fidelity=[1], metric=[1.0]),
        "params_unknown": lambda: LearningCurves(config=[0], fidelity=[1], metric=[1.0], params={5: {}}),
        "lengths": lambda: LearningCurves(config=[0, 1], fidelity=[1], metric=[1.0, 2.0]),
    }.items():
        try:
            call()
            errors[name] = "accepted"
        except ValueError as e:
            errors[name] = f"{type(e).__name__}: {e}"
    out["errors"] = errors
    return out


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


def _ordinary(kind: str, minimize: bool = False, report: bool = True) -> Callable[[Any], float]:
    """An objective that trains from scratch (no train_to), MFPruner stopping or pausing it; `report=False`: a
    black-box objective."""
    import optuna

    def acc(x: float, e: int) -> float:
        return (0.9 - 0.3 * (x - 0.6) ** 2) * (1 - math.exp(-0.25 * e * (0.5 + x)))

    def objective(trial: Any) -> float:
        if kind == "grid":
            x = trial.suggest_categorical("x", [0.1, 0.2, 0.35, 0.5, 0.6, 0.7, 0.8, 0.95])
        else:
            x = trial.suggest_float("x", 0.0, 1.0)
        v = 0.0
        for e in range(1, 28 if report else 1):
            v = 1.0 - acc(x, e) if minimize else acc(x, e)
            trial.report(v, e)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v if report else acc(x, 27)

    return objective


@scenario
def optuna_paths() -> Any:
    """The MFSampler/MFPruner paths `optuna_studies` leaves out: ordinary objectives (pauses, MFSampler's own
    pruning decision), an inferred ladder and discovery trials, minimisation, a black-box objective, enqueued
    trials, keep_sampling, an answer while the race runs, the other registered policies and IISE's rule."""
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to

    from mf_sched import FidelityLadder

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    out: dict[str, Any] = {}

    def run(name: str, make: Callable[[], Any], objective: Any, n: int, *, direction: str = "maximize",
            enqueue: Any = None, early: int | None = None) -> None:  # fmt: skip
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sampler, pruner = make()
                study = optuna.create_study(direction=direction, sampler=sampler, pruner=pruner)
                for params in enqueue or ():
                    study.enqueue_trial(params)
                rec_early = None
                if early is not None:
                    study.optimize(objective, n_trials=early, catch=(RuntimeError,))
                    rec_early = clean(sampler.recommendation(study)) if isinstance(sampler, MFSampler) else None
                study.optimize(objective, n_trials=n - (early or 0), catch=(RuntimeError,))
                row: dict[str, Any] = {"study": _study_record(study), "early": rec_early}
                if isinstance(sampler, MFSampler):
                    row["rec"] = clean(sampler.recommendation(study))
                    row["spent"] = sampler.resources_spent(study)
                    row["arms"] = sampler.arms(study)
                    eng = sampler.engine(study)
                    row["engine"] = clean(eng.state_dict()) if eng is not None else None
                if isinstance(pruner, MFPruner):
                    eng = pruner.engine(study)
                    row["pruner_engine"] = clean(eng.state_dict()) if eng is not None else None
            out[name] = row
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"

    run("ordinary-grid", lambda: (MFSampler(seed=0), MFPruner()), _ordinary("grid"), 60, early=6)
    run("ordinary-cont", lambda: (MFSampler(seed=0, n_candidates=10), MFPruner()), _ordinary("cont"), 60, early=4)
    run("ordinary-sobol-min", lambda: (MFSampler(seed=1, n_candidates=8, proposer="sobol"), MFPruner()),
        _ordinary("cont", minimize=True), 50, direction="minimize")  # fmt: skip
    run("ordinary-best-first", lambda: (MFSampler(seed=0, schedule="best-first", order="bound"), MFPruner()),
        _ordinary("grid"), 40)  # fmt: skip
    run("ordinary-budget", lambda: (MFSampler(seed=0, budget=90), MFPruner()), _ordinary("grid"), 40)
    run("black-box", lambda: (MFSampler(seed=0), MFPruner()), _ordinary("grid", report=False), 14)
    run("enqueued-keep-sampling", lambda: (MFSampler(seed=0, max_resource=27, keep_sampling=True), MFPruner()),
        _objective("grid"), 45, enqueue=[{"x": 0.6}, {"x": 0.35}])  # fmt: skip
    run("enqueued-cont", lambda: (MFSampler(seed=0, n_candidates=6), MFPruner()), _ordinary("cont"), 30,
        enqueue=[{"x": 0.33}])  # fmt: skip
    run("tpe-pruner-best-first", lambda: (optuna.samplers.TPESampler(seed=1), MFPruner(schedule="best-first")),
        _ordinary("cont"), 25)  # fmt: skip

    ladder = FidelityLadder(costs=[1, 3, 9, 27], zeta=[0.2, 0.1, 0.04, 0.0], resources=[1, 3, 9, 27])
    space = {"x": list(range(8)), "lr": [0.1, 0.01]}

    def resumable(trial: Any) -> float:
        x = trial.suggest_categorical("x", space["x"])
        lr = trial.suggest_categorical("lr", space["lr"])
        q = 0.3 + 0.08 * x + (0.05 if lr == 0.01 else 0.0)
        a = float("nan")
        for e in range(1, train_to(trial) + 1):
            a = q * (1 - 0.3 * math.exp(-e / 4))
            trial.report(a, e)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return finish(trial, a)

    for policy in ("iise-rungs", "sh"):
        run(f"policy-{policy}", lambda p=policy: (MFSampler(ladder, policy=p, search_space=space, sigma=0.005, seed=0),
            MFPruner(ladder, rule="iise", sigma=0.005)), resumable, 40, early=8)  # fmt: skip
    run("random-iise-pruner", lambda: (optuna.samplers.RandomSampler(seed=0), MFPruner(ladder, rule="iise",
        sigma=0.01, n_trials=20)), _ordinary("cont"), 20)  # fmt: skip

    def flaky(trial: Any) -> float:
        x = trial.suggest_categorical("x", [0.1, 0.5, 0.9])
        v = 0.0
        for e in range(1, 28):
            if e == 5 and (trial.number % 3 == 1 or x == 0.9):
                raise RuntimeError("worker crashed")
            v = x * (1 - 0.5 / e)
            trial.report(v, e)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v

    def broken(trial: Any) -> float:
        trial.suggest_categorical("x", [0.1, 0.5])
        raise RuntimeError("always")

    run("flaky", lambda: (MFSampler(seed=0, max_failures=2), MFPruner()), flaky, 30)
    run("all-failed", lambda: (MFSampler(seed=0, max_failures=1), MFPruner()), broken, 6)
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
