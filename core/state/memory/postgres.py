"""Preference memory in PostgreSQL: the local store's rules on the state store's database.

Chosen when ``SOP_STATE_URL`` names a PostgreSQL database and Zep is not configured, so every API
worker and playground process sees the same customer preferences. The facts, their merge rules and
the once-per-turn write are those of :class:`~core.state.memory.local.LocalPreferenceMemory`; only the
connection differs (a pooled psycopg connection, writes serialised by an advisory lock).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from core.state.memory.base import PreferenceEntry
from core.state.memory.local import LocalPreferenceMemory, _entries
from core.state.sessions.base import redact
from core.state.sessions.postgres import open_pool

WRITE_LOCK = 7_310_002  # advisory lock key of preference writes


class _Connection:
    """A psycopg connection speaking the SQLite module's ``?`` placeholders (the shared SQL)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])


class PostgresPreferenceMemory(LocalPreferenceMemory):
    """A :class:`~core.state.memory.base.PreferenceMemory` on PostgreSQL (the ``preferences`` table)."""

    def __init__(self, url: str, *, pool: Any = None) -> None:  # noqa: D107 - the parent opens SQLite; not here
        self.path = redact(url)
        self._pool = pool if pool is not None else open_pool(url, max_size=4)
        self._own_pool = pool is None

    @property
    def label(self) -> str:
        return f"PostgreSQL ({self.path})"

    def entries(self, customer_id: str) -> list[PreferenceEntry]:
        with self._pool.connection() as conn:
            return _entries(_Connection(conn), customer_id)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._pool is not None and self._own_pool:
            self._pool.close()
        self._pool = None

    def __repr__(self) -> str:
        return f"PostgresPreferenceMemory({self.path!r})"

    @contextmanager
    def _transaction(self) -> Iterator[Any]:  # type: ignore[override]
        """One transaction; writes of preferences are serialised (the once-per-turn check holds)."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield _Connection(conn)
