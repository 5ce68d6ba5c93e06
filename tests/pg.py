"""One real PostgreSQL server for the test session (Debian's package, 127.0.0.1), a database per test.

Without PostgreSQL installed the tests that need it are skipped locally and fail in CI (``CI`` set),
where ``make test`` installs it first (``scripts/need-postgres``).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading

import pytest

from core.state.sessions.pgserver import LocalPostgres, find_binaries, wait_ready

_lock = threading.Lock()
_server: LocalPostgres | None = None


def server() -> LocalPostgres:
    """The session's server, started on first use and stopped when the tests end."""
    global _server
    with _lock:
        if _server is None:
            if find_binaries() is None:
                message = "PostgreSQL is not installed (Debian: apt-get install postgresql; make test does it)"
                if os.environ.get("CI"):
                    pytest.fail(message)
                pytest.skip(message)
            pg = LocalPostgres(fsync=False, max_connections=300).start()
            atexit.register(pg.stop)
            wait_ready(pg.url)
            _server = pg
        return _server


def database_url(name: str) -> str:
    """A database of its own (created on first use) on the session's server."""
    import psycopg

    pg = server()
    db = "t_" + hashlib.sha1(name.encode()).hexdigest()[:20]
    with psycopg.connect(pg.url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{db}"')
    return pg.url.rsplit("/", 1)[0] + "/" + db
