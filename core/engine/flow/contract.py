"""What a run of the flow executor takes and gives (PRD §8.2): the request, the response with the tool requests it
carries, and what an agent needs from the workspace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from core.shared.models import Goal, ToolCall
from core.sop.graph import Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import AnswerReader, Brain, Commerce
from core.workspace.slots import SlotType


@dataclass
class ToolRequest:
    """A tool the agent wants the orchestrator to run."""

    tool: str
    args: dict[str, Any]
    node: str


@dataclass
class AgentRunRequest:
    """PRD §8.2: the active goal, the preference summary, and this pass's tool results."""

    goal: Goal
    sop: Sop
    preferences: PreferenceSummary
    tool_results: list[ToolCall] = field(default_factory=list)
    turn: int = 0
    others_waiting: bool = False  # another request is waiting on the stack: no "anything else?" offer now
    language: str = "en"  # the customer's language: the engine's own sentences are said in it
    visited: list[str] = field(default_factory=list)  # the steps this goal ran this turn (shared by its passes)
    off: frozenset[str] = frozenset()  # tools that are off this turn (not trusted, their source unreachable)


@dataclass
class AgentRunResponse:
    """PRD §8.2: the message, tool requests, and what changed."""

    messages: list[str] = field(default_factory=list)
    tool_requests: list[ToolRequest] = field(default_factory=list)
    done: bool = False
    outcome: str = ""
    actions: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    asked: bool = False
    path: list[str] = field(default_factory=list)  # ids of the nodes this run visited, in order
    language: str = "en"  # the language the run's own sentences are said in (the request's)
    call: str = ""  # the SOP a ``call`` step runs before this goal goes on (its id)
    handoff: str = ""  # a hand-off step was reached (its words): the conversation goes to the team
    computed: list[str] = field(default_factory=list)  # figures its messages' expressions gave ({qty * price})


@dataclass
class AgentEnv:
    """What an agent needs from the workspace."""

    brain: Brain
    slot_types: dict[str, dict[str, SlotType]]  # sop id -> slot -> type
    currency: str
    max_steps: int
    tool_params: dict[str, set[str]]
    today: Callable[[], date] = date.today  # "tomorrow" is a weekday relative to this
    result_values: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # sop id -> tool field -> values
    commerce: Commerce | None = None  # the store's item behaviour, when it sells from an inventory
    changing_tools: frozenset[str] = frozenset()  # tools declared with side effects (they change the world)
    answers: AnswerReader = field(init=False)  # reads messages against these SOPs (shared by the agents)

    def __post_init__(self) -> None:
        self.answers = AnswerReader(self.brain, self.slot_types, lambda: self.today(), self.result_values)

    def types(self, sop: Sop) -> dict[str, SlotType]:
        """The kind of each slot the SOP fills."""
        return self.slot_types.get(sop.id, {})
