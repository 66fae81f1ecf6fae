"""Which configuration each of MFSampler's arms is, in each study it serves (Optuna glue).

The arms are the fixed candidates of the sampler's :class:`~mf_sched.integrations._optuna_space.SearchState` (a
grid, or scrambled-Sobol points), or — on a space that is not a small grid, with a proposer — `K` arms whose
configurations the proposer gives one at a time: arm `k`'s configuration is that of the trial that started it, a
function of the study's trials alone (:class:`~mf_sched.integrations._optuna_space.ProposedArms`), so every process
rebuilds the same arms from the storage. :class:`StudyArms` keeps one such book per study, rebuilt at each decision,
and answers the questions the race and Optuna's hooks ask: which arm a trial evaluates, an arm's parameters, what
the proposer already gave the arm a new trial starts, resumes or re-runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna
from optuna.samplers import BaseSampler, TPESampler
from optuna.trial import FrozenTrial

from ._optuna_race import ARM, DISCOVERY, FIDELITY
from ._optuna_space import ProposedArms, SearchState
from ._optuna_study import StudyAdapter, study_key

__all__ = ["StudyArms", "check_proposer"]


def check_proposer(proposer: Any, seed: int | None) -> BaseSampler | None:
    """The sampler that proposes the race's new configurations (MFSampler's `proposer=`).

    Args:
        proposer: an Optuna sampler other than MFSampler, `"sobol"` (fixed scrambled-Sobol candidates instead) or
            None (the default, `TPESampler(seed=seed)`).
        seed: seeds the default proposer.

    Returns:
        The proposer; None for `"sobol"`.

    Raises:
        ValueError: `proposer` is none of these (a sampler that is a `StudyAdapter` is an MFSampler).
    """
    if isinstance(proposer, str) and proposer == "sobol":
        return None
    if proposer is None:
        return TPESampler(seed=seed)
    if isinstance(proposer, StudyAdapter) or not isinstance(proposer, BaseSampler):
        raise ValueError(
            f"proposer = {proposer!r} is not accepted; accepted: an Optuna sampler other than MFSampler "
            "(e.g. optuna.samplers.TPESampler()), 'sobol', or None (TPESampler)"
        )
    return proposer


class StudyArms:
    """The arms of every study one MFSampler serves (see the module docstring).

    Args:
        search: the sampler's search state (space, candidates, whether the arms are proposed one at a time).
    """

    def __init__(self, search: SearchState) -> None:
        self.search = search
        self._books: dict[tuple[int, int], ProposedArms] = {}  # per study: its proposed arms (lazy arms only)
        self._book: ProposedArms | None = None  # the one rebuilt last (what arm_of reads)
        self._trial_arm: dict[tuple[Any, int], tuple[dict[str, Any], bool]] = {}  # proposed(), per running trial

    def rebuild(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> ProposedArms | None:
        """Rebuild the study's proposed arms from its trials; :meth:`arm_of` then reads them.

        Args:
            study: the study.
            trials: all its trials, as the storage returns them.

        Returns:
            The study's :class:`~mf_sched.integrations._optuna_space.ProposedArms`; None unless the arms are
                proposed one at a time.
        """
        if not self.search.lazy:
            return None
        K = self.search.n_candidates
        book = self._books.get(study_key(study))
        if book is None or book.n_arms != K:
            book = self._books[study_key(study)] = ProposedArms(K)
        book.rebuild(trials)
        self._book = book
        return book

    def configurations(self, book: ProposedArms | None) -> list[dict[str, Any] | None]:
        """Every arm's configuration, by arm index.

        Args:
            book: the study's proposed arms as :meth:`rebuild` returned them (None: the fixed candidates).

        Returns:
            The fixed candidates, or each proposed arm's configuration (None for an arm not started yet).
        """
        if book is None:
            return [dict(c) for c in self.search.candidates or ()]
        return [book.params(k) or None for k in range(book.n_arms)]

    def arm_of(self, t: FrozenTrial) -> int | None:
        """The candidate trial `t` evaluates (see `MFSampler.arm_of`).

        Args:
            t: a trial of the study.

        Returns:
            The arm this sampler assigned it, else the one its parameters match; None for a trial outside the
                candidates (or while the space is not known yet). Arms proposed one at a time: as :meth:`rebuild`
                rebuilt them last.
        """
        if self.search.lazy:
            book = self._book
            if book is None:
                a = t.system_attrs.get(ARM)
                return a if isinstance(a, int) and 0 <= a < self.search.n_candidates else None
            return book.arm_of(t)
        a = t.system_attrs.get(ARM)
        if isinstance(a, int) and self.search.candidates is not None and 0 <= a < len(self.search.candidates):
            return a
        return self.search.arm_of_params(t.params)

    def params_of(self, key: Any, trials: Sequence[FrozenTrial]) -> dict[str, Any] | None:
        """The parameters of a run of the race.

        Args:
            key: the run's key in the engine: an arm index, or `"trial-<n>"` for a trial outside the candidates.
            trials: the study's trials.

        Returns:
            The arm's configuration (as :meth:`rebuild` rebuilt it last), or the trial's parameters.
        """
        if isinstance(key, int) and self.search.lazy and self._book is not None:
            return self._book.params(key) or None
        if isinstance(key, int) and self.search.candidates is not None:
            return dict(self.search.candidates[key])
        number = int(str(key).split("-")[-1])
        for t in trials:
            if t.number == number:
                return dict(t.params)
        return None  # pragma: no cover

    def discovery_arm(self, trial: FrozenTrial, trials: Sequence[FrozenTrial]) -> int | None:
        """The arm a trial started before the search space is known takes, should the arms turn out to be proposed
        one at a time.

        Args:
            trial: the new trial.
            trials: the study's trials.

        Returns:
            The lowest arm no other trial holds; None without a proposer (the fallback samples the trial).
        """
        if not self.search.propose:
            return None
        n = self.search.n_candidates
        book = ProposedArms(n)
        held = {k for t in trials if t.number != trial.number and (k := book.index_of(t)) is not None}
        return next((k for k in range(n) if k not in held), None)

    def proposed(self, study: optuna.Study, trial: FrozenTrial, lock: Any) -> tuple[dict[str, Any], bool] | None:
        """What the proposer already gave the arm `trial` starts, resumes or re-runs (see `MFSampler.proposed_arm`).

        Args:
            study: the study.
            trial: a trial being sampled.
            lock: the sampler's lock (held while the arms are rebuilt).

        Returns:
            `(the arm's values known so far, discovery)` for a trial whose configuration is (partly) the
                proposer's; None for any other trial.
        """
        search = self.search
        memo = (study_key(study), trial.number)  # read once per trial (its first suggest), not once per parameter
        out = self._trial_arm.get(memo)
        if out is not None:
            return out
        attrs = trial.system_attrs
        if FIDELITY not in attrs and (search.lazy or not search.known):
            # Optuna hands infer_relative_search_space the trial as it was *before* before_trial placed it
            attrs = study._storage.get_trial_system_attrs(trial._trial_id)
        if DISCOVERY in attrs and attrs.get(ARM) is None:
            k = attrs.get(DISCOVERY)
            if not search.lazy:
                return {}, True  # the first trial(s): the proposer samples them whatever the space turns out to be
        elif search.lazy and not search.dynamic:
            k = attrs.get(ARM)
        else:
            return None
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < search.n_candidates:
            return None
        with lock:
            book = self.rebuild(study, study._storage.get_all_trials(study._study_id, deepcopy=False))
            assert book is not None
            out = book.params(k), DISCOVERY in attrs and attrs.get(ARM) is None
            if len(self._trial_arm) >= 1024:  # trials asked but never told: forget the oldest
                self._trial_arm.pop(next(iter(self._trial_arm)))
            self._trial_arm[memo] = out
        return out

    def forget(self, study: optuna.Study, number: int) -> None:
        """Drop what :meth:`proposed` remembered for a trial that has ended.

        Args:
            study: the study.
            number: the trial's number.
        """
        self._trial_arm.pop((study_key(study), number), None)
