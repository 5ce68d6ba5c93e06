"""Preference memory kept in a local SQLite database, one row per fact."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.shared.errors import EngineError, UserInputError
from core.shared.models import utcnow
from core.state.memory.base import (
    PreferenceEntry,
    PreferenceSummary,
    PreferenceUpdate,
    normalize_fact,
    summary_from_entries,
    superseded,
    update_facts,
)

MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS preferences (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id TEXT NOT NULL,
    field       TEXT NOT NULL,
    value       TEXT NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    turn        INTEGER NOT NULL DEFAULT 0,
    message     TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS preferences_customer ON preferences (customer_id, id);
"""

_COLUMNS = "id, customer_id, field, value, session_id, turn, message, created_at"


class LocalPreferenceMemory:
    """A :class:`~core.state.memory.base.PreferenceMemory` on SQLite (thread-safe, one lock)."""

    def __init__(self, path: str | Path) -> None:
        """Open (and create if needed) the database at ``path``.

        Args:
            path: A file path (parent directories are created) or ``":memory:"``.
        """
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = _connect(self.path)

    @property
    def label(self) -> str:
        """``local SQLite (<path>)``."""
        return f"local SQLite ({self.path})"

    def summary(self, customer_id: str) -> PreferenceSummary:
        """Return what is known about the customer, derived from the stored facts."""
        return summary_from_entries(self.entries(customer_id))

    def write(
        self,
        customer_id: str,
        update: PreferenceUpdate,
        *,
        session_id: str = "",
        turn: int = 0,
        message: str = "",
    ) -> None:
        """Merge what a turn learned into the customer's facts, in one transaction.

        Args:
            customer_id: Whose preferences these are.
            update: What the turn learned; an empty update writes nothing.
            session_id: Provenance: the session the fact came from.
            turn: Provenance: the turn number.
            message: Provenance: the customer's message that revealed it.

        A turn's update is written once: the same ``session_id`` and ``turn`` again (a turn re-run, a
        message sent again after a crash) writes nothing.
        """
        if update.is_empty():
            return
        facts = update_facts(update)
        stamp = utcnow().isoformat()
        with self._transaction() as conn:
            if session_id and turn and conn.execute(
                    "SELECT 1 FROM preferences WHERE customer_id = ? AND session_id = ? AND turn = ? LIMIT 1",
                    (customer_id, session_id, turn)).fetchone():
                return
            doomed = superseded(_entries(conn, customer_id), facts)
            _delete(conn, doomed)
            conn.executemany(
                "INSERT INTO preferences (customer_id, field, value, session_id, turn, "
                "message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(customer_id, f, v, session_id, turn, message, stamp) for f, v in facts],
            )

    def entries(self, customer_id: str) -> list[PreferenceEntry]:
        """Return the customer's stored facts, oldest first."""
        with self._lock:
            return _entries(self._connection(), customer_id)

    def forget(self, customer_id: str, entry_id: int) -> None:
        """Remove one of the customer's facts; an unknown id is ignored."""
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM preferences WHERE customer_id = ? AND id = ?",
                (customer_id, entry_id),
            )

    def set_entry(self, customer_id: str, entry_id: int, value: str) -> None:
        """Change one fact's value, keeping its provenance; merge rules apply.

        Facts the new value duplicates or contradicts (e.g. the same brand in the
        opposite list) are removed.

        Raises:
            UserInputError: The entry does not exist or the value is invalid for its field.
        """
        with self._transaction() as conn:
            existing = _entries(conn, customer_id)
            entry = next((e for e in existing if e.id == entry_id), None)
            if entry is None:
                raise UserInputError(
                    f"no preference entry {entry_id} for customer {customer_id!r}"
                )
            try:
                text = normalize_fact(entry.field, value)
            except ValueError as exc:
                raise UserInputError(f"preference entry {entry_id}: {exc}") from None
            others = [e for e in existing if e.id != entry_id]
            _delete(conn, superseded(others, [(entry.field, text)]))
            conn.execute("UPDATE preferences SET value = ? WHERE id = ?", (text, entry_id))

    def retry_pending(self, customer_id: str) -> int:
        """Nothing is ever queued here: a write goes straight to disk or raises. Returns 0."""
        return 0

    def close(self) -> None:
        """Close the connection; a second close is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> LocalPreferenceMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalPreferenceMemory({self.path!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise EngineError(f"preference memory {self.path!r} is closed")
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
    """Open an autocommit connection (transactions are explicit) and create the schema."""
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(_SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def _entries(conn: sqlite3.Connection, customer_id: str) -> list[PreferenceEntry]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM preferences WHERE customer_id = ? ORDER BY id", (customer_id,)
    ).fetchall()
    keys = _COLUMNS.split(", ")
    return [PreferenceEntry(**dict(zip(keys, row, strict=True))) for row in rows]


def _delete(conn: sqlite3.Connection, ids: list[int]) -> None:
    conn.executemany("DELETE FROM preferences WHERE id = ?", [(i,) for i in ids])
