"""`python -m mf_sched.cli`: the same as the `mf-sched` console script."""

from __future__ import annotations

import sys

from mf_sched.cli.app import main

sys.exit(main())
