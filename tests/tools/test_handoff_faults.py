"""Handing a conversation to people under faults, against a receiver of our own (tests/tools/faultserver.py): the
documented ``params: [request, summary]`` works for a request made before any SOP ran; a receiver that is down,
answers 500 or is too slow is said plainly (not confirmed) (also after a ``hand off`` step's own words) with what remains; a
second request while one is open sends no second ticket; ``${VAR}`` reaches an HTTP tool's headers and URL, and
the product's own keys never do."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.language.replies import say
from tests.tools.faultserver import fault_server

TOKEN = "hd-token-5f3a9c21"
STORE = """name: Gas Desk
currency: GBP
agents:
  desk: {{goals: "desk.*", tools: []}}
handoff: team.enqueue
tools:
  team.enqueue:
    description: Put the conversation in the team's queue
    params: [request, summary]
    http: {{method: POST, url: "{url}", headers: {{Authorization: "Bearer ${{HANDOFF_TOKEN}}"}}}}
    timeout_s: {timeout}
"""
GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the postcode,ask_user_input,a postcode,,postcode
"""
GAS = {
    "id": "desk.gas", "name": "Report a gas smell", "triggers": ["I can smell gas", "there is a gas leak"],
    "startNode": "postcode",
    "nodes": {
        "postcode": {"type": "action", "description": "Ask for the postcode", "resultKey": "postcode",
                     "messageTemplate": "What is your postcode?", "nextNodes": ["emergency"]},
        "emergency": {"type": "handoff", "description": "Hand off to the emergency team",
                      "messageTemplate": "Please open your windows and leave the house."},
    },
}


def _desk(root: Path, url: str, timeout: float = 5) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE.format(url=url, timeout=timeout), encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "sops" / "gas.json").write_text(json.dumps(GAS, indent=2), encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDOFF_TOKEN", TOKEN)


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/ticket"


def test_asking_for_a_person_first_reaches_the_team_with_a_request_a_summary_and_the_token(tmp_path: Path) -> None:
    with fault_server() as srv:
        desk = build_orchestrator(_desk(tmp_path / "ws", f"{srv.base}/ticket"), state_url=f"sqlite:///{tmp_path}/s")
        reply = desk.handle_message("s", "can I talk to a real person?")
        sent = srv.requests("/ticket")
    assert len(sent) == 1 and "HD-1041" in reply
    body = json.loads(sent[0]["body"])
    assert "real person" in body["request"] and "real person" in body["summary"]
    assert sent[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"  # ${HANDOFF_TOKEN} expanded


def test_a_second_request_while_one_is_open_sends_no_second_ticket(tmp_path: Path) -> None:
    with fault_server() as srv:
        desk = build_orchestrator(_desk(tmp_path / "ws", f"{srv.base}/ticket"), state_url=f"sqlite:///{tmp_path}/s")
        desk.handle_message("s", "can I talk to a real person?")
        again = desk.handle_message("s", "I want to speak to a human")
        sent = srv.requests("/ticket")
    assert len(sent) == 1
    assert say("handoff_already", "en", detail="ticket: HD-1041") in again


@pytest.mark.parametrize("where", ["down", "500", "slow"])
def test_a_failed_handoff_step_says_so_plainly_after_the_steps_own_words(where: str, tmp_path: Path) -> None:
    with fault_server() as srv:
        url = {"down": _refused_url(), "500": f"{srv.base}/500", "slow": f"{srv.base}/slow"}[where]
        desk = build_orchestrator(_desk(tmp_path / "ws", url, timeout=0.3), state_url=f"sqlite:///{tmp_path}/s")
        desk.handle_message("s", "I can smell gas")
        reply = desk.handle_message("s", "SW1A 1AA")
    assert "open your windows" in reply  # the step's own words
    assert say("handoff_failed", "en") in reply  # and that the team could not confirm it, with what remains
    assert say("handoff", "en") not in reply
    state = desk.load_state("s")
    assert state is not None and state.handoff_open == ""  # not open: asking again tries again


def test_a_failed_request_for_a_person_can_be_tried_again(tmp_path: Path) -> None:
    with fault_server() as srv:
        ws = _desk(tmp_path / "ws", f"{srv.base}/500")
        desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s")
        first = desk.handle_message("s", "can I talk to a real person?")
        assert say("handoff_failed", "en") in first and "HD-" not in first
        (ws / "store.yaml").write_text(STORE.format(url=f"{srv.base}/ticket", timeout=5), encoding="utf-8")
        desk = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s")
        again = desk.handle_message("s", "please, a real person")
    assert "HD-1041" in again


def test_the_products_own_keys_never_reach_a_workspaces_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.tools.declared import HttpTool
    from core.tools.gateway import ToolGateway
    from core.workspace.config import ToolDecl

    monkeypatch.setenv("OPENAI_API_KEY", "sk-product-key-0001")
    with fault_server() as srv:
        ws = _desk(tmp_path / "ws", f"{srv.base}/ticket")
        store = (ws / "store.yaml").read_text(encoding="utf-8")
        (ws / "store.yaml").write_text(store.replace("${HANDOFF_TOKEN}", "${OPENAI_API_KEY}"), encoding="utf-8")
        problems = load_workspace(ws).problems
        tool = HttpTool(ToolDecl("t", http={"method": "POST", "url": f"{srv.base}/ticket",
                                            "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"}}))
        call = ToolGateway({"t": tool}, {}).call("", "t", {}, system=True)
        sent = srv.requests("/ticket")
    assert any(p.severity == "error" and "OPENAI_API_KEY" in p.message and "product's own" in p.message
               for p in problems)
    assert sent == [] and not call.ok and not call.sent and "product's own" in call.error
