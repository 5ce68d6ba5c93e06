"""Tools that cannot hurt the engine, against local fault-injection servers: a server that hangs, one
that drips a byte at a time, one that answers 500, invalid JSON, a huge body, a 422 echoing a secret, and
a POST slower than its deadline. Every call ends by its deadline, no stuck call holds up another, what a
backend says stays in the trace, and a side-effecting call that timed out is never sent again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.shared.errors import WorkspaceError
from core.tools.declared import HttpTool, PythonTool
from core.tools.gateway import ToolGateway
from core.workspace.config import AgentDecl, ToolDecl
from core.workspace.params import Param
from tests.conftest import trusted

SECRET = "sk-live-0123456789"


class Faults(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hits: dict[str, list[dict[str, str]]] = {}

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self._answer()

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        Faults.hits.setdefault(path, []).append(dict(self.headers))
        if path == "/hang":
            time.sleep(5)
            return self._send(200, b'{"late": true}')
        if path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(1000):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.1)
            return None
        if path == "/500":
            return self._send(500, b'{"error": "database down"}')
        if path == "/not-json":
            return self._send(200, b"<html>Welcome {name}</html>", "text/html")
        if path == "/huge":
            return self._send(200, b'{"rows": "' + b"x" * 3_000_000 + b'"}')
        if path == "/422":
            return self._send(422, f'{{"detail": "bad token {SECRET}"}}'.encode())
        if path == "/slow-post":
            time.sleep(1.0)
            return self._send(200, b'{"ticket_id": "T-1"}')
        return self._send(200, b'{"ok": true}')

    def _send(self, code: int, raw: bytes, kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        try:
            self.wfile.write(raw)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture()
def server() -> Iterator[str]:
    Faults.hits = {}
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Faults)
    srv.daemon_threads = True
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def gateway(base: str, **paths: str) -> ToolGateway:
    tools = {name: HttpTool(ToolDecl(name, params=[Param("x", True)], timeout_s=0.5,
                                     http={"method": "GET", "url": base + path}))
             for name, path in paths.items()}
    return ToolGateway(tools, {"a": AgentDecl("a", ["*"], list(tools))})


def test_a_hanging_or_dripping_server_ends_by_the_deadline_and_blocks_nobody(server: str) -> None:
    gw = gateway(server, hang="/hang", drip="/drip", fast="/fast")
    started = time.perf_counter()
    stuck = [threading.Thread(target=gw.call, args=("a", name, {})) for name in ["hang", "drip"] * 4]
    for th in stuck:
        th.start()
    time.sleep(0.05)
    fast = gw.call("a", "fast", {})  # eight stuck calls in flight: this one is not queued behind them
    assert fast.ok and fast.result == {"ok": True} and fast.latency_ms < 2500  # the stuck ones take 5 s
    drip = gw.call("a", "drip", {})
    assert drip.error_kind == "timeout" and drip.latency_ms < 3000  # the deadline covers every byte (100 s)
    for th in stuck:
        th.join(5)
    assert time.perf_counter() - started < 10  # not the 100 s a drip would take, nor 5 s per hang in turn
    time.sleep(1.0)
    assert not [t for t in threading.enumerate() if t.name in ("tool hang", "tool drip")]  # their threads ended too


def test_failures_are_errors_with_the_backend_text_kept_from_the_customer(server: str) -> None:
    gw = gateway(server, down="/500", html="/not-json", huge="/huge", refused="/422")
    down = gw.call("a", "down", {})
    assert down.error_kind == "failure" and "database down" in down.error and down.public_error == ""
    html = gw.call("a", "html", {})
    assert not html.ok and "did not answer with JSON" in html.error  # not a success with {name} in it
    huge = gw.call("a", "huge", {})
    assert not huge.ok and "more than the 1,000,000" in huge.error
    refused = gw.call("a", "refused", {})
    assert refused.error_kind == "invalid_input" and "bad token sk-***" in refused.error  # kept in the trace, masked
    assert SECRET not in refused.error and refused.public_error == ""


def test_a_python_tool_is_a_file_of_the_workspace_and_its_answer_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside.py").write_text("def f():\n    return 1\n")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        PythonTool(ToolDecl("t.f", python="../outside.py:f"), tmp_path / "ws")
    (tmp_path / "ws" / "tools.py").write_text("def big():\n    return {'rows': 'x' * 300000}\n"
                                              "def bad():\n    raise KeyError('internal_table_7')\n")
    tools = {n: PythonTool(ToolDecl(n, python=f"tools.py:{n}"), tmp_path / "ws") for n in ("big", "bad")}
    gw = ToolGateway(tools, {"a": AgentDecl("a", ["*"], list(tools))})
    big = gw.call("a", "big", {})
    assert not big.ok and "more than the 200,000" in big.error
    bad = gw.call("a", "bad", {})
    assert not bad.ok and "internal_table_7" in bad.error and bad.public_error == ""


def test_a_slow_post_runs_once_with_its_key_and_the_customer_is_told_plainly(server: str, tmp_path: Path) -> None:
    from core.bench.processes import write_workspace

    ws = write_workspace(tmp_path / "ws")
    yaml = (ws / "store.yaml").read_text(encoding="utf-8")
    (ws / "store.yaml").write_text(yaml.replace(
        "    python: tools.py:open_ticket\n",
        f"    http: {{method: POST, url: '{server}/slow-post'}}\n    timeout_s: 0.3\n"), encoding="utf-8")
    orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    orch.handle_message("s", "I need to open a ticket")
    reply = orch.handle_message("s", "the printer on floor 2 is jammed")
    time.sleep(1.2)  # the slow server finishes its one request
    assert len(Faults.hits["/slow-post"]) == 1  # sent once: never again after the timeout
    assert Faults.hits["/slow-post"][0].get("Idempotency-Key")
    assert "couldn't confirm" in reply and "timed out" not in reply
    trace = orch.last_trace("s")
    assert trace is not None and trace["tool_calls"][0]["side_effects"] and trace["tool_calls"][0]["key"]


def test_the_engines_own_sentence_after_a_tool_fault_is_in_the_customers_language(tmp_path: Path) -> None:
    from core.bench.processes import write_workspace
    from core.language.replies import say

    ws = write_workspace(tmp_path / "ws")
    (ws / "tools.py").write_text("import time\n\ndef open_ticket(issue):\n    time.sleep(1)\n    return {}\n",
                                 encoding="utf-8")
    yaml = (ws / "store.yaml").read_text(encoding="utf-8")
    (ws / "store.yaml").write_text(yaml.replace("    python: tools.py:open_ticket\n",
                                                "    python: tools.py:open_ticket\n    timeout_s: 0.2\n"),
                                   encoding="utf-8")
    orch = build_orchestrator(trusted(ws), state_url=f"sqlite:///{tmp_path}/s.sqlite")
    orch.handle_message("s", "I need to open a ticket")
    reply = orch.handle_message("s", "เครื่องพิมพ์ชั้นสองกระดาษติด")  # the printer on floor 2 is jammed
    assert say("side_effect_unsure", "th") in reply and say("side_effect_unsure", "en") not in reply
