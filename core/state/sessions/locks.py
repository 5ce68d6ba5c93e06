"""One turn at a time per session: locks held while a turn runs, in front of the optimistic version check.

A turn takes its session's lock before it loads the state and releases it after the commit, so two
messages to one session (two browser tabs, two workers, a double-clicked send) run one after the other
instead of racing and re-running. Waiting is bounded: a turn that cannot get the lock in time gets
:class:`~core.shared.errors.SessionBusyError`, which the engine turns into a polite "one moment" reply. The
version check stays behind the lock as the guarantee: a lock lost to a crash or a lease never lets two
saves of one version both land.

* :class:`FileSessionLocks`: an OS lock (``flock``) on a small file per session next to the database,
  across threads and processes. The kernel releases it when its holder dies (``kill -9``), so a crash
  never leaves a session locked.
* :class:`LocalSessionLocks`: in-process locks, for a private in-memory database.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.shared.concurrency import acquire, waiting
from core.shared.errors import SessionBusyError

try:  # POSIX; elsewhere sessions are locked per process only
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

FIRST_PAUSE_S = 0.002
LONGEST_PAUSE_S = 0.05


def pauses(session_id: str, wait_s: float, started: float) -> Iterator[None]:
    """The waits between tries for a session's lock: doubling from FIRST_PAUSE_S to LONGEST_PAUSE_S with
    jitter, never past ``wait_s`` from ``started``; raises SessionBusyError once that is spent. A turn
    gives its compute slot up while it pauses (the turn holding the lock may need it to finish)."""
    pause = FIRST_PAUSE_S
    while True:
        left = wait_s - (time.monotonic() - started)
        if left <= 0:
            raise SessionBusyError(session_id, wait_s)
        with waiting():
            time.sleep(min(left, pause * (0.5 + random.random())))  # noqa: S311 - jitter, not secrecy
        pause = min(LONGEST_PAUSE_S, pause * 2)
        yield


class LocalSessionLocks:
    """Per-session locks within one process."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}  # the lock and how many turns use it

    @contextmanager
    def hold(self, session_id: str, wait_s: float) -> Iterator[float]:
        """Hold the session's lock for the body; yields the seconds waited for it."""
        with self._guard:
            lock, users = self._locks.setdefault(session_id, (threading.Lock(), [0]))
            users[0] += 1
        try:
            started = time.monotonic()
            if not acquire(lock, max(0.0, wait_s)):  # waiting without the turn's compute slot
                raise SessionBusyError(session_id, wait_s)
            try:
                yield time.monotonic() - started
            finally:
                lock.release()
        finally:
            with self._guard:
                users[0] -= 1

    def remove(self, session_id: str, wait_s: float = 5.0) -> None:
        """Forget a deleted session's lock unless a turn is using or waiting for it."""
        with self._guard:
            entry = self._locks.get(session_id)
            if entry is not None and entry[1][0] == 0:
                del self._locks[session_id]


class FileSessionLocks:
    """Per-session locks shared by every thread and process using one database (``<db>.locks/``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._local = LocalSessionLocks() if fcntl is None else None

    def path(self, session_id: str) -> Path:
        """The lock file of a session (a hash: any session id makes a safe file name)."""
        return self.directory / (hashlib.sha1(session_id.encode("utf-8")).hexdigest()[:24] + ".lock")

    @contextmanager
    def hold(self, session_id: str, wait_s: float) -> Iterator[float]:
        """Hold the session's lock for the body; yields the seconds waited for it.

        Raises:
            SessionBusyError: another turn of the session held it for all of ``wait_s``.
        """
        if self._local is not None:  # pragma: no cover - no flock on this system
            with self._local.hold(session_id, wait_s) as waited:
                yield waited
            return
        started = time.monotonic()
        fd = self._acquire(session_id, wait_s, started)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _acquire(self, session_id: str, wait_s: float, started: float) -> int:
        """An open, locked descriptor of the session's current lock file (waiting with backoff)."""
        path = self.path(session_id)
        waits = pauses(session_id, wait_s, started)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                fd = -1
            except BaseException:
                os.close(fd)
                raise
            if fd < 0:  # held by another turn
                next(waits)
                continue
            try:  # the file may have been removed (its session deleted) while we waited: lock the new one
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def remove(self, session_id: str, wait_s: float = 5.0) -> None:
        """Remove a deleted session's lock file, under its lock, so no turn is holding it; a turn that
        opened the old file before it went notices and locks a fresh one."""
        if self._local is not None:  # pragma: no cover - no flock on this system
            self._local.remove(session_id)
            return
        fd = self._acquire(session_id, wait_s, time.monotonic())
        try:
            self.path(session_id).unlink(missing_ok=True)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
