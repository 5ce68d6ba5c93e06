"""One template language for messages and toolParams: ``{ticket_id}``, ``{context.ticket_id}`` and
``context.ticket_id`` name the same value, a text with values in it is filled when the tool is called, an
earlier tool's result is read by field (``{repair.status}``), and a reference nothing can fill is a lint
error on its node's line. Written on a bicycle repair shop of our own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder
from tests.conftest import trusted

STORE = """name: Spoke & Chain Repairs
currency: EUR
region: NL
agents:
  desk:
    goals: repairs.*
    tools: [repairs.lookup, repairs.note]
tools:
  repairs.lookup:
    description: A repair ticket's status
    params: [ticket_id]
    python: tools.py:lookup
    side_effects: false
  repairs.note:
    description: Adds a note to a ticket
    params: [ticket_id, text]
    python: tools.py:note
"""
TOOLS = '''
import json
from pathlib import Path

def lookup(ticket_id):
    return {"ticket": ticket_id, "status": "waiting for parts"}

def note(ticket_id, text):
    with (Path(__file__).parent / "notes.log").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ticket_id": ticket_id, "text": text}) + "\\n")
    return {"ok": True}
'''
GAR = "action,action_type,user_interaction_metadata,api,params\n"


def sop(ticket_param: str, note_text: str) -> dict[str, object]:
    return {"id": "repairs.status", "name": "Repair status", "triggers": ["where is my bike repair"],
            "startNode": "ask", "nodes": {
                "ask": {"type": "action", "description": "Ask the customer for the repair ticket number",
                        "messageTemplate": "What is your ticket number (like RT-2041)?", "resultKey": "ticket_id",
                        "nextNodes": ["look"]},
                "look": {"type": "action", "description": "Look the repair up", "tool": "repairs.lookup",
                         "toolParams": {"ticket_id": ticket_param}, "resultKey": "repair", "nextNodes": ["note"]},
                "note": {"type": "action", "description": "Note that the customer asked", "tool": "repairs.note",
                         "toolParams": {"ticket_id": "{ticket_id}", "text": note_text}, "nextNodes": ["tell"]},
                "tell": {"type": "action", "description": "Tell the customer the status",
                         "messageTemplate": "Ticket {ticket_id}: {repair.status}.", "nextNodes": ["end"]},
                "end": {"type": "end"}}}


def shop(root: Path, ticket_param: str = "{context.ticket_id}",
         note_text: str = "customer asked about {ticket_id} ({repair.status})") -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "tools.py").write_text(TOOLS, encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "sops" / "status.json").write_text(json.dumps(sop(ticket_param, note_text), indent=1), encoding="utf-8")
    return trusted(root)


@pytest.mark.parametrize("ticket_param", ["{context.ticket_id}", "{ticket_id}", "context.ticket_id"])
def test_every_way_of_naming_a_value_fills_the_tool_and_the_message(tmp_path: Path, embedder: CachedEmbedder,
                                                                    ticket_param: str) -> None:
    root = shop(tmp_path / "ws", ticket_param)
    loaded = load_workspace(root, embedder)
    assert not [str(p) for p in loaded.problems if p.severity == "error"]
    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    assert "ticket number" in orch.handle_message("c1", "where is my bike repair?")
    reply = orch.handle_message("c1", "RT-2041")
    assert "Ticket RT-2041: waiting for parts." in reply
    notes = [json.loads(line) for line in (root / "notes.log").read_text(encoding="utf-8").splitlines()]
    assert notes == [{"ticket_id": "RT-2041", "text": "customer asked about RT-2041 (waiting for parts)"}]


def test_a_reference_nothing_can_fill_is_an_error_on_its_node(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws", note_text="asked by {customer_email}")
    problems = [p for p in load_workspace(root, embedder).problems if p.severity == "error"]
    source = (root / "sops" / "status.json").read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, start=1) if '"note": {' in text)
    assert [(p.file, p.line) for p in problems] == [("sops/status.json", line)]
    assert "reads {customer_email}, but no step asks for 'customer_email'" in problems[0].message
