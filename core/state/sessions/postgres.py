"""PostgreSQL implementation of the state store, for several processes and machines on one database.

The same contract as SQLite (``core.state.sessions.base``): optimistic locking on ``version`` with the
trace in the same transaction, and one turn at a time per session. The turn lock is a PostgreSQL
advisory lock held on its own pooled connection for the turn, so it holds across API workers,
playground processes and machines; the server releases it if its holder dies. Connections come
from a psycopg 3 pool. The schema is created or migrated on open (numbered migrations in
``schema_migrations``, applied under a lock so several workers starting at once apply each once).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from core.shared.errors import EngineError, StateConflictError
from core.shared.models import Goal, SessionState, Trace
from core.shared.redaction import mask_values
from core.state.sessions.base import (
    RUN_COLUMNS,
    check_save_arguments,
    redact,
    retired_rows,
    run_dict,
    settled,
    side_effect_outcomes,
)
from core.state.sessions.locks import pauses

log = logging.getLogger(__name__)

MIGRATION_LOCK = 7_310_001  # the advisory lock key that serialises schema migrations
POOL_MAX = int(os.environ.get("SOP_PG_POOL_MAX", "16"))
POOL_WAIT_S = 30.0
CONNECT_TIMEOUT_S = 5
_RUN_SELECT = ", ".join(RUN_COLUMNS)

# Numbered migrations: each runs once, in order, in one transaction. Append; never edit a released one.
MIGRATIONS: list[tuple[int, str]] = [
    (1, """
