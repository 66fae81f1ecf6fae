"""Progress reporting on stderr: tqdm when installed (the `bench` extra), else a small fallback."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any


class _Fallback:
    def __init__(self, total: int | None, desc: str) -> None:
        self.total, self.desc, self.n = total, desc, 0
        self.postfix = ""
        self.t0 = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, k: int = 1) -> None:
        self.n += k
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 5.0) and (self.total is None or self.n < self.total):
            return
        self.last = now
        el = now - self.t0
        if self.total is None:
            msg = f"{self.desc}: {self.n} [{el:.1f}s elapsed]"
        else:
            eta = el / self.n * (self.total - self.n) if self.n else float("nan")
            msg = f"{self.desc}: {self.n}/{self.total} [{el:.1f}s elapsed, ~{eta:.1f}s left]"
        if self.postfix:
            msg += f" {self.postfix}"
        sys.stderr.write(("\r" + msg) if self.tty else (msg + "\n"))
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Progress:
    """`with Progress(total, desc, enabled) as bar: bar.update()` (`total` None: a counter without an end)."""

    def __init__(self, total: int | None, desc: str = "", enabled: bool = True) -> None:
        self.enabled = enabled and (total is None or total > 1)
        self._bar: Any = None
        if self.enabled:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False)
            except ImportError:
                self._bar = _Fallback(total, desc)

    def update(self, k: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(k)

    def note(self, text: str) -> None:
        """Show `text` after the bar (e.g. the current gap of an iterative method)."""
        if self._bar is None:
            return
        if isinstance(self._bar, _Fallback):
            self._bar.postfix = text
        else:
            self._bar.set_postfix_str(text, refresh=False)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()


def iterate(items: list[Any], desc: str, enabled: bool) -> Iterator[Any]:
    with Progress(len(items), desc, enabled) as bar:
        for it in items:
            yield it
            bar.update()
