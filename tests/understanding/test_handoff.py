"""Asking for a person (a plumbing-repair desk of our own): the team takes over with every goal kept; an
answer to the pending question is still an answer; a store with an SOP written for it runs that SOP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.orchestrator import Orchestrator
from tests.conftest import trusted

STORE = """name: Drip Fix
currency: GBP
agents:
  desk: {goals: "desk.*", tools: []}
"""
GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the postcode,ask_user_input,a postcode,,postcode
ask customer whether a plumber may call,ask_user_input,yes or no,,may_call
book the visit,message_to_user,A plumber will visit {postcode}.,,
say we will not call,message_to_user,Fine: nobody will call you.,,
take the callback details,message_to_user,Leave your number and the time that suits you; our team calls back.,,
"""
REPAIR = """---
id: desk.repair
title: Book a repair
triggers: [my tap is leaking, the boiler is broken, I need a plumber]
---
ask customer for the postcode
ask customer whether a plumber may call
if the customer agrees:
    book the visit
    terminate the flow
else:
    say we will not call
    terminate the flow
"""
CALLBACK = """---
id: desk.callback
title: Arrange a call from the team
triggers: [I want to talk to someone on the phone, can a person call me back]
---
take the callback details
terminate the flow
"""


def _desk(root: Path, *, callback: bool) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE)
    (root / "gar.csv").write_text(GAR)
    (root / "sops" / "repair.sop").write_text(REPAIR)
    if callback:
        (root / "sops" / "callback.sop").write_text(CALLBACK)
    return root


@pytest.fixture()
def desk(tmp_path: Path) -> Orchestrator:
    return build_orchestrator(_desk(tmp_path / "ws", callback=False), state_url=f"sqlite:///{tmp_path}/s.sqlite")


def test_asking_for_a_person_hands_over_and_keeps_the_request(desk: Orchestrator) -> None:
    desk.handle_message("s", "my tap is leaking")
    reply = desk.handle_message("s", "this is taking ages, let me speak to a human please")
    state = desk.load_state("s")
    trace = desk.last_trace("s") or {}
    assert "member of our team" in reply and "book a repair" in reply
    assert state is not None and state.handoff_turn == 2
    assert state.active_goal is not None and state.active_goal.missing == ["postcode"]
    assert trace["act"] == "human_handoff" and trace["reading"]["commands"][0]["command"] == "human_handoff"
    assert "A plumber will visit" not in desk.handle_message("s", "SW1A 1AA")  # the flow goes on when they write


def test_a_yes_to_the_pending_question_stays_an_answer(desk: Orchestrator) -> None:
    desk.handle_message("s", "I need a plumber")
    desk.handle_message("s", "SW1A 1AA")
    reply = desk.handle_message("s", "yes, put me through to a person")  # "may a plumber call?" - yes
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn is None
    assert "A plumber will visit SW1A 1AA" in reply


def test_a_thai_customer_is_answered_in_thai(desk: Orchestrator) -> None:
    reply = desk.handle_message("t", "ขอคุยกับเจ้าหน้าที่ครับ")
    state = desk.load_state("t")
    assert "เจ้าหน้าที่" in reply and state is not None and state.handoff_turn == 1


def test_a_store_with_an_sop_for_it_runs_that_sop(tmp_path: Path) -> None:
    orch = build_orchestrator(_desk(tmp_path / "ws", callback=True), state_url=f"sqlite:///{tmp_path}/s.sqlite")
    reply = orch.handle_message("s", "I want to talk to someone on the phone")
    state = orch.load_state("s")
    assert "our team calls back" in reply and state is not None and state.handoff_turn is None


HANDOFF_TOOLS = '''"""The desk's queue of conversations waiting for a person: a file per hand-off."""

import json
import json
from pathlib import Path


def enqueue(request: str, summary: str, session_id: str, customer_id: str | None = None) -> dict[str, object]:
    queue = Path(__file__).parent / "queue"
    queue.mkdir(exist_ok=True)
    n = len(list(queue.iterdir())) + 1
    (queue / f"{n}.json").write_text(json.dumps({"request": request, "summary": summary, "session": session_id,
                                                 "customer": customer_id}))
    return {"ticket": f"HD-{1040 + n}", "queue_position": n}


def broken(request: str) -> dict[str, object]:
    raise RuntimeError("the queue is down")
'''