CREATE TABLE IF NOT EXISTS sessions (
    session_id  TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL DEFAULT '',
    version     INTEGER NOT NULL,
    data        TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS incidents (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS incidents_session ON incidents (session_id, at);
CREATE TABLE IF NOT EXISTS side_effects (
    key        TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    tool       TEXT NOT NULL,
    args       TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    state      TEXT NOT NULL DEFAULT 'intended'
);
CREATE INDEX IF NOT EXISTS side_effects_session ON side_effects (session_id, state);
CREATE TABLE IF NOT EXISTS traces (
    session_id TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, turn)
);
CREATE TABLE IF NOT EXISTS preferences (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id TEXT NOT NULL,
    field       TEXT NOT NULL,
    value       TEXT NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    turn        INTEGER NOT NULL DEFAULT 0,
    message     TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS preferences_customer ON preferences (customer_id, id);
"""),
    (2, """
CREATE TABLE IF NOT EXISTS retired_goals (
    session_id TEXT NOT NULL,
    goal_id    TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, goal_id)
);
"""),
    (3, """
CREATE TABLE IF NOT EXISTS side_effect_runs (
    session_id TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    turn_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args       TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    state      TEXT NOT NULL DEFAULT 'started',
    turn_state TEXT NOT NULL DEFAULT 'running',
    id         BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (session_id, turn_id, key)
);
CREATE INDEX IF NOT EXISTS side_effect_runs_open ON side_effect_runs (turn_state, session_id);
CREATE INDEX IF NOT EXISTS side_effect_runs_turn ON side_effect_runs (session_id, turn);
INSERT INTO side_effect_runs (session_id, turn, turn_id, key, tool, args, at, state, turn_state)
SELECT session_id, turn, '', key, tool, args, at,
       CASE state WHEN 'intended' THEN 'started' WHEN 'unconfirmed' THEN 'unknown' ELSE state END,
       CASE state WHEN 'intended' THEN 'running' WHEN 'unconfirmed' THEN 'lost' ELSE 'committed' END
FROM side_effects ON CONFLICT DO NOTHING;
DROP TABLE side_effects;
"""),
]


def open_pool(url: str, max_size: int = POOL_MAX) -> Any:
    """A connection pool for ``url`` with the schema migrated (autocommit connections).

    Raises:
        EngineError: the server cannot be reached (within CONNECT_TIMEOUT_S) or the schema cannot be
            brought up to date; the message names the URL without its password.
    """
    import psycopg
    from psycopg_pool import ConnectionPool

    try:  # one plain connection first: a wrong URL fails at once and clearly, not after the pool's retries
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            migrate(conn)
    except psycopg.Error as exc:
        raise EngineError(f"PostgreSQL state store {redact(url)!r} cannot be used: "
                          f"{redact(str(exc)).strip()}") from None
    pool = ConnectionPool(url, min_size=1, max_size=max(2, max_size), timeout=POOL_WAIT_S, open=False,
                          kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S}, name="sop-state")
    pool.open(wait=True, timeout=POOL_WAIT_S)
    return pool


def migrate(conn: Any) -> list[int]:
    """Apply the migrations this database lacks, once even with several processes starting together.
    Returns the versions applied."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                     "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        done = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, sql in MIGRATIONS:
            if version in done:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            applied.append(version)
    if applied:
        log.info("state store schema migrated to version %s", applied[-1])
    return applied


class PostgresStateStore:
    """A :class:`~core.state.sessions.base.StateStore` on PostgreSQL (psycopg 3, a connection pool)."""

    def __init__(self, url: str, *, pool: Any = None) -> None:
        self.url = url
        self._pool = pool if pool is not None else open_pool(url)
        self._own_pool = pool is None

    # -- StateStore -----------------------------------------------------------------

    def load(self, session_id: str) -> SessionState | None:
        from core.state.sessions.sqlite import _decode_state

        with self._conn() as conn:
            row = conn.execute("SELECT data FROM sessions WHERE session_id = %s", (session_id,)).fetchone()
        return None if row is None else _decode_state(session_id, row[0])

    def save(self, state: SessionState, expected_version: int, trace: Trace | None = None) -> None:
        check_save_arguments(state, expected_version, trace)
        data = mask_values(state.model_dump_json())  # tool output kept in goals: no configured secret stored
        traced = redact(trace.model_dump_json(), data=True) if trace is not None else ""
        with self._conn() as conn, conn.transaction():
            if expected_version == 0:
                cur = conn.execute("INSERT INTO sessions (session_id, customer_id, version, data, updated_at) "
                                   "VALUES (%s, %s, %s, %s, clock_timestamp()) ON CONFLICT (session_id) DO NOTHING",
                                   (state.session_id, state.customer_id, state.version, data))
            else:
                cur = conn.execute("UPDATE sessions SET customer_id = %s, version = %s, data = %s, "
                                   "updated_at = clock_timestamp() WHERE session_id = %s AND version = %s",
                                   (state.customer_id, state.version, data, state.session_id, expected_version))
            if cur.rowcount != 1:
                row = conn.execute("SELECT version FROM sessions WHERE session_id = %s",
                                   (state.session_id,)).fetchone()
                raise StateConflictError(state.session_id, expected_version, None if row is None else int(row[0]))
            if trace is not None:
                conn.execute("INSERT INTO traces (session_id, turn, data) VALUES (%s, %s, %s) "
                             "ON CONFLICT (session_id, turn) DO UPDATE SET data = EXCLUDED.data",
                             (trace.session_id, trace.turn, traced))
            if state.retired:
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO retired_goals (session_id, goal_id, turn, data) "
                                    "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, goal_id) "
                                    "DO UPDATE SET turn = EXCLUDED.turn, data = EXCLUDED.data", retired_rows(state))
            turn_id = trace.turn_id if trace is not None else ""  # this turn's runs are filed under it
            outcomes = side_effect_outcomes(trace)
            if outcomes:
                with conn.cursor() as cur:
                    cur.executemany("UPDATE side_effect_runs SET state = %s WHERE session_id = %s AND turn_id = %s "
                                    "AND key = %s", [(st, state.session_id, turn_id, key) for st, key in outcomes])
            conn.execute("UPDATE side_effect_runs SET turn_state = 'committed', turn = %s WHERE session_id = %s "
                         "AND turn_id = %s", (state.turn, state.session_id, turn_id))  # re-run after a conflict

    def session_lock(self, session_id: str, wait_s: float) -> AbstractContextManager[float]:
        """Hold the session's advisory lock on a connection of its own for the body."""
        return self._hold(session_id, wait_s)

    @contextmanager
    def _hold(self, session_id: str, wait_s: float) -> Iterator[float]:
        started = time.monotonic()
        waits = pauses(session_id, wait_s, started)
        with self._conn() as conn:
            while not conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                                   (session_id,)).fetchone()[0]:
                next(waits)
            try:
                yield time.monotonic() - started
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (session_id,))

    def note_incident(self, session_id: str, kind: str, detail: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute("INSERT INTO incidents (session_id, at, kind, data) VALUES (%s, clock_timestamp(), %s, %s)",
                         (session_id, kind, redact(json.dumps(detail, default=str), data=True)))

    def incidents(self, session_id: str) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT at, kind, data FROM incidents WHERE session_id = %s ORDER BY at, id",
                                (session_id,)).fetchall()
        return [{"at": _iso(at), "kind": kind, "detail": json.loads(data)} for at, kind, data in rows]

    def note_side_effect(self, session_id: str, turn: int, key: str, tool: str, args: dict[str, Any],
                         turn_id: str = "") -> None:
        with self._conn() as conn:
            conn.execute("INSERT INTO side_effect_runs (session_id, turn, turn_id, key, tool, args, at) "
                         "VALUES (%s, %s, %s, %s, %s, %s, clock_timestamp()) "
                         "ON CONFLICT (session_id, turn_id, key) DO UPDATE SET state = 'started'",
                         (session_id, turn, turn_id, key, tool, json.dumps(args, default=str)))

    def side_effect_outcome(self, session_id: str, turn_id: str, key: str, outcome: str) -> None:
        with self._conn() as conn:
            conn.execute("UPDATE side_effect_runs SET state = %s WHERE session_id = %s AND turn_id = %s AND key = %s",
                         (outcome, session_id, turn_id, key))

    def settle_side_effects(self, session_id: str, turn_id: str = "") -> list[dict[str, Any]]:
        where = "session_id = %s AND turn_state = 'running' AND turn_id != %s"
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_RUN_SELECT} FROM side_effect_runs WHERE {where} "  # noqa: S608
                                "ORDER BY at, id", (session_id, turn_id)).fetchall()
            if rows:
                conn.execute("UPDATE side_effect_runs SET turn_state = 'lost', state = CASE state WHEN 'started' "
                             f"THEN 'unknown' ELSE state END WHERE {where}", (session_id, turn_id))  # noqa: S608
        return [settled(run_dict(r)) for r in rows]

    def unsettled_side_effect_sessions(self) -> list[str]:
        with self._conn() as conn:
            rows = conn.execute("SELECT DISTINCT session_id FROM side_effect_runs "
                                "WHERE turn_state = 'running'").fetchall()
        return [r[0] for r in rows]

    def side_effect_runs(self, session_id: str, turn: int | None = None) -> list[dict[str, Any]]:
        """Every side-effecting run of a session (of one turn number), oldest first."""
        if turn is None:
            return self._runs("session_id = %s", (session_id,))
        return self._runs("session_id = %s AND turn = %s", (session_id, turn))

    def unconfirmed_side_effects(self, session_id: str) -> list[dict[str, Any]]:
        return self._runs("session_id = %s AND turn_state = 'running'", (session_id,))

    def side_effects_to_check(self, session_id: str) -> list[dict[str, Any]]:
        return self._runs("session_id = %s AND (state = 'unknown' OR (state = 'done' AND turn_state = 'lost'))",
                          (session_id,))

    def _runs(self, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_RUN_SELECT} FROM side_effect_runs WHERE {where} "  # noqa: S608
                                "ORDER BY at, id", params).fetchall()
        return [run_dict(r) for r in rows]

    def list_sessions(self) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT session_id, customer_id, version, updated_at, "
                                "(data::jsonb)->>'handoff_turn' FROM sessions "
                                "ORDER BY updated_at DESC, session_id").fetchall()
        return [{"session_id": sid, "customer_id": cid, "version": int(v), "updated_at": _iso(at),
                 "handoff_turn": int(h) if h is not None else None} for sid, cid, v, at, h in rows]

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM traces WHERE session_id = %s ORDER BY turn",
                                (session_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def retired_goals(self, session_id: str) -> list[Goal]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM retired_goals WHERE session_id = %s ORDER BY turn, goal_id",
                                (session_id,)).fetchall()
        return [Goal.model_validate_json(r[0]) for r in rows]

    def last_trace(self, session_id: str) -> dict[str, Any] | None:
        with self._conn() as conn:
            row = conn.execute("SELECT data FROM traces WHERE session_id = %s ORDER BY turn DESC LIMIT 1",
                               (session_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def delete_session(self, session_id: str) -> None:
        with self._conn() as conn, conn.transaction():
            for table in ("incidents", "side_effect_runs", "traces", "retired_goals", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))  # noqa: S608 - fixed names

    def close(self) -> None:
        if self._pool is not None and self._own_pool:
            self._pool.close()
        self._pool = None

    # -- helpers --------------------------------------------------------------------

    @property
    def pool(self) -> Any:
        """The connection pool (shared with the preference memory of the same database)."""
        if self._pool is None:
            raise EngineError(f"state store {redact(self.url)!r} is closed")
        return self._pool

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        import psycopg

        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise EngineError(f"PostgreSQL state store {redact(self.url)!r}: {exc}") from exc

    def __enter__(self) -> PostgresStateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStateStore({redact(self.url)!r})"


def _iso(value: Any) -> str:
    return value.isoformat(timespec="microseconds") if isinstance(value, datetime) else str(value)
