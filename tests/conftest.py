from __future__ import annotations

import os
import resource
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from mf_sched import FidelityLadder, Instance
from mf_sched.sim.instance import published_instance_path

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MF_SCHED_DATA", ROOT.parent / "shared" / "data"))  # learning curves (not shipped)
INSTANCES = published_instance_path("poiani2024-5x2").parent  # the published instances shipped with the package


# Property and fuzz tests draw the same examples on every run (derandomize): CI judges exactly what ran here, and a
# failure reproduces from the test name alone. `make fuzz` explores with fresh random draws
# (HYPOTHESIS_PROFILE=explore).
settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

MEMORY_HEADROOM = 4 << 30  # bytes of address space a capped test may add to what the process already maps


@pytest.fixture
def memory_cap():
    """Cap the test process's address space at what it maps now plus 4 GiB for the duration of a test, so that a
    runaway allocation (a fuzzed parameter asking for a 300 TiB round) fails that test with a MemoryError instead
    of taking the machine's memory and the whole run with it. Linux only (reads /proc/self/status)."""
    status = Path("/proc/self/status")
    if not status.is_file():
        yield
        return
    vm = next(int(line.split()[1]) * 1024 for line in status.read_text().splitlines() if line.startswith("VmSize:"))
    old = resource.getrlimit(resource.RLIMIT_AS)
    hard = old[1]
    cap = vm + MEMORY_HEADROOM if hard == resource.RLIM_INFINITY else min(vm + MEMORY_HEADROOM, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def shared_instance(name: str) -> Path:
    """The file of a published instance shipped with mf-sched (``mf_sched/data/instances``)."""
    return published_instance_path(name)


@pytest.fixture
def small_instance() -> Instance:
    """3 arms, 3 fidelities, Gaussian; arm 2 is best; low fidelities respect zeta."""
    means = [[0.30, 0.35, 0.40], [0.45, 0.50, 0.55], [0.60, 0.70, 0.80]]
    ladder = FidelityLadder(costs=[1.0, 3.0, 9.0], zeta=[0.25, 0.12, 0.0], gamma=[0.1, 0.05, 0.0])
    return Instance(means, ladder, {"kind": "gaussian", "sigma": 0.1}, name="small")


@pytest.fixture
def bernoulli_instance() -> Instance:
    means = [[0.2, 0.3], [0.5, 0.6], [0.6, 0.75]]
    return Instance(means, FidelityLadder([1.0, 4.0], [0.2, 0.0]), {"kind": "bernoulli"}, name="bern")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (tests/integrations/test_ray.py, test_nas_examples.py); always shut
    down.

    Ray's workers import trainables by module: tests/integrations (test_ray's trainables) and the repository root
    (``examples.nas``) go on their PYTHONPATH."""
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    paths = (str(ROOT / "tests" / "integrations"), str(ROOT), os.environ.get("PYTHONPATH", ""))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A real PostgreSQL server for the session (tests/_postgres.py: pgserver bundles the binaries); skipped with
    the reason where it cannot start."""
    from _postgres import PostgresUnavailable, start_postgres

    try:
        url, stop = start_postgres(tmp_path_factory.mktemp("postgres"))
    except PostgresUnavailable as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    yield url
    stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """An SQLAlchemy URL of a fresh, empty database on the session's PostgreSQL server."""
    from _postgres import new_database

    return new_database(postgres_server)
