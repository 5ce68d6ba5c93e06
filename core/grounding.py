"""The grounding check: a reply states no number that no tool, customer or SOP text gave."""

from __future__ import annotations

import json
from typing import Any

from core.models import SessionState
from core.text import number_forms


def allowed_numbers(sources: list[Any]) -> set[float]:
    """Every number stated anywhere in the given sources (tool results, messages, SOP text)."""
    found: set[float] = set()
    for src in sources:
        text = src if isinstance(src, str) else json.dumps(src, default=str, ensure_ascii=False)
        found |= number_forms(text)
    return found


def ungrounded(reply: str, allowed: set[float]) -> list[float]:
    """Numbers in a reply that no source gave (small list enumerators 1–10 are not facts)."""
    return sorted(n for n in number_forms(reply) if n not in allowed and not (n.is_integer() and 0 <= n <= 10))


def session_sources(state: SessionState) -> list[Any]:
    """What a session's replies may draw figures from: the customer's words, observations and slots."""
    sources: list[Any] = [m.text for m in state.history if m.role == "user"]
    for goal in state.goals.values():
        sources += [e.observation for e in goal.memory]
        sources.append(goal.slots)
    return sources