def _queued_desk(root: Path, tool: str) -> Path:
    _desk(root, callback=False)
    (root / "tools.py").write_text(HANDOFF_TOOLS)
    (root / "store.yaml").write_text(STORE + f"""handoff: desk.{tool}
tools:
  desk.enqueue:
    description: Put the conversation in the team's queue
    params: [request, summary]
    python: tools.py:enqueue
  desk.broken:
    description: A queue that is down
    params: [request]
    python: tools.py:broken
""")
    return trusted(root)


def test_a_handoff_tool_reaches_the_team_with_the_request_and_a_summary(tmp_path: Path) -> None:
    ws = _queued_desk(tmp_path / "ws", "enqueue")
    desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    desk.handle_message("s", "my tap is leaking", customer_id="c-77")
    desk.handle_message("s", "SW1A 1AA", customer_id="c-77")
    reply = desk.handle_message("s", "can I talk to a real person please", customer_id="c-77")
    assert "ticket: HD-1041" in reply and "queue position: 1" in reply  # what the tool returned
    sent = json.loads((ws / "queue" / "1.json").read_text())
    assert sent["request"] == "Book a repair" and sent["session"] == "s" and sent["customer"] == "c-77"
    assert "postcode: SW1A 1AA" in sent["summary"] and "talk to a real person" in sent["summary"]
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn == 3  # still marked for the team
    trace = desk.last_trace("s") or {}
    assert [c["tool"] for c in trace["tool_calls"]] == ["desk.enqueue"]


def test_a_failing_handoff_tool_still_hands_over_and_says_so_plainly(tmp_path: Path) -> None:
    desk = build_orchestrator(_queued_desk(tmp_path / "ws", "broken"), state_url=f"sqlite:///{tmp_path}/s.sqlite")
    reply = desk.handle_message("s", "let me speak to a human")
    assert "member of our team" in reply and "queue is down" not in reply
    trace = desk.last_trace("s") or {}
    assert any("hand-off tool desk.broken failed" in d for d in trace["decisions"])
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn == 1


def test_a_handoff_naming_an_unknown_tool_is_a_lint_error(tmp_path: Path) -> None:
    from core.engine.build import load_workspace

    ws = _desk(tmp_path / "ws", callback=False)
    (ws / "store.yaml").write_text(STORE + "handoff: desk.nowhere\n")
    problems = load_workspace(ws).problems
    assert any(p.file == "store.yaml" and p.severity == "error" and "handoff: unknown tool 'desk.nowhere'" in p.message
               for p in problems)


# ---------------------------------------------------------------------------------------------- a hand-off step
GAS = """---
id: desk.gas
title: Report a gas smell
triggers: [I can smell gas, there is a gas leak]
---
ask customer for the postcode
escalate to the emergency team
tell customer to open the windows
"""
GAS_JSON = {
    "id": "desk.gas", "name": "Report a gas smell", "triggers": ["I can smell gas", "there is a gas leak"],
    "startNode": "postcode",
    "nodes": {
        "postcode": {"type": "action", "description": "Ask for the postcode", "resultKey": "postcode",
                     "messageTemplate": "What is your postcode?", "nextNodes": ["emergency"]},
        "emergency": {"type": "handoff", "description": "Hand off to the emergency team",
                      "messageTemplate": "Please open your windows and leave the house; our emergency team has "
                                         "your postcode {context.postcode}."},
    },
}


def _gas_desk(root: Path, form: str, *, tool: str = "") -> Path:
    _queued_desk(root, "enqueue") if tool else _desk(root, callback=False)
    if not tool:
        (root / "store.yaml").write_text(STORE)
    with (root / "gar.csv").open("a") as f:
        f.write("tell customer to open the windows,message_to_user,Open your windows.,,\n")
    if form == "text":
        (root / "sops" / "gas.sop").write_text(GAS)
    else:
        (root / "sops" / "gas.json").write_text(json.dumps(GAS_JSON, indent=2))
    return root


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_handoff_step_reaches_the_team_through_the_tool_and_ends_the_procedure(tmp_path: Path, form: str) -> None:
    ws = _gas_desk(tmp_path / "ws", form, tool="enqueue")
    from core.engine.build import load_workspace

    assert not [p for p in load_workspace(ws).problems if p.severity == "error"]
    desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    desk.handle_message("s", "I can smell gas", customer_id="c-9")
    reply = desk.handle_message("s", "SW1A 1AA", customer_id="c-9")
    assert "ticket: HD-1041" in reply, reply  # what the hand-off tool returned
    if form == "json":  # the step's own words first
        assert reply.index("open your windows") < reply.index("HD-1041") and "SW1A 1AA" in reply
    sent = json.loads((ws / "queue" / "1.json").read_text())
    assert sent["request"] == "Report a gas smell" and sent["customer"] == "c-9"
    assert "postcode: SW1A 1AA" in sent["summary"]
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn == 2 and state.active_goal is None
    assert state.goals and all(g.outcome == "handed_off" for g in state.goals.values())
    trace = desk.last_trace("s") or {}
    assert trace["handoff"] == {"by": "sop", "request": "desk.gas", "step": trace["handoff"]["step"],
                                "tool": "desk.enqueue", "sent": "ticket: HD-1041; queue position: 1"}
    assert "Open your windows." not in reply  # the step after the hand-off is never run


