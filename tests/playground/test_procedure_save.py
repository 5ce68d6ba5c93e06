"""Procedure settings saved from the canvas: the SOP in its own format, and store.yaml's agent tools changed in
the same checked save only when the author confirms it."""

from __future__ import annotations

import json

import yaml

from core.playground import Playground
from core.playground.grants import AgentGrant
from core.sop.canvas.settings import read_settings, write_settings


def _as_agent(pg: Playground, name: str, agent: str) -> str:
    fmt = "json" if name.endswith(".json") else "text"
    source = pg.studio.read_sop(name)
    now = read_settings(source, fmt)  # type: ignore[arg-type]
    return write_settings(source, fmt, type(now)(now.id, now.title, now.description, agent, now.triggers))  # type: ignore[arg-type]


def test_a_tool_the_new_agent_may_not_call_is_offered_and_saved_only_when_confirmed(pg: Playground) -> None:
    source = _as_agent(pg, "troubleshoot.sop", "sales")
    store_before = (pg.root / "store.yaml").read_text(encoding="utf-8")
    check = pg.studio.check_sop("troubleshoot.sop", source)
    assert check.grant == AgentGrant("sales", ("knowledge_base.search",))
    assert any("may not call 'knowledge_base.search'" in p.message for p in check.problems)
    refused = pg.studio.save_sop("troubleshoot.sop", source, tests="skip")  # not confirmed: lint refuses it
    assert not refused.saved
    assert (pg.root / "store.yaml").read_text(encoding="utf-8") == store_before
    assert "agent: support" in (pg.root / "sops" / "troubleshoot.sop").read_text(encoding="utf-8")
    assert pg.studio.check_sop("troubleshoot.sop", source, check.grant).ok
    done = pg.studio.save_sop("troubleshoot.sop", source, tests="skip", grant=check.grant)
    assert done.saved, done.problems
    store = (pg.root / "store.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(store)["agents"]["sales"]["tools"] == ["inventory.query", "math.evaluate",
                                                                  "knowledge_base.search"]
    gone = [ln for ln in store_before.splitlines() if ln not in store.splitlines()]
    assert gone == ["    tools: [inventory.query, math.evaluate]"]  # one line changed, comments kept
    saved = (pg.root / "sops" / "troubleshoot.sop").read_text(encoding="utf-8")
    assert saved == source and saved.startswith("---\nid: support.troubleshoot")  # still a text SOP
    assert pg.workspace.files.config.agent_for("support.troubleshoot", "sales").name == "sales"


def test_a_new_agent_is_created_with_the_tools_its_json_procedure_calls(pg: Playground) -> None:
    source = _as_agent(pg, "order_status.json", "returns_desk")
    check = pg.studio.check_sop("order_status.json", source)
    assert check.grant == AgentGrant("returns_desk", ("orders.get_status",), new=True)
    assert "Create the agent `returns_desk`" in check.grant.sentence()
    done = pg.studio.save_sop("order_status.json", source, tests="skip", grant=check.grant)
    assert done.saved, done.problems
    agents = yaml.safe_load((pg.root / "store.yaml").read_text(encoding="utf-8"))["agents"]
    assert agents["returns_desk"] == {"goals": "returns_desk.*", "tools": ["orders.get_status"]}
    assert set(agents) == {"sales", "support", "returns_desk"}
    assert json.loads((pg.root / "sops" / "order_status.json").read_text(encoding="utf-8"))["agent"] == "returns_desk"
    assert not any(p.severity == "error" for p in pg.problems)


def test_nothing_is_offered_when_the_agent_may_call_every_tool(pg: Playground) -> None:
    assert pg.studio.check_sop("order_status.json", pg.studio.read_sop("order_status.json")).grant is None
