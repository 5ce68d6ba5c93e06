"""What the Zep store keeps on local disk: id mappings, the outbox, and the last events read.

Zep is the source of truth for preferences; this SQLite file only makes the adapter
fast and resilient on one machine:

* ``users`` / ``threads``: Zep's UUIDs for our customer ids and (customer, session)
  pairs, so a turn does not look them up again. Zep v4 cannot give a thread our own
  id on creation, so a new app instance starts a new thread for a session it has not
  seen; that only splits the chat log, never the preferences.
* ``outbox``: events not yet delivered to Zep, oldest first. A write is queued here
  *before* it is sent, so a crash or an outage never loses it; ``stage`` says how far
  delivery got (1 = the episode is in Zep, only the chat message is left).
* ``mirror``: the customer's events as last read from (or delivered to) Zep, the fallback while
  Zep is down.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from core.shared.errors import EngineError
from core.shared.models import utcnow
from core.state.memory.events import PreferenceEvent, parse_event

MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS zep_users (
    customer_id TEXT PRIMARY KEY,
    user_uuid   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS zep_threads (
    customer_id TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    thread_uuid TEXT NOT NULL,
    PRIMARY KEY (customer_id, session_id)
);
CREATE TABLE IF NOT EXISTS zep_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id TEXT NOT NULL,
    event       TEXT NOT NULL,
    stage       INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT NOT NULL DEFAULT '',
    dead        INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS zep_outbox_customer ON zep_outbox (customer_id, id);
CREATE TABLE IF NOT EXISTS zep_mirror (
    customer_id TEXT PRIMARY KEY,
    events      TEXT NOT NULL,
    read_at     TEXT NOT NULL
);
"""


@dataclass
class OutboxRow:
    """One queued event and how far its delivery got."""

    id: int
    event: PreferenceEvent
    stage: int
    attempts: int
    last_error: str


class ZepLocalCache:
    """The Zep store's local SQLite file (thread-safe, one lock, autocommit)."""

    def __init__(self, path: str | Path) -> None:
        """Open (and create if needed) the cache at ``path`` (a file or ``":memory:"``)."""
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # survives a crashed app; a cache needs no more
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    # -- ids ----------------------------------------------------------------------------
    def user_uuid(self, customer_id: str) -> str | None:
        """Zep's UUID for a customer, if known here."""
        row = self._one("SELECT user_uuid FROM zep_users WHERE customer_id = ?", (customer_id,))
        return str(row[0]) if row else None

    def set_user_uuid(self, customer_id: str, user_uuid: str | None) -> None:
        """Remember (or, with None, drop) Zep's UUID for a customer."""
        if user_uuid is None:
            self._run("DELETE FROM zep_users WHERE customer_id = ?", (customer_id,))
        else:
            self._run("INSERT OR REPLACE INTO zep_users VALUES (?, ?)", (customer_id, user_uuid))

    def thread_uuid(self, customer_id: str, session_id: str) -> str | None:
        """Zep's UUID for the thread of one customer's session, if one was created here."""
        row = self._one("SELECT thread_uuid FROM zep_threads WHERE customer_id = ? AND session_id = ?",
                        (customer_id, session_id))
        return str(row[0]) if row else None

    def set_thread_uuid(self, customer_id: str, session_id: str, thread_uuid: str) -> None:
        """Remember the thread created for a session."""
        self._run("INSERT OR REPLACE INTO zep_threads VALUES (?, ?, ?)", (customer_id, session_id, thread_uuid))

    def drop_thread(self, customer_id: str, session_id: str) -> None:
        """Forget a session's thread (Zep no longer has it)."""
        self._run("DELETE FROM zep_threads WHERE customer_id = ? AND session_id = ?", (customer_id, session_id))

    # -- outbox -------------------------------------------------------------------------
    def enqueue(self, event: PreferenceEvent) -> None:
        """Queue an event for delivery (after every event already queued)."""
        self._run("INSERT INTO zep_outbox (customer_id, event, created_at) VALUES (?, ?, ?)",
                  (event.customer_id, event.model_dump_json(), utcnow().isoformat()))

    def pending(self, customer_id: str) -> list[OutboxRow]:
        """The customer's undelivered events, oldest first (events given up on excluded)."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT id, event, stage, attempts, last_error FROM zep_outbox "
                "WHERE customer_id = ? AND dead = 0 ORDER BY id", (customer_id,)).fetchall()
        out = []
        for row_id, text, stage, attempts, error in rows:
            event = parse_event(text)
            if event is not None:
                out.append(OutboxRow(int(row_id), event, int(stage), int(attempts), str(error)))
        return out

    def advance(self, row_id: int, stage: int) -> None:
        """Record that delivery of a queued event got to ``stage``."""
        self._run("UPDATE zep_outbox SET stage = ? WHERE id = ?", (stage, row_id))

    def delivered(self, row_id: int) -> None:
        """Drop a fully delivered event from the outbox."""
        self._run("DELETE FROM zep_outbox WHERE id = ?", (row_id,))

    def failed(self, row_id: int, error: str, *, give_up: bool = False) -> None:
        """Count a failed delivery; ``give_up`` keeps the row for inspection but stops retrying it."""
        self._run("UPDATE zep_outbox SET attempts = attempts + 1, last_error = ?, dead = ? WHERE id = ?",
                  (error, int(give_up), row_id))

    # -- mirror -------------------------------------------------------------------------
    def mirror(self, customer_id: str) -> list[PreferenceEvent]:
        """The customer's events as last read from Zep (empty when never read here)."""
        row = self._one("SELECT events FROM zep_mirror WHERE customer_id = ?", (customer_id,))
        if not row:
            return []
        return [e for e in (parse_event(line) for line in str(row[0]).splitlines() if line) if e is not None]

    def set_mirror(self, customer_id: str, events: list[PreferenceEvent]) -> None:
        """Keep the events just read from Zep as the fallback for an outage."""
        text = "\n".join(e.model_dump_json() for e in events)
        self._run("INSERT OR REPLACE INTO zep_mirror VALUES (?, ?, ?)", (customer_id, text, utcnow().isoformat()))

    def forget_customer(self, customer_id: str) -> None:
        """Drop every row about a customer (ids, outbox, mirror)."""
        with self._lock:
            for table in ("zep_users", "zep_threads", "zep_outbox", "zep_mirror"):
                self._connection().execute(f"DELETE FROM {table} WHERE customer_id = ?", (customer_id,))

    def close(self) -> None:
        """Close the file; a second close is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise EngineError(f"Zep cache {self.path!r} is closed")
        return self._conn

    def _run(self, sql: str, args: tuple[object, ...]) -> None:
        with self._lock:
            self._connection().execute(sql, args)

    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[object, ...] | None:
        with self._lock:
            row = self._connection().execute(sql, args).fetchone()
        return tuple(row) if row else None
