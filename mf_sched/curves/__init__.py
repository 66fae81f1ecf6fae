"""Learning curves: tables of observed training runs and what is estimated from them.

:mod:`~mf_sched.curves.learning_curves` (the :class:`LearningCurves` table, re-exported here),
:mod:`~mf_sched.curves.calibration` (a fidelity ladder from curves), :mod:`~mf_sched.racing.calibration`,
:mod:`~mf_sched.curves.datasets` (loaders for public curve collections) and :mod:`~mf_sched.curves.replay`
(replaying recorded curves as an instance).

    >>> from mf_sched.curves import LearningCurves
    >>> LearningCurves.__module__
    'mf_sched.curves.learning_curves'
"""

from __future__ import annotations

from mf_sched.curves.learning_curves import LearningCurves, RungValues, check_mode, parse_fidelities, read_csv_columns

__all__ = ["LearningCurves", "RungValues", "check_mode", "parse_fidelities", "read_csv_columns"]
