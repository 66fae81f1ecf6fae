"""What can go wrong in the ask/tell protocol: the errors a policy raises and the warning it gives.

Every error is a :class:`PolicyError` (a `ValueError`), and a call that raises one leaves the policy
unchanged (a batch is all-or-nothing). A saved state that cannot be loaded raises
:class:`~mf_sched._serialize.StateFormatError` instead (see :meth:`mf_sched.policy.Policy.load_state_dict`).
"""

from __future__ import annotations

__all__ = [
    "NotStoppingWarning",
    "PolicyError",
    "UnknownPullError",
    "DuplicateTellError",
    "InvalidValueError",
    "ReplayMismatchError",
]


class NotStoppingWarning(UserWarning):
    """A fixed-confidence policy has made many pulls without stopping (see
    :attr:`~mf_sched.policy.Policy.stall_warning_pulls`): its best arms may be tied, and a δ-correct policy can
    never tell tied arms apart."""


class PolicyError(ValueError):
    """A call that the policy's protocol does not allow; the policy is left unchanged."""


class UnknownPullError(PolicyError):
    """A tell or give-back for a pull id this policy never handed out."""


class DuplicateTellError(PolicyError):
    """A second tell (or a give-back) for a pull that is no longer outstanding."""


class InvalidValueError(PolicyError):
    """An observation that is not finite (or outside the declared reward range)."""


class ReplayMismatchError(PolicyError):
    """A replayed `ask` produced another pull than the recorded one."""
