"""`curves.learning_curves` and `curves.calibration` were split into private modules (issue 25): every public name
they had is still importable from them, without a warning, as the object the private module defines."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mf_sched.curves as curves
from mf_sched.curves import _estimators, _readers, _rung_values, calibration, learning_curves

# the __all__ of both modules before the split, and where each name lives now
BEFORE = {
    learning_curves: {
        "LearningCurves": learning_curves,
        "RungValues": _rung_values,
        "check_mode": _readers,
        "parse_fidelities": _readers,
        "read_csv_columns": _readers,
    },
    calibration: {
        "Calibration": calibration,
        "Coverage": _estimators,
        "calibrate": calibration,
        "holdout_coverage": _estimators,
        "quantile_bound": _estimators,
        "bound_count": _estimators,
        "narrowest_band": _estimators,
        "estimate_zeta": _estimators,
        "estimate_gamma": _estimators,
        "estimate_sigma": _estimators,
        "estimate_costs": _estimators,
        "non_increasing_envelope": _estimators,
        "geometric_rungs": calibration,
        "suggest_ladder": calibration,
        "cost_bias_convexity": _estimators,
        "RaceCalibration": None,  # re-exported from mf_sched.racing.calibration, as before
        "calibrate_race": None,
    },
}


@pytest.mark.parametrize("module", list(BEFORE), ids=lambda m: m.__name__)
def test_every_public_name_is_still_there_as_the_same_object(module):
    names = BEFORE[module]
    assert sorted(module.__all__) == sorted(names)
    for name, home in names.items():
        obj = getattr(module, name)
        if home is not None:
            assert obj is getattr(home, name), name
            assert obj.__module__ == home.__name__, name


def test_the_package_re_exports_the_table_module():
    assert sorted(curves.__all__) == sorted(learning_curves.__all__)
    assert all(getattr(curves, n) is getattr(learning_curves, n) for n in curves.__all__)
    assert curves.LearningCurves.__module__ == "mf_sched.curves.learning_curves"


def test_star_imports_of_the_old_paths_raise_no_warning():
    code = (
        "from mf_sched.curves.learning_curves import *; from mf_sched.curves.calibration import *\n"
        "assert calibrate.__name__ == 'calibrate' and RungValues.__name__ == 'RungValues'"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
