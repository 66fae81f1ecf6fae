"""`mf-sched calibrate`: estimate a fidelity ladder (ζ, γ, σ, λ) from learning curves.

mf-sched calibrate CURVES --metric NAME --mode max|min --fidelities 1,3,9,27 --quantile 0.95
    CURVES                 a CSV file (long: one row per observation; or --layout list) or a named
                           source: lcbench, taskset, deepobs, algoperf (read from $MF_SCHED_DATA)
    --config/--fidelity/--seed/--cost/--task COLUMN   CSV column names
    --fidelities R1,R2,..  the ladder (last = target); without it a geometric ladder is suggested
                           (--eta, --min-resource, --max-resource)
    --fraction             fidelity = fraction of each run completed (for time-triggered logs)
    --quantile Q --confidence C --method bootstrap|order --cost auto|resource|time
    --how previous|interpolate|exact --tolerance T
    --holdout auto|configs|tasks|none --repeats N --seed S
    --plot PATH | --no-plot     (default calibration.png; needs matplotlib, the bench extra)
    --json                 print a JSON object instead of the table
    --save-ladder PATH     write the ladder (FidelityLadder.to_dict) as JSON
    --save-instance PATH --arms K --extra-noise X
                           write a replay instance (real means, calibrated ladder, Gaussian noise)
                           that `mf-sched simulate --instance PATH` runs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mf_sched.cli._common import nonnegative_float

__all__ = ["add_calibrate", "probability"]


def probability(text: str) -> float:
    """Argparse type: a number strictly between 0 and 1 (a probability such as δ, a quantile, a confidence).

    >>> probability("0.05")
    0.05
    """
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {v}")
    return v


def add_calibrate(sub: Any) -> None:
    """Register the `calibrate` subcommand on an argparse subparsers object."""
    p = sub.add_parser(
        "calibrate",
        help="estimate zeta, gamma, sigma and costs of a fidelity ladder from learning curves",
        description="Estimate the bias bounds ζ(m) (a quantile of |metric(m) − metric(last)| with a bootstrap "
        "upper bound and a non-increasing envelope), γ(m), seed noise σ and costs λ(m) of a ladder of "
        "fidelities from learning curves, with held-out coverage.",
    )
    p.add_argument("curves", help="CSV file of learning curves, or a source: lcbench, taskset, deepobs, algoperf")
    p.add_argument("--metric", default=None, help="metric column (required for a CSV file)")
    p.add_argument("--mode", choices=("max", "min"), default=None, help="max: higher is better; min: lower")
    p.add_argument("--fidelities", default=None, help="ladder rungs, e.g. 1,3,9,27 (last = target)")
    p.add_argument("--quantile", type=probability, default=0.95, help="fraction of configurations ζ covers (0.95)")
    p.add_argument("--confidence", type=probability, default=0.95, help="level of the upper bound on it (0.95)")
    p.add_argument("--method", choices=("bootstrap", "order"), default="bootstrap")
    p.add_argument("--cost", choices=("auto", "resource", "time"), default="auto", help="what λ(m) is")
    p.add_argument("--how", choices=("previous", "interpolate", "exact"), default="previous")
    p.add_argument("--tolerance", type=nonnegative_float, default=0.0, help="relative slack for reaching a rung")
    p.add_argument("--fraction", action="store_true", help="fidelity = fraction of each run completed")
    p.add_argument("--eta", type=float, default=3.0, help="ratio of a suggested geometric ladder (3)")
    p.add_argument("--min-resource", type=float, default=None)
    p.add_argument("--max-resource", type=float, default=None)
    p.add_argument("--config", default="config", help="CSV column of the configuration (config)")
    p.add_argument("--fidelity", default="fidelity", help="CSV column of the fidelity (fidelity)")
    p.add_argument("--seed-col", default=None, help="CSV column of the seed (optional)")
    p.add_argument("--cost-col", default=None, help="CSV column of the elapsed cost (optional)")
    p.add_argument("--task-col", default=None, help="CSV column of the task (optional)")
    p.add_argument("--layout", choices=("long", "list"), default="long", help="list: metric cells are JSON lists")
    p.add_argument("--nonfinite", choices=("error", "drop"), default="error", help="NaN/inf metrics in a CSV")
    p.add_argument("--task", action="append", default=None, help="keep only this task (repeatable)")
    p.add_argument("--configs", type=int, default=200, help="lcbench: random configurations per task (200)")
    p.add_argument("--data", default=None, help="path of the source's data (default: $MF_SCHED_DATA/...)")
    p.add_argument("--holdout", choices=("auto", "configs", "tasks", "none"), default="auto")
    p.add_argument("--repeats", type=int, default=20, help="held-out splits (20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the splits and of sampled configurations")
    p.add_argument("--plot", default="calibration.png", help="where to save the figure (calibration.png)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--save-ladder", default=None, metavar="PATH")
    p.add_argument("--save-instance", default=None, metavar="PATH")
    p.add_argument("--arms", type=int, default=None, help="--save-instance: configurations drawn as arms")
    p.add_argument(
        "--extra-noise", type=nonnegative_float, default=0.0, help="--save-instance: observation noise added"
    )
    p.set_defaults(func=_cmd_calibrate)


def _load(args: argparse.Namespace) -> Any:
    from mf_sched.curves.datasets import SOURCES, load_source
    from mf_sched.curves.learning_curves import LearningCurves

    path = Path(args.curves)
    if path.is_file():
        if args.metric is None or args.mode is None:
            raise ValueError("a CSV file needs --metric NAME and --mode max|min")
        columns = {"config": args.config, "fidelity": args.fidelity, "seed": args.seed_col, "cost": args.cost_col,
                   "task": args.task_col}  # fmt: skip
        curves = LearningCurves.from_csv(
            path, metric=args.metric, mode=args.mode, layout=args.layout, nonfinite=args.nonfinite, **columns
        )
        if args.task:
            curves = curves.select(tasks=args.task)
        return curves
    if args.curves in SOURCES:
        return load_source(
            args.curves, path=args.data, tasks=args.task, metric=args.metric, mode=args.mode, n_configs=args.configs,
            seed=args.seed,
        )  # fmt: skip
    raise FileNotFoundError(f"{args.curves!r} is neither a file nor a source ({', '.join(SOURCES)})")


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from mf_sched.curves.calibration import calibrate, suggest_ladder
    from mf_sched.curves.learning_curves import parse_fidelities

    curves = _load(args)
    if args.fraction:
        curves = curves.to_fraction()
    # the options that calibrate()/suggest_ladder() and ReplayBenchmark.from_curves() both take
    shared: dict[str, Any] = {k: getattr(args, k) for k in ("quantile", "confidence", "cost", "how", "tolerance")}
    holdout = None if args.holdout == "none" else args.holdout
    kw: dict[str, Any] = dict(shared, method=args.method, holdout=holdout, repeats=args.repeats, seed=args.seed)
    if args.fidelities:
        cal = calibrate(curves, parse_fidelities(args.fidelities, "--fidelities"), **kw)
    else:
        cal = suggest_ladder(curves, min_resource=args.min_resource, max_resource=args.max_resource, eta=args.eta, **kw)
    out: dict[str, Any] = {"curves": repr(curves), "source": curves.source, "calibration": cal.to_dict()}
    if args.save_ladder:
        Path(args.save_ladder).write_text(json.dumps(cal.ladder().to_dict(), indent=1))
        out["ladder_file"] = args.save_ladder
    if args.save_instance:
        from mf_sched.curves.replay import ReplayBenchmark

        bench = ReplayBenchmark.from_curves(
            curves,
            cal.rungs,
            n_arms=args.arms,
            calibration="holdout",
            extra_noise=args.extra_noise,
            seed=args.seed,
            **shared,
        )
        bench.save(args.save_instance)
        out["instance_file"] = args.save_instance
        out["instance_zeta_coverage"] = bench.zeta_coverage.tolist()
    if not args.no_plot:
        try:
            cal.plot(
                args.plot, title=f"{curves.metric_name} ({curves.mode}), {args.curves}: quantile {args.quantile:g}"
            )
            out["plot"] = args.plot
        except ImportError as e:
            print(f"warning: no plot: {e}", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(repr(curves))
    if curves.n_dropped:
        print(f"({curves.n_dropped} non-finite rows dropped)")
    print(cal.table())
    for key, label in (("ladder_file", "ladder"), ("instance_file", "instance"), ("plot", "plot")):
        if key in out:
            print(f"{label} saved to {out[key]}")
    if "instance_zeta_coverage" in out:
        cov = ", ".join(f"{c:.3f}" for c in out["instance_zeta_coverage"])
        print(f"instance arms within zeta per rung: {cov}")
    return 0
