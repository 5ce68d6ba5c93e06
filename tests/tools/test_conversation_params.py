"""Tools see their conversation: a workspace Python function that declares ``session_id`` and/or
``customer_id`` receives the session id and customer id of the conversation the call serves (``None``
without a customer), an HTTP tool gets them as ``X-Session-Id`` / ``X-Customer-Id`` headers, and a tool
that declares neither is called exactly as before. They are never arguments: not slots, never asked, not
in the trace's args (so recordings and replays match whichever session makes the call)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.bench.processes import write_workspace
from core.engine.orchestrator import Orchestrator
from core.retrieval.embedding import CachedEmbedder
from core.tools.declared import HttpTool, PythonTool
from core.tools.gateway import ToolGateway
from core.workspace.config import AgentDecl, ToolDecl
from core.workspace.params import Param
from tests.conftest import trusted
from tests.tools.jsonhttp import send_json

OPEN = "I need to open a ticket"


def _desk(tmp_path: Path, tools_py: str, embedder: CachedEmbedder) -> Orchestrator:
    """The ticket-desk workspace (one ask, then ``desk.open_ticket``) with its tools.py replaced."""
    ws = write_workspace(tmp_path / "ws")
    (ws / "tools.py").write_text(tools_py, encoding="utf-8")
    return build_orchestrator(trusted(ws), state_url=f"sqlite:///{tmp_path}/s.sqlite", embedder=embedder, brain="rule")


def _open_ticket(orch: Orchestrator, session: str, issue: str, customer_id: str | None = None) -> str:
    orch.handle_message(session, OPEN, customer_id=customer_id)
    return orch.handle_message(session, issue, customer_id=customer_id)


def _calls(orch: Orchestrator, session: str) -> list[dict[str, Any]]:
    trace = orch.last_trace(session)
    assert trace is not None
    return list(trace["tool_calls"])


RECORDING_TOOL = '''
import json
from pathlib import Path


def open_ticket(issue, session_id, customer_id=None):
    with (Path(__file__).parent / "seen.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"issue": issue, "session_id": session_id, "customer_id": customer_id}) + "\\n")
    return {"ticket_id": "T-" + str(len(issue))}
'''


def test_a_python_tool_declaring_them_gets_the_session_and_customer_of_its_call(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    orch = _desk(tmp_path, RECORDING_TOOL, embedder)
    reply = _open_ticket(orch, "chat-A", "the printer on floor 2 is jammed", customer_id="cust-1")
    assert "Ticket T-" in reply and "is open" in reply
    _open_ticket(orch, "chat-B", "the scanner is broken")  # a customer not signed in
    seen = [json.loads(line) for line in (tmp_path / "ws" / "seen.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(s["session_id"], s["customer_id"]) for s in seen] == [("chat-A", "cust-1"), ("chat-B", None)]
    call = _calls(orch, "chat-B")[0]
    assert call["ok"] and call["args"] == {"issue": "the scanner is broken"}  # never an argument of the call
    state = orch.load_state("chat-A")
    assert state is not None and state.goals
    assert all(not {"session_id", "customer_id"} & {*g.slots, *g.missing} for g in state.goals.values())  # no slot


COUNTING_TOOL = '''
TICKETS = {}


def open_ticket(issue, session_id):
    mine = TICKETS.setdefault(session_id, [])
    mine.append(issue)
    return {"ticket_id": session_id.upper() + "-" + str(len(mine))}
'''


def test_two_sessions_keep_separate_state_in_the_tool(tmp_path: Path, embedder: CachedEmbedder) -> None:
    orch = _desk(tmp_path, COUNTING_TOOL, embedder)
    assert "Ticket ALPHA-1 is open" in _open_ticket(orch, "alpha", "the printer is jammed")
    assert "Ticket ALPHA-2 is open" in orch.handle_message("alpha", OPEN)  # another one, on the same issue
    assert "Ticket BETA-1 is open" in _open_ticket(orch, "beta", "the mouse is dead")  # not ALPHA's third


def test_the_functions_of_one_file_share_its_module_and_the_gateway_passes_the_conversation(
        tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        "PENDING = {}\n\n"
        "def create(amount, session_id, customer_id):\n"
        "    PENDING[session_id] = {'amount': amount, 'by': customer_id}\n    return PENDING[session_id]\n\n"
        "def pending(*, session_id):\n    return PENDING.get(session_id) or {'status': 'none'}\n",
        encoding="utf-8")
    tools = {"pay.create": PythonTool(ToolDecl("pay.create", params=[Param("amount")], python="tools.py:create"),
                                      tmp_path),
             "pay.pending": PythonTool(ToolDecl("pay.pending", python="tools.py:pending"), tmp_path)}
    gw = ToolGateway(tools, {"a": AgentDecl("a", ["*"], list(tools))})
    made = gw.call("a", "pay.create", {"amount": 250}, session_id="s1", customer_id="cust-9")
    assert made.ok and made.result == {"amount": 250, "by": "cust-9"} and made.args == {"amount": 250}
    assert gw.call("a", "pay.pending", {}, session_id="s1").result == {"amount": 250, "by": "cust-9"}
    assert gw.call("a", "pay.pending", {}, session_id="s2").result == {"status": "none"}


def test_a_tool_gets_only_what_it_declares_and_one_declaring_neither_is_called_as_before(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    orch = _desk(tmp_path / "customer", "def open_ticket(issue, customer_id=None, **extra):\n"
                                        "    return {'ticket_id': f'T-{customer_id}-{len(extra)}'}\n", embedder)
    assert "Ticket T-cust-1-0 is open" in _open_ticket(orch, "s", "the printer is jammed", customer_id="cust-1")
    neither = _desk(tmp_path / "neither", "def open_ticket(issue, **extra):\n"
                                          "    return {'ticket_id': 'T-' + str(len(extra))}\n", embedder)
    assert "Ticket T-0 is open" in _open_ticket(neither, "s", "the printer is jammed", customer_id="cust-1")
    plain = _desk(tmp_path / "plain", "def open_ticket(issue):\n    return {'ticket_id': 'T-7'}\n", embedder)
    assert "Ticket T-7 is open" in _open_ticket(plain, "s", "the printer is jammed", customer_id="cust-1")
    assert _calls(plain, "s")[0]["ok"] and _calls(plain, "s")[0]["args"] == {"issue": "the printer is jammed"}


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Echo.seen.append(dict(self.headers))
        send_json(self, 200, {"ticket_id": "T-42"})

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture()
def server() -> Iterator[str]:
    Echo.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_an_http_tool_gets_the_session_and_customer_as_headers(server: str, tmp_path: Path,
                                                               embedder: CachedEmbedder) -> None:
    ws = write_workspace(tmp_path / "ws")
    store = ws / "store.yaml"
    store.write_text(store.read_text(encoding="utf-8").replace(
        "    python: tools.py:open_ticket\n", f"    http: {{method: POST, url: '{server}/tickets'}}\n"),
        encoding="utf-8")
    orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite", embedder=embedder, brain="rule")
    assert "Ticket T-42 is open" in _open_ticket(orch, "chat-7", "the printer is jammed", customer_id="cust-7")
    assert "Ticket T-42 is open" in _open_ticket(orch, "chat-8", "the scanner is broken")
    headers = [{k.lower(): v for k, v in h.items()} for h in Echo.seen]
    assert [h.get("x-session-id") for h in headers] == ["chat-7", "chat-8"]
    assert headers[0].get("x-customer-id") == "cust-7"
    assert "x-customer-id" not in headers[1]  # only when the session has a customer
    assert headers[0].get("idempotency-key")  # the POST still carries its key


def test_a_session_id_that_is_no_header_value_is_percent_encoded_not_injected(server: str) -> None:
    tool = HttpTool(ToolDecl("desk.open_ticket", params=[Param("issue")],
                             http={"method": "POST", "url": f"{server}/tickets"}))
    gw = ToolGateway({"desk.open_ticket": tool}, {"a": AgentDecl("a", ["*"], ["desk.open_ticket"])})
    call = gw.call("a", "desk.open_ticket", {"issue": "jam"}, session_id="chat\r\nX-Evil: 1", customer_id="Zoë")
    assert call.ok and call.result == {"ticket_id": "T-42"}
    headers = {k.lower(): v for k, v in Echo.seen[0].items()}
    assert headers["x-session-id"] == "chat%0D%0AX-Evil: 1" and "x-evil" not in headers
    assert headers["x-customer-id"] == "Zo%C3%AB"
