"""A message template may compute a figure from the conversation's values ({quantity * unit_price}); the
computed figure is grounded (it comes from the sources), so the reply keeps it."""

from __future__ import annotations

import json
from pathlib import Path

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder

SOP = {"id": "t.quote", "triggers": ["how much for some bags of feed"], "slots": {"quantity": "number"},
       "startNode": "ask",
       "nodes": {"ask": {"type": "action", "description": "Ask how many bags",
                         "messageTemplate": "How many bags?", "resultKey": "quantity", "nextNodes": ["tell"]},
                 "tell": {"type": "action", "description": "Tell the total",
                          "messageTemplate": "{quantity} bags at $12.50 come to ${quantity * 12.5}, "
                                             "ready on {today + 2}.", "nextNodes": ["end"]},
                 "end": {"type": "end"}}}


def test_a_computed_figure_is_said_and_kept_by_the_grounding_check(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text('name: Feed Store\ncurrency: USD\nagents:\n  a: {goals: "t.*", tools: []}\n',
                                     encoding="utf-8")
    (root / "sops" / "quote.json").write_text(json.dumps(SOP), encoding="utf-8")
    orch = build_orchestrator(root, loaded=load_workspace(root, embedder), state_url="sqlite:///:memory:")
    assert orch.handle_message("s", "how much for some bags of feed") == "How many bags?"
    reply = orch.handle_message("s", "3")
    assert reply.startswith("3 bags at $12.50 come to $37.50, ready on ")
    assert "{" not in reply
    assert orch.last_trace("s")["grounding"]["ungrounded"] == []
