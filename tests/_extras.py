"""Which optional extra an ImportError says is missing (imported as ``_extras``; tests/ is on the path).

A documentation example or a docstring example that needs an extra (Optuna, scikit-learn, ...) is skipped, with the
reason, where that extra is not installed; any other ImportError — one inside mf-sched itself — still fails."""

from __future__ import annotations

import re

__all__ = ["missing_extra"]


def missing_extra(exc: BaseException) -> str | None:
    """The reason to skip when ``exc`` (or the exception it was raised from) says an optional dependency is
    missing — a ``ModuleNotFoundError`` for a module outside mf-sched, or mf-sched's own ImportError naming the
    extra to install (``pip install 'mf-sched[gp]'``) — else None.

    >>> missing_extra(ModuleNotFoundError("No module named 'optuna'", name="optuna"))
    "No module named 'optuna' (an optional extra that is not installed)"
    >>> missing_extra(ModuleNotFoundError("No module named 'mf_sched.nope'", name="mf_sched.nope")) is None
    True
    """
    while exc is not None:
        if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] != "mf_sched":
            return f"{exc} (an optional extra that is not installed)"
        if isinstance(exc, ImportError) and re.search(r"pip install 'mf-sched\[\w+\]'", str(exc)):
            return str(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None
