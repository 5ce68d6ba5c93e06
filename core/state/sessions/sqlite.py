"""SQLite implementation of the state store (WAL mode, optimistic locking)."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.shared.errors import EngineError, SessionBusyError, StateConflictError
from core.shared.models import SCHEMA_VERSION, Goal, SessionState, Trace, utcnow
from core.shared.redaction import mask_values, redact
from core.state.sessions.base import (
    RUN_COLUMNS,
    check_save_arguments,
    retired_rows,
    run_dict,
    settled,
    side_effect_outcomes,
)
from core.state.sessions.locks import FileSessionLocks, LocalSessionLocks

log = logging.getLogger(__name__)

MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 5000
_RUN_SELECT = ", ".join(RUN_COLUMNS)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id  TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL DEFAULT '',
    version     INTEGER NOT NULL,
    data        TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS incidents (
    session_id TEXT NOT NULL,
    at         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS incidents_session ON incidents (session_id, at);
CREATE TABLE IF NOT EXISTS side_effect_runs (
    session_id TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    turn_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args       TEXT NOT NULL,
    at         TEXT NOT NULL,
    state      TEXT NOT NULL DEFAULT 'started',
    turn_state TEXT NOT NULL DEFAULT 'running',
    PRIMARY KEY (session_id, turn_id, key)
);
CREATE INDEX IF NOT EXISTS side_effect_runs_open ON side_effect_runs (turn_state, session_id);
CREATE INDEX IF NOT EXISTS side_effect_runs_turn ON side_effect_runs (session_id, turn);
CREATE TABLE IF NOT EXISTS traces (
    session_id TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, turn)
);
CREATE TABLE IF NOT EXISTS retired_goals (
    session_id TEXT NOT NULL,
    goal_id    TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, goal_id)
);
"""


