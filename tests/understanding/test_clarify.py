"""Ask when unsure (ARCHITECTURE.md §3a): two SOPs a message resembles about alike, neither named by its words
or values, get a question naming both; one clearly ahead, or named, starts."""

from __future__ import annotations

import json
from pathlib import Path

from core.engine.build import build_orchestrator


def _bank(root: Path) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text("name: Bank\ncurrency: EUR\nagents:\n  desk: {tools: []}\n", encoding="utf-8")
    for sid, title, triggers in (("desk.pay", "Pay a bill", ["pay my bill", "settle an invoice"]),
                                 ("desk.card", "Order a new card", ["order a new bank card", "my card expired"])):
        (root / "sops" / f"{sid}.json").write_text(json.dumps({
            "id": sid, "agent": "desk", "name": title, "triggers": triggers, "startNode": "done",
            "nodes": {"done": {"type": "action", "messageTemplate": f"{title}: done.", "nextNodes": ["end"]},
                      "end": {"type": "end"}}}), encoding="utf-8")
    return root


def test_two_requests_about_as_likely_get_a_question_naming_both(tmp_path: Path) -> None:
    orch = build_orchestrator(_bank(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = orch.handle_message("s", "card bill")  # both subjects, scored alike
    trace = orch.last_trace("s")
    assert trace.get("act") == "clarify", trace["perception"]["intents"]
    assert "pay a bill" in reply and "order a new card" in reply
    assert orch.load_state("s").active_goal is None
    assert sorted(trace["reading"]["commands"][0]["options"]) == ["desk.card", "desk.pay"]
    reply = orch.handle_message("s", "I want to pay my bill")
    assert "Pay a bill: done." in reply


def test_a_request_clearly_for_one_sop_starts_it(tmp_path: Path) -> None:
    orch = build_orchestrator(_bank(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = orch.handle_message("s", "I want to pay my bill")
    assert "Pay a bill: done." in reply
    assert orch.last_trace("s").get("act") != "clarify"


def test_the_trace_lists_the_readings_weighed_with_their_scores_and_why_this_reply_says_why(tmp_path: Path) -> None:
    orch = build_orchestrator(_bank(tmp_path / "ws"), state_url="sqlite:///:memory:")
    orch.handle_message("s", "I want to pay my bill")
    trace = orch.last_trace("s")
    weighed = trace["reading"]["considered"]
    chosen = [r for r in weighed if r["chosen"]]
    assert chosen and chosen[0]["reading"] == "a request for desk.pay" and chosen[0]["score"] > 0.5
    others = [r for r in weighed if not r["chosen"]]
    assert others and all("why" in r for r in others)
    assert all(r["score"] <= chosen[0]["score"] for r in others)
    assert any("rather than a request for desk.card" in line for line in trace["why"])
