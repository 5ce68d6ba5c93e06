"""Starting points for new SOPs, built from the workspace's own GAR and agents so they lint clean."""

from __future__ import annotations

import json
import re

from core.engine.build import Workspace


def new_sop(ws: Workspace, stem: str, fmt: str) -> str:
    """A small SOP named ``stem`` in ``fmt`` ("text" or "json") that compiles in this workspace."""
    agent = next(iter(ws.files.config.agents), "support")
    sop_id = f"{agent}.{re.sub(r'[^a-z0-9_]+', '_', stem.lower()).strip('_') or 'new_flow'}"
    title = stem.replace("_", " ").replace("-", " ").strip().capitalize() or "New flow"
    if fmt == "json":
        return json.dumps({
            "id": sop_id, "name": title, "description": "Describe when this flow runs.", "version": "1",
            "agent": agent, "triggers": [f"I need help with {title.lower()}"], "startNode": "greet",
            "nodes": {
                "greet": {"id": "greet", "type": "action", "description": "Greet the customer",
                          "messageTemplate": f"Happy to help with {title.lower()}.", "nextNodes": ["end"]},
                "end": {"id": "end", "type": "end", "description": "Done"},
            },
        }, indent=2) + "\n"
    ask = next((r for r in ws.files.gar if r.has("ask_user_input")), None)
    say = next((r for r in ws.files.gar if r.has("message_to_user") and not r.has("api_call")), None)
    steps = [r.action for r in (ask, say) if r is not None] or ["terminate the flow"]
    body = "\n".join(steps + (["terminate the flow"] if steps[-1] != "terminate the flow" else []))
    return (f"---\nid: {sop_id}\ntitle: {title}\nagent: {agent}\ntriggers:\n  - I need help with {title.lower()}\n"
            f"---\n{body}\n")
