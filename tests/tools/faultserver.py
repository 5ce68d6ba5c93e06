"""A local HTTP server of faults for the tool tests: it answers each path its own way and writes down every
request it receives (path, headers, body), so a test sees what reached it.

Paths: ``/ok`` (a JSON answer), ``/500`` (a server error whose body echoes the request's Authorization header,
as a careless backend does), ``/huge`` (a 5 MB JSON answer), ``/slow`` (answers after ``SLOW_S``), ``/cut`` (reads
the request, then closes the connection without a word: a crash mid-call), ``/ticket`` (a hand-off receiver:
a ticket number per request).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_S = 1.5


class FaultServer:
    """The running server: its base URL and the requests it received."""

    def __init__(self, base: str, hits: list[dict[str, Any]]) -> None:
        self.base = base
        self.hits = hits

    def requests(self, path: str) -> list[dict[str, Any]]:
        """The requests received on ``path`` (without its query), in order."""
        return [h for h in self.hits if h["path"] == path]


class _Faults(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hits: list[dict[str, Any]] = []
    lock = threading.Lock()

    def do_GET(self) -> None:  # noqa: N802 - the handler's required name
        self._answer(b"")

    def do_POST(self) -> None:  # noqa: N802 - the handler's required name
        self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _answer(self, body: bytes) -> None:
        path = self.path.split("?")[0]
        with self.lock:
            self.hits.append({"path": path, "headers": dict(self.headers), "body": body.decode("utf-8", "replace")})
            count = sum(1 for h in self.hits if h["path"] == path)
        if path == "/500":
            echo = self.headers.get("Authorization", "")
            return self._send(500, json.dumps({"error": f"upstream refused request with {echo}"}).encode())
        if path == "/huge":
            return self._send(200, b'{"rows": "' + b"x" * 5_000_000 + b'"}')
        if path == "/slow":
            time.sleep(SLOW_S)
            return self._send(200, b'{"late": true}')
        if path == "/cut":
            self.close_connection = True
            self.connection.close()
            return None
        if path == "/ticket":
            return self._send(200, json.dumps({"ticket": f"HD-{1040 + count}"}).encode())
        return self._send(200, b'{"ok": true}')

    def _send(self, code: int, raw: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        try:
            self.wfile.write(raw)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def fault_server() -> Iterator[FaultServer]:
    """A fault server on a free port of 127.0.0.1, stopped when the block ends."""
    hits: list[dict[str, Any]] = []
    handler = type("Faults", (_Faults,), {"hits": hits, "lock": threading.Lock()})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield FaultServer(f"http://127.0.0.1:{srv.server_address[1]}", hits)
    finally:
        srv.shutdown()
        srv.server_close()
