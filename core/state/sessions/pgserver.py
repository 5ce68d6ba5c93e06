"""A throwaway PostgreSQL server on 127.0.0.1, for tests and benchmarks.

It runs Debian's ``postgresql`` package binaries (``/usr/lib/postgresql/<version>/bin``, or
``PG_BIN``) on a fresh data folder with trust authentication, listening on 127.0.0.1 and a
socket inside that folder only, and removes everything on :meth:`LocalPostgres.stop`. PostgreSQL
refuses to run as root: as root the server runs as the ``postgres`` system user the package
creates (``runuser``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from core.shared.errors import EngineError

USER = "sop"
START_TIMEOUT_S = 60


def find_binaries() -> Path | None:
    """The folder with ``initdb`` and ``pg_ctl``: ``PG_BIN``, the newest Debian version, or the PATH."""
    env = os.environ.get("PG_BIN", "").strip()
    if env and (Path(env) / "initdb").exists():
        return Path(env)
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: _version(p.parent.parent.name))
    if versions:
        return versions[-1].parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name.split(".") if x.isdigit())


def free_port() -> int:
    """A TCP port nobody listens on at 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """One private PostgreSQL server; ``url`` is its connection URL once started."""

    def __init__(self, *, fsync: bool = True, max_connections: int = 200) -> None:
        self.fsync = fsync
        self.max_connections = max_connections
        self.bin = find_binaries()
        self.port = 0
        self.root: Path | None = None
        self._as: list[str] = []

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> LocalPostgres:
        """Create the data folder and start the server.

        Raises:
            EngineError: No PostgreSQL binaries here, or the server did not start (its log is quoted).
        """
        if self.bin is None:
            raise EngineError("PostgreSQL is not installed: install Debian's package (apt-get install postgresql) "
                              "or set PG_BIN to the folder holding initdb and pg_ctl")
        self.root = Path(tempfile.mkdtemp(prefix="sop-pg-"))
        data = self.root / "data"
        if os.geteuid() == 0:  # initdb and postgres refuse root: run them as the package's own user
            shutil.chown(self.root, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self._run([str(self.bin / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
                   "--no-instructions"])
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                   f"-c max_connections={self.max_connections} -c fsync={'on' if self.fsync else 'off'} "
                   f"-c synchronous_commit={'on' if self.fsync else 'off'} -c full_page_writes=off")
        log = self.root / "server.log"
        self._run([str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w",
                   "-t", str(START_TIMEOUT_S), "start"], log=log)
        return self

    def stop(self) -> None:
        """Stop the server and delete its data; a second call does nothing."""
        if self.root is None:
            return
        data = self.root / "data"
        if (data / "postmaster.pid").exists() and self.bin is not None:
            subprocess.run([*self._as, str(self.bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def _run(self, cmd: list[str], log: Path | None = None) -> None:
        done = subprocess.run([*self._as, *cmd], capture_output=True, text=True, timeout=START_TIMEOUT_S + 30,
                              check=False)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip()
            if log is not None and log.exists():
                detail += "\n" + log.read_text(encoding="utf-8", errors="replace")[-2000:]
            self.stop()
            raise EngineError(f"{Path(cmd[0]).name} failed: {detail}")

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def wait_ready(url: str, timeout_s: float = 30.0) -> None:
    """Wait until a server accepts connections (raises EngineError after ``timeout_s``)."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise EngineError(f"PostgreSQL at {url} did not accept connections: {exc}") from exc
            time.sleep(0.2)
