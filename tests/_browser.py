"""Headless Chromium for the tests that look at pages as a person does (imported as ``_browser``; tests/ is on the
path): Debian's ``chromium`` package, or the binary named by the ``CHROMIUM`` environment variable."""

from __future__ import annotations

import os
import shutil

__all__ = ["CHROMIUM", "FLAGS", "NO_CHROMIUM"]

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
#: the reason a test that needs Chromium is skipped without it
NO_CHROMIUM = (
    "no Chromium: install Debian's chromium package (apt-get install chromium chromium-driver) or set CHROMIUM"
)
# the flags that work on a machine without a display, a sandbox or a network (run as root)
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]  # fmt: skip
