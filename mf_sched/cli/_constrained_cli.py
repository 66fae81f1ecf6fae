"""`mf-sched simulate` on a constrained instance file (one with `"thresholds"`): the mixture policies."""

from __future__ import annotations

import json
from typing import Any

from mf_sched.cli._common import load_reporting_warnings, print_table, run_options
from mf_sched.constrained.instance import load_constrained_instance
from mf_sched.constrained.runner import run_many_constrained

__all__ = ["cli_simulate"]


def cli_simulate(args: Any) -> int:
    """`mf-sched simulate` for a constrained instance file (called by :mod:`mf_sched.cli.app`)."""
    from mf_sched.registry import get_policy
    from mf_sched.sim.instance import AssumptionWarning

    cls = get_policy(args.policy)
    if cls.objective != "mixture":
        raise ValueError(
            f"{args.instance} is a constrained instance; policy {args.policy!r} does not solve it "
            "(use a mixture policy: sfsr, uslp)"
        )
    if args.semantics != "independent":
        raise ValueError("--semantics resumable does not apply to constrained (single-fidelity) instances")
    params = dict(args.param)
    if "pull_budget" not in params:
        raise ValueError("constrained instances need the budget N: pass --param pull_budget=N")
    instance = load_reporting_warnings(load_constrained_instance, args.instance, AssumptionWarning)
    N = params.pop("pull_budget")
    s = run_many_constrained(args.policy, instance, pull_budget=N, params=params, **run_options(args))
    d = s.to_dict(per_run=args.per_run)
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    lo, hi = s.error_ci95
    rows = [
        ("policy", f"{s.policy} {params}" if params else s.policy),
        ("instance", f"{instance.name} (K={instance.K}, L={instance.L}, {instance.noise.kind})"),
        ("optimum", str(instance.optimum)),
        ("optimal support", list(instance.optimum.support)),
        ("assumption 1", instance.assumption.summary()),
        ("runs", s.runs),
        ("pull budget N", N),
        ("error rate", f"{s.error_rate:.4f} (95% Wilson [{lo:.4f}, {hi:.4f}])"),
        ("'infeasible' answers", f"{s.infeasible_rate:.4f}"),
        ("pulls used (mean, max)", f"{s.pulls_mean:.1f}, {s.pulls_max}"),
        ("regret of the mixture", f"{s.regret_mean:.6g}"),
        ("violates a constraint", f"{s.violation_rate:.4f}"),
        ("stop reasons", s.stop_reasons),
        ("answers (support: count)", dict(list(s.outputs.items())[:5])),
    ]
    print_table(rows)
    return 0
