"""One turn attempt's working data (``Turn``), and the two helpers every command handler reads it with: the
engine's sentence for a message intent in the customer's language, and the first command of a kind."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from core.engine.goals import GoalOps
from core.language.replies import say
from core.shared.models import SessionState, ToolCall, Trace
from core.state.memory.base import PreferenceSummary
from core.tools.gateway import ToolScript
from core.understanding import Command, Perception, Reading


@dataclass
class Turn:
    """Working data of one turn attempt."""

    state: SessionState
    trace: Trace
    ops: GoalOps
    prefs: PreferenceSummary
    perception: Perception
    script: ToolScript | None
    cache: dict[str, list[ToolCall]]
    messages: list[str] = field(default_factory=list)
    reading: Reading = field(default_factory=Reading)
    requested: dict[str, int] = field(default_factory=dict)  # tool calls of this attempt, by tool and args
    kb: dict[str, ToolCall] = field(default_factory=dict)  # the knowledge base's answers, by query
    computed: list[str] = field(default_factory=list)  # figures the SOP's own expressions computed from sources
    partial: list[str] = field(default_factory=list)  # values a partial answer gave to a question asking several
    deadline: float = math.inf  # time.monotonic() by which the turn's tool calls end (settings.turn_deadline_s)


def say_to(t: Turn, key: str, **values: Any) -> str:
    """The engine's own sentence for a message intent, in the customer's language."""
    return say(key, t.reading.language, **values)


def first(commands: list[Command], kind: type[Command]) -> Any:
    """The first of a message's commands of a kind (None when it has none)."""
    return next((c for c in commands if isinstance(c, kind)), None)