class SqliteStateStore:
    """A :class:`~core.state.sessions.base.StateStore` kept in one SQLite database.

    One connection is shared by all threads and guarded by a lock; writes run in
    ``BEGIN IMMEDIATE`` transactions so several processes can share a file too.
    """

    def __init__(self, path: str | Path) -> None:
        """Open (and create if needed) the database at ``path``.

        Args:
            path: A file path, or ``":memory:"`` for a private in-memory database.
                Missing parent directories are created.
        """
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = _connect(self.path)
        self._turns = LocalSessionLocks() if self.path == MEMORY else FileSessionLocks(self.path + ".locks")

    # -- StateStore -----------------------------------------------------------------

    def load(self, session_id: str) -> SessionState | None:
        """Return a fresh copy of the stored state, or None if the session is unknown.

        Raises:
            EngineError: The row was written by a newer schema or cannot be read.
        """
        with self._lock:
            row = self._connection().execute(
                "SELECT data FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _decode_state(session_id, row[0])

    def save(self, state: SessionState, expected_version: int, trace: Trace | None = None) -> None:
        """Store ``state`` if the stored version still equals ``expected_version``.

        Args:
            state: The new state; ``state.version`` must be ``expected_version + 1``.
            expected_version: The version the caller loaded (0 = must not exist yet).
            trace: The turn's trace, stored in the same transaction.

        Raises:
            StateConflictError: Someone else saved first; nothing was written.
            EngineError: The arguments contradict each other.
        """
        check_save_arguments(state, expected_version, trace)
        data = mask_values(state.model_dump_json())  # tool output kept in goals: no configured secret stored
        traced = redact(trace.model_dump_json(), data=True) if trace is not None else ""
        with self._transaction() as conn:
            stamp = _next_timestamp(conn)
            if expected_version == 0:
                _insert_session(conn, state, data, stamp)
            else:
                _update_session(conn, state, expected_version, data, stamp)
            if trace is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO traces (session_id, turn, data) VALUES (?, ?, ?)",
                    (trace.session_id, trace.turn, traced),
                )
            if state.retired:
                conn.executemany("INSERT OR REPLACE INTO retired_goals (session_id, goal_id, turn, data) "
                                 "VALUES (?, ?, ?, ?)", retired_rows(state))
            # this turn's runs are filed under it; a run's outcome is written once more with the commit
            turn_id = trace.turn_id if trace is not None else ""
            conn.executemany("UPDATE side_effect_runs SET state = ? WHERE session_id = ? AND turn_id = ? AND key = ?",
                             [(st, state.session_id, turn_id, key) for st, key in side_effect_outcomes(trace)])
            conn.execute("UPDATE side_effect_runs SET turn_state = 'committed', turn = ? WHERE session_id = ? "
                         "AND turn_id = ?", (state.turn, state.session_id, turn_id))  # re-run after a conflict: its turn

    def retired_goals(self, session_id: str) -> list[Goal]:
        """The session's finished goals moved out of its working state, oldest first."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT data FROM retired_goals WHERE session_id = ? ORDER BY turn, rowid", (session_id,)
            ).fetchall()
        return [Goal.model_validate_json(r[0]) for r in rows]

    def session_lock(self, session_id: str, wait_s: float) -> AbstractContextManager[float]:
        """Hold the session's turn lock (a file lock next to the database, across processes)."""
        return self._turns.hold(session_id, wait_s)

    def note_incident(self, session_id: str, kind: str, detail: dict[str, Any]) -> None:
        """Record that a turn of the session could not run."""
        with self._transaction() as conn:
            conn.execute("INSERT INTO incidents (session_id, at, kind, data) VALUES (?, ?, ?, ?)",
                         (session_id, utcnow().isoformat(timespec="microseconds"), kind,
                          redact(json.dumps(detail, default=str), data=True)))

    def note_side_effect(self, session_id: str, turn: int, key: str, tool: str, args: dict[str, Any],
                         turn_id: str = "") -> None:
        """Record a side-effecting run as started, committed before it is sent."""
        with self._transaction() as conn:
            conn.execute("INSERT INTO side_effect_runs (session_id, turn, turn_id, key, tool, args, at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn_id, key) "
                         "DO UPDATE SET state = 'started'",
                         (session_id, turn, turn_id, key, tool, json.dumps(args, default=str),
                          utcnow().isoformat(timespec="microseconds")))

    def side_effect_outcome(self, session_id: str, turn_id: str, key: str, outcome: str) -> None:
        """Mark a run with what its call returned."""
        with self._transaction() as conn:
            conn.execute("UPDATE side_effect_runs SET state = ? WHERE session_id = ? AND turn_id = ? AND key = ?",
                         (outcome, session_id, turn_id, key))

    def settle_side_effects(self, session_id: str, turn_id: str = "") -> list[dict[str, Any]]:
        """Settle the runs of the session's turns that never committed (under the session's lock)."""
        where = "session_id = ? AND turn_state = 'running' AND turn_id != ?"
        with self._lock:  # read first: most turns find nothing to settle, and write nothing
            rows = self._connection().execute(
                f"SELECT {_RUN_SELECT} FROM side_effect_runs WHERE {where} ORDER BY at, rowid",  # noqa: S608
                (session_id, turn_id)).fetchall()
        if rows:
            with self._transaction() as conn:
                conn.execute("UPDATE side_effect_runs SET turn_state = 'lost', state = CASE state WHEN 'started' "
                             f"THEN 'unknown' ELSE state END WHERE {where}", (session_id, turn_id))  # noqa: S608
        return [settled(run_dict(r)) for r in rows]

    def unsettled_side_effect_sessions(self) -> list[str]:
        """The sessions with runs of turns that neither committed nor were settled."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT DISTINCT session_id FROM side_effect_runs WHERE turn_state = 'running'").fetchall()
        return [r[0] for r in rows]

    def side_effect_runs(self, session_id: str, turn: int | None = None) -> list[dict[str, Any]]:
        """Every side-effecting run of a session (of one turn number), oldest first."""
        if turn is None:
            return self._runs("session_id = ?", (session_id,))
        return self._runs("session_id = ? AND turn = ?", (session_id, turn))

    def unconfirmed_side_effects(self, session_id: str) -> list[dict[str, Any]]:
        """Runs of turns that have not committed and are not settled yet."""
        return self._runs("session_id = ? AND turn_state = 'running'", (session_id,))

    def side_effects_to_check(self, session_id: str) -> list[dict[str, Any]]:
        """Runs whose outcome is unknown, or done in a turn that never committed, for a person to check."""
        return self._runs("session_id = ? AND (state = 'unknown' OR (state = 'done' AND turn_state = 'lost'))",
                          (session_id,))

    def _runs(self, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._connection().execute(
                f"SELECT {_RUN_SELECT} FROM side_effect_runs WHERE {where} ORDER BY at, rowid", params  # noqa: S608
            ).fetchall()
        return [run_dict(r) for r in rows]

    def incidents(self, session_id: str) -> list[dict[str, Any]]:
        """Return the session's incidents ``{at, kind, detail}``, oldest first."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT at, kind, data FROM incidents WHERE session_id = ? ORDER BY at, rowid", (session_id,)
            ).fetchall()
        return [{"at": at, "kind": kind, "detail": json.loads(data)} for at, kind, data in rows]

    def list_sessions(self) -> list[dict[str, Any]]:
        """Return ``{session_id, customer_id, version, updated_at, handoff_turn}`` rows, newest first."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT session_id, customer_id, version, updated_at, json_extract(data, '$.handoff_turn') "
                "FROM sessions ORDER BY updated_at DESC, session_id"
            ).fetchall()
        keys = ("session_id", "customer_id", "version", "updated_at", "handoff_turn")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        """Return every trace of a session (``Trace.model_dump(mode="json")``), by turn."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT data FROM traces WHERE session_id = ? ORDER BY turn", (session_id,)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def last_trace(self, session_id: str) -> dict[str, Any] | None:
        """Return the trace with the highest turn, or None if the session has none."""
        with self._lock:
            row = self._connection().execute(
                "SELECT data FROM traces WHERE session_id = ? ORDER BY turn DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its traces in one transaction; unknown ids are ignored."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM incidents WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM side_effect_runs WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM traces WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM retired_goals WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        try:
            self._turns.remove(session_id)
        except SessionBusyError:  # a turn of the deleted session still runs: its lock file stays, harmless
            log.info("lock of deleted session %s kept: a turn holds it", session_id)

    def close(self) -> None:
        """Close the connection; later calls raise EngineError, a second close is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- helpers --------------------------------------------------------------------

    def __enter__(self) -> SqliteStateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStateStore({self.path!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise EngineError(f"state store {self.path!r} is closed")
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """Run the body in one write transaction: one COMMIT, or a ROLLBACK on error."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise


def _connect(path: str) -> sqlite3.Connection:
    """Open a connection in autocommit mode (transactions are explicit) with the schema."""
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(_SCHEMA)
        _migrate_side_effects(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate_side_effects(conn: sqlite3.Connection) -> None:
    """Move the runs of a store written before runs were filed by turn id (``side_effects``, one row per key)
    into ``side_effect_runs``, once: intended ones are runs of turns not settled yet, unconfirmed ones lost."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'side_effects'").fetchone() is None:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'side_effects'").fetchone() is not None:
            conn.execute(_OLD_RUNS)
            conn.execute("DROP TABLE side_effects")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


_OLD_RUNS = """INSERT OR IGNORE INTO side_effect_runs (session_id, turn, turn_id, key, tool, args, at, state, turn_state)
SELECT session_id, turn, '', key, tool, args, at,
       CASE state WHEN 'intended' THEN 'started' WHEN 'unconfirmed' THEN 'unknown' ELSE state END,
       CASE state WHEN 'intended' THEN 'running' WHEN 'unconfirmed' THEN 'lost' ELSE 'committed' END
FROM side_effects"""


def _insert_session(conn: sqlite3.Connection, state: SessionState, data: str, stamp: str) -> None:
    """Insert a new session row; an existing row is a conflict."""
    try:
        conn.execute(
            "INSERT INTO sessions (session_id, customer_id, version, data, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (state.session_id, state.customer_id, state.version, data, stamp),
        )
    except sqlite3.IntegrityError:
        found = _stored_version(conn, state.session_id)
        raise StateConflictError(state.session_id, 0, found) from None


def _update_session(
    conn: sqlite3.Connection, state: SessionState, expected: int, data: str, stamp: str
) -> None:
    """Update the session row only if it still has the expected version."""
    cursor = conn.execute(
        "UPDATE sessions SET customer_id = ?, version = ?, data = ?, updated_at = ? "
        "WHERE session_id = ? AND version = ?",
        (state.customer_id, state.version, data, stamp, state.session_id, expected),
    )
    if cursor.rowcount != 1:
        found = _stored_version(conn, state.session_id)
        raise StateConflictError(state.session_id, expected, found)


def _stored_version(conn: sqlite3.Connection, session_id: str) -> int | None:
    row = conn.execute(
        "SELECT version FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def _next_timestamp(conn: sqlite3.Connection) -> str:
    """Now as an ISO string, nudged past the newest stored stamp so ordering is strict."""
    now = utcnow()
    row = conn.execute("SELECT MAX(updated_at) FROM sessions").fetchone()
    if row[0]:
        newest = datetime.fromisoformat(row[0])
        if now <= newest:
            now = newest + timedelta(microseconds=1)
    return now.isoformat(timespec="microseconds")


def _decode_state(session_id: str, data: str) -> SessionState:
    """Parse a stored row, refusing rows written by a newer schema."""
    try:
        stored_schema = json.loads(data).get("schema_version", SCHEMA_VERSION)
    except (ValueError, AttributeError) as exc:
        raise EngineError(f"session {session_id!r}: stored state is not a JSON object") from exc
    if isinstance(stored_schema, int) and stored_schema > SCHEMA_VERSION:
        raise EngineError(
            f"session {session_id!r} was saved with schema_version {stored_schema}, but this "
            f"engine only understands up to {SCHEMA_VERSION}; upgrade the engine to load it"
        )
    try:
        return SessionState.model_validate_json(data)
    except ValidationError as exc:
        raise EngineError(f"session {session_id!r}: stored state is invalid: {exc}") from exc
