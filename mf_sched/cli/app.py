"""Command line: `mf-sched policies`, `mf-sched simulate`, `mf-sched calibrate` and `mf-sched report`.

    mf-sched policies [--json]
    mf-sched simulate --policy NAME --instance FILE|NAME [--delta D] [--runs N] [--seed S] [--workers W]
                      [--budget B] [--param KEY=VALUE ...] [--completion random|batch]
                      [--semantics independent|resumable] [--max-pulls N] [--jobs J]
                      [--json] [--per-run] [--no-progress] [--no-bounds] [--bounds-time-limit S]

A constrained instance file (one with `"thresholds"`, see :mod:`mf_sched.constrained.instance`) is run by the
mixture policies (`sfsr`, `uslp`) with `--param pull_budget=N`; the JSON then reports the error
rate of the support (Wilson interval), pulls used, regret and constraint violations of the mixture.

`simulate --json` prints one JSON object:

```text
{"policy", "runs", "delta", "error_rate", "cost": {"mean", "ci95", "median", "std"},
 "lower_bound", "cost_over_lower_bound", "tight_lower_bound", "cost_over_tight_lower_bound",
 "recommendations", ...}
```

`lower_bound` is Wang et al. (2023) Thm 3.1 (= Poiani et al. 2022 Thm 1); `tight_lower_bound` is the
tight bound of Poiani et al. (2024), `C*(µ) · kl(δ, 1 − δ)` (Gaussian instances; null otherwise).

`mf-sched calibrate CURVES --metric NAME --mode max|min --fidelities 1,3,9,27 --quantile 0.95` estimates a
ladder from learning curves (see :mod:`mf_sched.cli._calibrate_cli`).

`mf-sched report STORAGE_OR_FOLDER [--study NAME] [-o PATH]` writes one HTML page (race plot, certificate, the
runs and their fate) for an Optuna study or a Ray Tune experiment (see :mod:`mf_sched.visualization.report`).

Errors (bad arguments, invalid instance files) print a one-line message on stderr and exit with code 2;
Ctrl-C stops every worker process and exits with code 130.

Without `--delta` the policy's own default δ is used and reported. `--param delta=…`/`budget=…` are
the same as `--delta`/`--budget`; `--param seed` is refused (every run's seed derives from
`--seed`). The lower bounds take at most `--bounds-time-limit` seconds (`--no-bounds` skips them).
When the best arm is not unique, a δ-correct policy would run forever: without `--budget` or
`--max-pulls` each run is capped at `max(10,000, 100·K·M)` pulls (a warning says so), and any tied
arm counts as correct.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mf_sched.cli._calibrate_cli import add_calibrate, probability
from mf_sched.cli._common import (
    int_at_least,
    load_reporting_warnings,
    param,
    positive_float,
    print_table,
    run_options,
    seconds,
)
from mf_sched.cli._report_cli import add_report
from mf_sched.registry import get_policy, list_policies
from mf_sched.sim.instance import AssumptionWarning, load_instance, published_instance_path, published_instances
from mf_sched.sim.simulate import run_many

__all__ = ["main", "SUBCOMMANDS"]


_positive_int = int_at_least(1)
_jobs = int_at_least(0, " (0: all CPUs)")
_delta = probability  # a number in (0, 1)


def _add_policies(sub: Any) -> None:
    p = sub.add_parser("policies", help="list the registered policies with their papers")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_policies)


def _cmd_policies(args: argparse.Namespace) -> int:
    pols = list_policies()
    if args.json:
        print(
            json.dumps(
                {n: {"objective": c.objective, "paper": c.paper, "summary": c.summary} for n, c in pols.items()},
                indent=1,
            )
        )
        return 0
    w = max(len(n) for n in pols)
    print(f"{'name':<{w}}  {'objective':<12}  paper")
    for n, c in pols.items():
        print(f"{n:<{w}}  {c.objective:<12}  {c.paper}")
        if c.summary:
            print(f"{'':<{w}}  {'':<12}  {c.summary}")
    return 0


def _add_simulate(sub: Any) -> None:
    p = sub.add_parser("simulate", help="run a policy on a simulated instance over many seeds")
    p.add_argument("--policy", required=True, help="registered policy name (see `mf-sched policies`)")
    p.add_argument(
        "--instance",
        required=True,
        help="instance JSON file (format: mf_sched.sim.instance module docstring), or the name of a published "
        "instance shipped with mf-sched (" + ", ".join(published_instances()) + ")",
    )
    p.add_argument(
        "--delta", type=_delta, default=None, help="confidence δ in (0, 1) for δ-correct policies (default: theirs)"
    )
    p.add_argument("--runs", type=_positive_int, default=10, help="number of independent runs (default 10)")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    p.add_argument("--workers", type=_positive_int, default=1, help="parallel workers: pulls outstanding at once")
    p.add_argument(
        "--completion",
        choices=("random", "batch"),
        default="random",
        help="random: outstanding pulls finish one at a time in random order; batch: all together",
    )
    p.add_argument(
        "--semantics",
        choices=("independent", "resumable"),
        default="independent",
        help="also meter the cost of resumable training runs",
    )
    p.add_argument("--budget", type=positive_float, default=None, help="cost cap / capital Λ")
    p.add_argument("--max-pulls", type=_positive_int, default=None, help="stop a run after this many pulls")
    p.add_argument(
        "--param",
        type=param,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy-specific argument (JSON value), repeatable",
    )
    p.add_argument("--jobs", type=_jobs, default=1, help="worker processes for the runs (0: all CPUs)")
    p.add_argument("--no-bounds", action="store_true", help="skip the instance's cost lower bounds")
    p.add_argument(
        "--bounds-time-limit",
        type=seconds,
        default=BOUNDS_TIME_LIMIT,
        metavar="SECONDS",
        help=f"time allowed for the tight lower bound (default {BOUNDS_TIME_LIMIT:g} s; a valid, looser bound "
        "is reported when it runs out)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--per-run", action="store_true", help="include every run's result in the JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=_cmd_simulate)


#: default ``--bounds-time-limit`` (seconds); the tight bound takes seconds up to K = 100,000
BOUNDS_TIME_LIMIT = 60.0
#: pull cap per run applied when the best arm is not unique and no --budget / --max-pulls is given:
#: ``max(TIE_MAX_PULLS, 100·K·M)``
TIE_MAX_PULLS = 10_000


def _split_params(args: argparse.Namespace) -> dict[str, Any]:
    """`--param` pairs, with `delta` and `budget` moved to their own options and `seed` refused."""
    params = dict(args.param)
    for key, opt in (("delta", "--delta"), ("budget", "--budget")):
        if key not in params:
            continue
        value = params.pop(key)
        if getattr(args, key) is not None:
            raise ValueError(f"{key} is given twice (--param {key}={value!r} and {opt}); give it once, with {opt}")
        check = _delta if key == "delta" else positive_float
        try:
            setattr(args, key, check(str(value)))
        except argparse.ArgumentTypeError as e:
            raise ValueError(f"--param {key}={value!r}: {e}") from None
    if "seed" in params:
        raise ValueError(
            "--param seed is not accepted: every run derives its policy's seed from the root seed; use --seed"
        )
    for key in ("n_arms", "ladder", "noise"):
        if key in params:
            raise ValueError(f"--param {key} is not accepted: it is set by the instance file")
    return params


def _tie_cap(args: argparse.Namespace, instance: Any) -> None:
    """Tied best arms: a δ-correct policy cannot tell them apart and never stops; cap every run."""
    if instance.has_unique_best or args.budget is not None or args.max_pulls is not None:
        return
    cls = get_policy(args.policy)
    if cls.objective != "best-arm":
        return
    true = instance.true_means
    tied = [int(a) for a in (true == true.max()).nonzero()[0]]
    hint = (
        f"or --param epsilon=E (policy {args.policy!r} then stops with an E-optimal arm)"
        if "epsilon" in inspect.signature(cls.__init__).parameters
        else "or a policy with an ε (lucb1, iise: --param epsilon=E)"
    )
    args.max_pulls = max(TIE_MAX_PULLS, 100 * instance.K * instance.M)
    print(
        f"warning: arms {tied} tie for the best true mean {float(true.max()):.6g}: a δ-correct policy cannot tell "
        f"them apart and would never stop; each run is capped at --max-pulls {args.max_pulls} (set --max-pulls "
        f"or --budget, {hint}). Any of the tied arms counts as correct.",
        file=sys.stderr,
    )


def _cmd_simulate(args: argparse.Namespace) -> int:
    get_policy(args.policy)
    from mf_sched.cli._constrained_cli import cli_simulate
    from mf_sched.constrained.instance import is_constrained_file

    delta_given = args.delta is not None or any(k == "delta" for k, _ in args.param)
    if not os.path.exists(args.instance) and args.instance.removesuffix(".json") in published_instances():
        args.instance = str(published_instance_path(args.instance))  # a shipped instance, by name
    if is_constrained_file(args.instance):  # reward + costs per pull, thresholds: SFSR / USLP
        return cli_simulate(args)
    params = _split_params(args)
    instance = load_reporting_warnings(load_instance, args.instance, AssumptionWarning)
    _tie_cap(args, instance)
    summary = run_many(
        args.policy,
        instance,
        delta=args.delta,
        params=params,
        semantics=args.semantics,
        bounds=not args.no_bounds,
        bounds_time_limit=args.bounds_time_limit,
        **run_options(args),
    )
    d = summary.to_dict(per_run=args.per_run)
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    cost = d["cost"]
    rows = [
        ("policy", d["policy"]),
        ("instance", f"{instance.name} (K={instance.K}, M={instance.M}, {instance.noise.kind})"),
        ("runs", d["runs"]),
        ("delta", d["delta"] if delta_given or d["delta"] is None else f"{d['delta']} (the policy's default)"),
        ("error rate", f"{d['error_rate']:.4f}"),
        ("certified", f"{d['certified_rate']:.2%}"),
        (
            "cost mean ± 95% CI",
            f"{cost['mean']:.6g} ± {cost['ci95'] if cost['ci95'] is not None else float('nan'):.3g}",
        ),
        ("cost median", f"{cost['median']:.6g}"),
        ("lower bound (Wang Thm 3.1)", "n/a" if d["lower_bound"] is None else f"{d['lower_bound']:.6g}"),
        ("cost / lower bound", "n/a" if d["cost_over_lower_bound"] is None else f"{d['cost_over_lower_bound']:.3g}"),
        (
            "tight lower bound (Poiani 2024)",
            "n/a" if d["tight_lower_bound"] is None else f"{d['tight_lower_bound']:.6g}",
        ),
        (
            "cost / tight lower bound",
            "n/a" if d["cost_over_tight_lower_bound"] is None else f"{d['cost_over_tight_lower_bound']:.3g}",
        ),
        ("pulls per fidelity", ", ".join(f"{x:.4g}" for x in d["pulls_per_fidelity"])),
        ("lower bound note", d["lower_bound_note"] or "-"),
        ("tight bound note", d["tight_lower_bound_note"] or "-"),
        ("stop reasons", d["stop_reasons"]),
        ("recommendations", dict(list(d["recommendations"].items())[:5])),
    ]
    if d["resumable_cost"] is not None:
        rows.append(("resumable cost", f"{d['resumable_cost']:.6g}"))
    print_table(rows)
    return 0


#: subcommand builders; other modules append to this list (e.g. ``calibrate``)
SUBCOMMANDS: list[Callable[[Any], None]] = [_add_policies, _add_simulate, add_calibrate, add_report]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mf-sched",
        description="Multi-fidelity bandit policies: list them, simulate them, calibrate a ladder, report a race.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, IsADirectoryError) as e:
        print(f"mf-sched {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mf-sched {args.command}: interrupted (pending runs cancelled, workers stopped)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
