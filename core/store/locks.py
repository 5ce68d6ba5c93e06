"""One turn at a time per session: locks held while a turn runs, in front of the optimistic version check.

A turn takes its session's lock before it loads the state and releases it after the commit, so two
messages to one session (two browser tabs, two workers, a double-clicked send) run one after the other
instead of racing and re-running. Waiting is bounded: a turn that cannot get the lock in time gets
:class:`~core.errors.SessionBusyError`, which the engine turns into a polite "one moment" reply. The
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

from core.errors import SessionBusyError

try:  # POSIX; elsewhere sessions are locked per process only
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

FIRST_PAUSE_S = 0.002
LONGEST_PAUSE_S = 0.05


class LocalSessionLocks:
    """Per-session locks within one process."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextmanager
    def hold(self, session_id: str, wait_s: float) -> Iterator[float]:
        """Hold the session's lock for the body; yields the seconds waited for it."""
        with self._guard:
            lock = self._locks.setdefault(session_id, threading.Lock())
        started = time.monotonic()
        if not lock.acquire(timeout=max(0.0, wait_s)):
            raise SessionBusyError(session_id, wait_s)
        try:
            yield time.monotonic() - started
        finally:
            lock.release()


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
        fd = os.open(self.path(session_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            pause = FIRST_PAUSE_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = wait_s - (time.monotonic() - started)
                    if left <= 0:
                        raise SessionBusyError(session_id, wait_s) from None
                    time.sleep(min(left, pause * (0.5 + random.random())))  # noqa: S311 - jitter, not secrecy
                    pause = min(LONGEST_PAUSE_S, pause * 2)
            try:
                yield time.monotonic() - started
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
