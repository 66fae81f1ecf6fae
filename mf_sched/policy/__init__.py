"""The ask/tell policy protocol shared by every policy, simulator and adapter.

A *policy* decides which arm to pull at which fidelity. Its surface is small, so one adapter serves all:

* :meth:`Policy.ask` returns the next :class:`Pull` `(id, arm, fidelity)`, or `None` while it must
  wait for results already handed out (or when it is done). :meth:`Policy.ask_batch` hands out
  several at once (parallel workers).
* :meth:`Policy.tell` records one observation for an outstanding pull; results may come back in any
  order. :meth:`Policy.tell_batch` records many atomically.
* :meth:`Policy.give_back` returns a pull whose evaluation failed; the policy forgets it was issued and
  will hand the work out again if it still needs it.
* :meth:`Policy.adopt` registers a pull the policy did *not* choose (a user-enqueued Optuna trial, two
  Optuna workers that raced to the same decision, a Ray trial reporting after a restore). If it is work
  the policy was about to hand out, it fills that slot; otherwise its observation is recorded as an
  *extra* sample (counted in cost and statistics; used for decisions only by policies whose estimates
  pool every sample, see :attr:`Policy.sample_agnostic`). Nothing an evaluation produced is dropped.
* :attr:`Policy.done` and :meth:`Policy.recommendation` say when it has finished and what it answers.
* :meth:`Policy.state_dict` / :meth:`Policy.from_state_dict` save and restore the complete state
  (JSON-safe, exact, RNG included); :meth:`Policy.replay` rebuilds a policy from an event history.

Invariants (tested):

* deterministic given the seed and the sequence of calls;
* a tell for an unknown pull, a duplicate tell or a non-finite value raises :class:`PolicyError`
  and leaves the policy unchanged (a batch is all-or-nothing);
* the `budget` (a cost cap, in units of λ) is never exceeded by pulls the policy issues: when the
  next pull would exceed it, the policy stops issuing and, once its outstanding pulls are told, is
  done with `recommendation().reason == "budget"`.

Cost accounting follows the papers' *independent pulls* model: every pull of fidelity `m` costs
`λ(m)` when it is told. A given-back pull costs nothing here (the simulator may charge it). The
*resumable runs* semantics (an arm is a training run; reaching `m` from `m'` costs
`λ(m) − λ(m')`) is accounted by the runner and the adapters, see :mod:`mf_sched.sim.simulate`.

Writing a policy: subclass :class:`Policy` (or :class:`RoundPolicy` for the common "hand out a round
of pulls, wait for all, decide" shape), implement `_propose` / `_on_issue` / `_observe` /
`_is_done` / `_recommend`, list your state attributes in `_state_attrs` and call
:meth:`Policy._set_config` with your constructor arguments. A constructor lists only its own arguments
and ends in `**kwargs` passed on to `super().__init__`: the base's arguments (`noise`, `budget`,
`seed`, ...) then show in its signature as well (:func:`inherit_base_arguments`), which is what
:func:`mf_sched.registry.build_policy` and the CLI read. Answers come from :meth:`Policy._answer`;
arguments are checked with :mod:`mf_sched._validate`.

Where the parts live (everything is imported from `mf_sched.policy`): the protocol, :class:`Pull` and
:class:`Policy` in `_protocol.py`; the hooks a subclass implements and the answer builder in `_hooks.py`;
saving, restoring and replaying in `_persistence.py`; :class:`Recommendation` in `_recommendation.py`;
:class:`RoundPolicy` and :class:`ArmSumRoundPolicy` in `_rounds.py`; the errors in `_errors.py`; tie-breaking
and other helpers for writing a policy in `_tools.py`.
"""

from __future__ import annotations

from mf_sched._validate import check_delta as check_delta  # re-exported: mf_sched.policy.check_delta
from mf_sched.policy._errors import (
    DuplicateTellError,
    InvalidValueError,
    NotStoppingWarning,
    PolicyError,
    ReplayMismatchError,
    UnknownPullError,
)
from mf_sched.policy._hooks import inherit_base_arguments
from mf_sched.policy._persistence import STATE_FORMAT_VERSION
from mf_sched.policy._persistence import _state_arms as _state_arms  # for subclasses' _validate_state
from mf_sched.policy._persistence import _state_int as _state_int
from mf_sched.policy._protocol import Policy, Pull
from mf_sched.policy._recommendation import Recommendation, empirical_best, make_recommendation
from mf_sched.policy._rounds import ArmSumRoundPolicy, RoundPolicy
from mf_sched.policy._tools import active_mask_summary, argmax_random, iter_pulls, top_k_random

__all__ = [
    "Policy",
    "Pull",
    "Recommendation",
    "RoundPolicy",
    "ArmSumRoundPolicy",
    "PolicyError",
    "UnknownPullError",
    "DuplicateTellError",
    "ReplayMismatchError",
    "InvalidValueError",
    "NotStoppingWarning",
    "STATE_FORMAT_VERSION",
    "make_recommendation",
    "empirical_best",
    "inherit_base_arguments",
    "argmax_random",
    "top_k_random",
    "active_mask_summary",
    "iter_pulls",
]
