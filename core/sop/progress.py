"""What a goal has done of its SOP so far, read from its execution memory and slots."""

from __future__ import annotations

from core.shared.models import Goal
from core.sop.graph import Node


def last_success(goal: Goal, action: str) -> int:
    """Index of the latest successful execution-memory entry for an action (-1 when none)."""
    for i in range(len(goal.memory) - 1, -1, -1):
        if goal.memory[i].action == action and goal.memory[i].feedback == "success":
            return i
    return -1


def held(goal: Goal, node: Node) -> bool:
    """Whether every slot an ask fills already holds a value (given up front, or answered)."""
    return bool(node.fills) and all(goal.slots.get(p.name) not in (None, "") for p in node.fills)
