"""What MFSampler and MFPruner share about the studies they serve (Optuna glue): a study's identity in this process,
its direction as a sign, annotating a running trial, stopping the study, and :class:`StudyAdapter` — the per-study
caches and the ladder (given, or inferred from the steps the trials reported) that both adapters read.

Private Optuna API used (see :mod:`mf_sched.integrations.optuna`): `study._storage`, `study._study_id` and
`trial._trial_id`, to annotate a `FrozenTrial` and read the trials without copying them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial

from mf_sched.ladder import FidelityLadder

from ._common import RungArgs
from ._optuna_race import TrialCache, ladder_of

__all__ = ["StudyAdapter", "study_key", "sign_of", "mark", "stop_study"]


def study_key(study: optuna.Study) -> tuple[int, int]:
    """The key under which an adapter keeps what it learnt about `study` in this process.

    Args:
        study: the Optuna study.

    Returns:
        `(id of its storage object, study id)`: two studies of one storage, or one study id in two storages,
            never share it.
    """
    return id(study._storage), study._study_id


def sign_of(study: optuna.Study) -> float:
    """The factor that turns the study's values into the engine's maximisation convention.

    Args:
        study: a single-objective Optuna study.

    Returns:
        `1.0` for a study that maximizes, `-1.0` for one that minimizes.
    """
    return 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0


def mark(study: optuna.Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """Set a system attribute of a running trial; a finished one cannot be annotated (Optuna refuses, and nothing
    is lost): then nothing is written.

    Args:
        study: the study of `trial`.
        trial: the trial to annotate (a pruner or sampler gets a `FrozenTrial`, hence the storage call).
        key: the attribute's name (an `mf:*` key of :mod:`mf_sched.integrations._optuna_race`).
        value: a JSON-serialisable value.
    """
    try:
        study._storage.set_trial_system_attr(trial._trial_id, key, value)
    except Exception:  # pragma: no cover - a finished trial cannot be annotated
        pass


def stop_study(study: optuna.Study) -> None:
    """`study.stop()` (as GridSampler stops a study once its grid is done), and nothing under ask/tell, where there
    is no optimize loop to stop.

    Args:
        study: the study to stop.
    """
    try:
        study.stop()
    except RuntimeError:  # ask/tell use: there is no optimize loop to stop
        pass


class StudyAdapter:
    """The part MFSampler and MFPruner share: the rung arguments they were built with (:attr:`max_resource`,
    :attr:`min_resource`, :attr:`reduction_factor`), the ladder of each study (:meth:`study_ladder`), and one
    :class:`~mf_sched.integrations._optuna_race.TrialCache` per study (the parsed finished trials; the storage stays
    the source of truth). Being one is also how each adapter recognises the other: a pruner that is a
    `StudyAdapter` is an MFPruner, a sampler that is one an MFSampler."""

    _rungs: RungArgs
    _caches: dict[tuple[int, int], TrialCache]

    def _cache(self, study: optuna.Study) -> TrialCache:
        return self._caches.setdefault(study_key(study), TrialCache())

    @property
    def max_resource(self) -> float | None:
        """The `max_resource=` argument (None: inferred from the largest step a trial reported)."""
        return self._rungs.max_resource

    @property
    def min_resource(self) -> float | None:
        """The `min_resource=` argument of the inferred ladder (None: its default)."""
        return self._rungs.min_resource

    @property
    def reduction_factor(self) -> float:
        """The `reduction_factor=` of the inferred ladder."""
        return self._rungs.reduction_factor

    def study_ladder(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> tuple[FidelityLadder | None, int]:
        """The ladder of `study` and the step offset of its reports.

        Args:
            study: the study.
            trials: its trials, as the storage returns them.

        Returns:
            `(ladder, offset)`: the ladder given to the constructor, or the one inferred from the steps the trials
                reported (None while nothing can be inferred yet); the offset is 1 when the study counts steps from 0
                (resource `r` is step `r − 1`, see :mod:`mf_sched.integrations.optuna`), else 0.
        """
        return ladder_of(trials, self._rungs, cache=self._cache(study))
