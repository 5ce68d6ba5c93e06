"""A call that changes the world is sent at most once per confirmed action, against a fault server of our own:
after a server error, a 5 MB answer or a connection cut mid-call (and a Python tool that crashes, and an MCP
server that dies mid-call, in test_mcp.py) it is not sent again; the customer is told it may or may not have
gone through, and the store records it as unknown for a person to check. Only a failure that proves nothing was
sent (the connection refused) is tried again, with the same idempotency key."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from core import build_orchestrator
from core.bench.processes import write_workspace
from core.language.replies import say
from tests.conftest import trusted
from tests.tools.faultserver import fault_server

PYTHON_TOOL = "    python: tools.py:open_ticket\n"


def _desk(tmp_path: Path, tool: str) -> Path:
    """The ticket desk whose ``desk.open_ticket`` is ``tool`` (store.yaml lines of the tool's entry)."""
    ws = write_workspace(tmp_path / "ws")
    yaml = (ws / "store.yaml").read_text(encoding="utf-8")
    (ws / "store.yaml").write_text(yaml.replace(PYTHON_TOOL, tool), encoding="utf-8")
    return trusted(ws)


def _open_ticket(ws: Path, tmp_path: Path) -> tuple[str, object]:
    orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    orch.handle_message("s", "I need to open a ticket")
    return orch.handle_message("s", "the printer on floor 2 is jammed"), orch


@pytest.mark.parametrize("path", ["/500", "/huge", "/cut"])
def test_a_change_that_failed_after_it_was_sent_is_never_sent_again(path: str, tmp_path: Path) -> None:
    with fault_server() as srv:
        ws = _desk(tmp_path, f"    http: {{method: POST, url: '{srv.base}{path}'}}\n    timeout_s: 5\n")
        reply, orch = _open_ticket(ws, tmp_path)
        sent = srv.requests(path)
    assert len(sent) == 1  # once, not three times with three keys
    assert sent[0]["headers"].get("Idempotency-Key")
    assert say("side_effect_unsure", "en") in reply and say("graceful_end", "en") not in reply
    trace = orch.last_trace("s")  # type: ignore[attr-defined]
    calls = trace["tool_calls"]
    assert len(calls) == 1 and calls[0]["outcome_unknown"] and calls[0]["key"] == sent[0]["headers"]["Idempotency-Key"]
    check = orch.store.side_effects_to_check("s")  # type: ignore[attr-defined]
    assert [(c["tool"], c["key"]) for c in check] == [("desk.open_ticket", calls[0]["key"])]


def test_a_python_tool_that_crashes_mid_change_runs_once(tmp_path: Path) -> None:
    ws = _desk(tmp_path, PYTHON_TOOL)
    (ws / "tools.py").write_text(
        "from pathlib import Path\n\n"
        "def open_ticket(issue, idempotency_key):\n"
        "    with (Path(__file__).parent / 'runs.log').open('a') as fh:\n"
        "        fh.write(idempotency_key + '\\n')\n"
        "    raise RuntimeError('the ticket table is locked')\n", encoding="utf-8")
    reply, orch = _open_ticket(trusted(ws), tmp_path)
    assert len((ws / "runs.log").read_text().splitlines()) == 1
    assert say("side_effect_unsure", "en") in reply and "locked" not in reply
    assert len(orch.store.side_effects_to_check("s")) == 1  # type: ignore[attr-defined]


def test_a_change_refused_before_anything_was_sent_is_retried_with_the_same_key(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on: every connection is refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ws = _desk(tmp_path, f"    http: {{method: POST, url: 'http://127.0.0.1:{port}/t'}}\n")
    reply, orch = _open_ticket(ws, tmp_path)
    calls = orch.last_trace("s")["tool_calls"]  # type: ignore[attr-defined]
    assert len(calls) == 3 and not any(c["sent"] or c["outcome_unknown"] for c in calls)
    assert len({c["key"] for c in calls}) == 1  # one confirmed action, one key
    assert say("graceful_end", "en") in reply
    assert orch.store.side_effects_to_check("s") == []  # type: ignore[attr-defined]
