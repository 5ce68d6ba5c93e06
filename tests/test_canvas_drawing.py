"""How the canvas draws an SOP: every step labelled by what it does (never by an id such as 's18'), and a step no
arrow from the start reaches any more (a deleted step's branch, say) found so the canvas can flag it."""

from __future__ import annotations

import json

from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.edits import delete_step

BARE = {"id": "desk.damaged", "startNode": "s1", "nodes": {
    "s1": {"id": "s1", "type": "action", "messageTemplate": "What is your order number?", "resultKey": "order_id",
           "nextNodes": ["s2"]},
    "s2": {"id": "s2", "type": "action", "tool": "orders.lookup", "toolParams": {"order_id": "context.order_id"},
           "nextNodes": ["s3"]},
    "s3": {"id": "s3", "type": "decision", "condition": "context.s2.status == 'delivered'",
           "nextNodes": ["s4", "s18"]},
    "s4": {"id": "s4", "type": "action", "messageTemplate": "Your parcel has arrived.", "nextNodes": ["end"]},
    "s18": {"id": "s18", "type": "handoff", "messageTemplate": "Our team will call you today."},
    "end": {"id": "end", "type": "end"}}}


def test_steps_without_a_description_are_labelled_by_what_they_do() -> None:
    canvas = open_canvas(json.dumps(BARE, indent=2), "json", "sops/damaged.json")
    labels = {nid: n.label for nid, n in canvas.nodes.items()}
    assert labels == {"s1": "What is your order number?", "s2": "Call orders.lookup",
                      "s3": "context.s2.status == 'delivered'?", "s4": "Say: Your parcel has arrived.",
                      "s18": "Hand off to a person: Our team will call you today.", "end": "End"}
    described = json.loads(json.dumps(BARE))
    described["nodes"]["s18"]["description"] = "Pass the damaged item to the claims team"
    again = open_canvas(json.dumps(described), "json", "sops/damaged.json")
    assert again.nodes["s18"].label == "Pass the damaged item to the claims team"  # the author's words first


def test_a_step_left_without_an_arrow_from_the_start_is_found() -> None:
    canvas = open_canvas(json.dumps(BARE, indent=2), "json", "sops/damaged.json")
    assert canvas.unreached() == []
    edit = delete_step(canvas, "s3")  # the decision: what led to it goes on to its first branch
    after = open_canvas(edit.source, "json", "sops/damaged.json")
    assert after.target("s2") == "s4"  # reconnected
    assert after.unreached() == ["s18"]  # the hand-off branch is left without a way in: flagged on the canvas
