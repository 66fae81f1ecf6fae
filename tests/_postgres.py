"""A real, self-contained PostgreSQL server for the tests: `pgserver` (PyPI, in the ``dev`` extra) bundles the
server binaries, so nothing has to be installed on the machine. Used by the ``postgres_url`` fixture of
conftest.py; the server listens on a Unix socket only (no TCP port) and is deleted at the end of the session.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """The server cannot be started here (the reason is the message)."""


def start_postgres(root: Path) -> tuple[str, Callable[[], None]]:
    """Start a PostgreSQL server with its data under ``root``; return (SQLAlchemy URL, stop function).

    Raises :class:`PostgresUnavailable` naming the missing piece when it cannot start."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs, at import: XDG_RUNTIME_DIR is not set
            import pgserver
    except ImportError as e:
        raise PostgresUnavailable(f"pgserver is not installed ({e}); pip install -e '.[dev]'") from e
    try:
        import sqlalchemy
    except ImportError as e:  # pragma: no cover - optuna depends on it
        raise PostgresUnavailable(f"sqlalchemy is not installed ({e})") from e
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    except Exception as e:  # a sandbox without useradd (as root), no shared memory, ...
        raise PostgresUnavailable(f"pgserver could not start a PostgreSQL server: {type(e).__name__}: {e}") from e
    url = server.get_uri()
    try:
        engine = sqlalchemy.create_engine(url)
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("select 1"))
        engine.dispose()
    except Exception as e:  # no driver (psycopg) for SQLAlchemy's default postgresql dialect
        server.cleanup()
        why = f"{type(e).__name__}: {e}"
        raise PostgresUnavailable(f"the PostgreSQL server started but cannot be reached: {why}") from e
    return url, server.cleanup


def new_database(url: str, prefix: str = "t") -> str:
    """Create a fresh database on the server of ``url``; return its URL (one per test: no shared state)."""
    import sqlalchemy

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return sqlalchemy.engine.make_url(url).set(database=name).render_as_string(hide_password=False)
