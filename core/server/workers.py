"""Several API workers on one port (``python -m core serve --workers N``): each its own process and listening
socket, a worker that dies started again."""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)


def _worker(host: str, port: int, log_level: str) -> None:
    """One API worker: its own listening socket on the shared port (SO_REUSEPORT, the kernel spreads the
    connections), made as a TCP socket so replies go out without Nagle's delay."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    config = uvicorn.Config("core.server.api:app_from_env", factory=True, log_level=log_level,
                            timeout_graceful_shutdown=10)
    uvicorn.Server(config).run(sockets=[sock])


def serve_workers(host: str, port: int, workers: int, log_level: str = "info") -> int:
    """Run ``workers`` API processes on one port until SIGINT/SIGTERM; a worker that dies is started again.
    Returns the exit code."""
    import multiprocessing as mp
    import signal
    import time

    ctx = mp.get_context("spawn")
    stopping = threading.Event()

    def start() -> Any:
        proc = ctx.Process(target=_worker, args=(host, port, log_level), daemon=False)
        proc.start()
        return proc

    def stop(*_: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    procs = [start() for _ in range(workers)]
    restarts, code = 0, 0
    try:
        while not stopping.is_set():
            for i, proc in enumerate(procs):
                if not proc.is_alive() and not stopping.is_set():
                    restarts += 1
                    if restarts > 3 * workers:  # not a crash now and then: it cannot run here (port taken, ...)
                        log.error("API workers keep exiting (last code %s): stopping", proc.exitcode)
                        stopping.set()
                        code = 1
                        break
                    log.warning("API worker %s exited with %s: starting another", proc.pid, proc.exitcode)
                    procs[i] = start()
            stopping.wait(0.5)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + 15
        for proc in procs:
            proc.join(max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
    return code