def test_a_handoff_step_without_a_tool_says_the_team_takes_over(tmp_path: Path) -> None:
    from core.engine.build import load_workspace

    ws = _gas_desk(tmp_path / "ws", "text")
    problems = load_workspace(ws).problems
    desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    assert any(p.file == "sops/gas.sop" and p.line == 8 and "unreachable" in p.message for p in problems)
    desk.handle_message("s", "there is a gas leak")
    reply = desk.handle_message("s", "SW1A 1AA")
    assert "member of our team" in reply and "report a gas smell" in reply
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn == 2


def test_a_gar_action_worded_like_a_handoff_stays_that_action(tmp_path: Path) -> None:
    ws = _gas_desk(tmp_path / "ws", "text")
    with (ws / "gar.csv").open("a") as f:
        f.write("escalate to the emergency team,message_to_user,The emergency line is 0800 111 999.,,\n")
    desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    desk.handle_message("s", "I can smell gas")
    reply = desk.handle_message("s", "SW1A 1AA")
    assert "0800 111 999" in reply
    state = desk.load_state("s")
    assert state is not None and state.handoff_turn is None


def test_the_procedures_evaluation_reports_the_handoff_rate(tmp_path: Path) -> None:
    from core.evaluation.procedures import evaluate_procedures, format_procedures, procedures_report

    ws = _gas_desk(tmp_path / "desk", "text")
    (ws / "conversations").mkdir()
    (ws / "conversations" / "gas.yaml").write_text(
        "name: a gas smell goes to the team\nworkspace: ..\nturns:\n  - user: I can smell gas\n"
        "  - user: SW1A 1AA\n    expect: {reply_contains: [member of our team]}\n")
    (ws / "conversations" / "repair.yaml").write_text(
        "name: a repair is booked\nworkspace: ..\nturns:\n  - user: my tap is leaking\n"
        "  - user: SW1A 1AA\n  - user: 'yes'\n    expect: {reply_contains: [A plumber will visit]}\n")
    reports = evaluate_procedures(tmp_path / "desk")
    assert [(r.passed, r.total, r.handoffs) for r in reports] == [(2, 2, 1)]
    assert "hand-off rate: 1/2 conversations went to a person (50.0%)" in format_procedures(reports)
    assert procedures_report(reports)["handoff_rate"] == 0.5


def test_a_handoff_step_reaches_an_http_desk_with_the_summary_and_the_session(tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[tuple[dict[str, str], dict[str, object]]] = []

    class Desk(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((dict(self.headers), body))
            answer = json.dumps({"queue_position": 4, "expected_wait": "10 minutes"}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Desk)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ws = _gas_desk(tmp_path / "ws", "json")
        (ws / "store.yaml").write_text(STORE + f"""handoff: desk.page_team
tools:
  desk.page_team:
    description: Page the on-call team
    params: [request, summary, message]
    http: {{method: POST, url: "http://127.0.0.1:{server.server_port}/handoffs"}}
""")
        desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
        desk.handle_message("web-1", "there is a gas leak", customer_id="c-5")
        reply = desk.handle_message("web-1", "SW1A 1AA", customer_id="c-5")
    finally:
        server.shutdown()
        server.server_close()
    assert "queue position: 4" in reply and "expected wait: 10 minutes" in reply
    assert len(received) == 1
    headers, body = received[0]
    assert body["request"] == "Report a gas smell" and body["message"] == "SW1A 1AA"
    assert "postcode: SW1A 1AA" in str(body["summary"])
    assert headers["X-Session-Id"] == "web-1" and headers["X-Customer-Id"] == "c-5"
    assert headers.get("Idempotency-Key")  # a POST changes the world: the same key if the turn is re-run
