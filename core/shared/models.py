"""Typed state: SessionState, Goal, execution memory, and the turn trace."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1


def utcnow() -> datetime:
    """The current time in UTC (timezone-aware)."""
    return datetime.now(UTC)


class GoalStatus(StrEnum):
    """The PRD's goal statuses."""

    ACTIVE = "active"
    BLOCKED = "blocked"
    SUSPENDED = "suspended"
    DONE = "done"


class MemoryEntry(BaseModel):
    """One entry of the paper's execution memory."""

    action: str
    observation: Any = None
    feedback: Literal["success", "fail"] = "success"
    turn: int = 0


class Goal(BaseModel):
    """One running SOP for one customer."""

    id: str
    type: str
    status: GoalStatus = GoalStatus.ACTIVE
    priority: int = 1
    slots: dict[str, Any] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    next_question: str = ""
    step: str | None = None
    pending: str | None = None
    memory: list[MemoryEntry] = Field(default_factory=list)
    attempts: dict[str, int] = Field(default_factory=dict)
    unavailable: list[str] = Field(default_factory=list)  # slots the customer said they cannot give
    outcome: str = ""
    sop_version: str = ""
    caller: str | None = None  # the goal whose ``call`` step started this one; it goes on when this one ends
    updated_at: datetime = Field(default_factory=utcnow)


class Message(BaseModel):
    """One chat message kept in the session for references and the inspector."""

    role: Literal["user", "assistant"]
    text: str
    turn: int


class SessionState(BaseModel):
    """The single source of truth for one conversation (PRD §4.1)."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    workspace_id: str = ""
    customer_id: str = ""
    channel_type: str = "chat"
    version: int = 0
    turn: int = 0
    active_goal_id: str | None = None
    goal_stack: list[str] = Field(default_factory=list)
    goals: dict[str, Goal] = Field(default_factory=dict)
    history: list[Message] = Field(default_factory=list)
    # values the customer gave for another SOP's questions than the active one's ("no thanks, we arrive
    # the 5th and leave the 11th" while searching): kept, by slot name, for the goal that will ask for them
    told: dict[str, Any] = Field(default_factory=dict)
    handoff_turn: int | None = None  # the turn the conversation went to a person (the team takes it from there)
    handoff_open: str = ""  # what the hand-off tool returned for the hand-off still open (a ticket); one per session
    updated_at: datetime = Field(default_factory=utcnow)
    # finished goals moved out of the working state this turn (core.engine.goals.retire_finished): the store writes them
    # beside the session in the same save, and the state's own JSON no longer carries them
    retired: dict[str, Goal] = Field(default_factory=dict, exclude=True)

    @property
    def active_goal(self) -> Goal | None:
        """The active goal, or None."""
        return self.goals.get(self.active_goal_id) if self.active_goal_id else None

    def waiting_goal(self, goal_type: str) -> Goal | None:
        """The goal of a type waiting on the stack (suspended or deferred), or None."""
        return next((self.goals[g] for g in self.goal_stack if self.goals[g].type == goal_type), None)

    def latest_goal(self, goal_type: str) -> Goal | None:
        """The most recently created goal of a type."""
        found = [g for g in self.goals.values() if g.type == goal_type]
        return found[-1] if found else None


class ToolCall(BaseModel):
    """A tool call as traced."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: Any = None
    error: str = ""
    error_kind: str = ""
    latency_ms: float = 0.0
    agent: str = ""
    scripted: bool = False
    reused: bool = False
    public_error: str = ""  # what the customer may be told of the failure ('' = the engine's own sentence)
    side_effects: bool = False  # the tool changes the world (runs once, is never retried after a timeout)
    key: str = ""  # the idempotency key a side-effecting call was made with
    sent: bool = True  # the request may have reached the tool (False: refused before anything was sent)
    outcome_unknown: bool = False  # a change that failed after it may have been sent: it may or may not have
    # gone through; never sent again, recorded for a person to check


class Trace(BaseModel):
    """Everything the engine decided in one turn."""

    session_id: str
    turn: int
    user: str
    turn_id: str = ""  # one per message taken (its re-runs after a conflict share it): files its tool runs
    reply: str = ""
    perception: dict[str, Any] = Field(default_factory=dict)
    reading: dict[str, Any] = Field(default_factory=dict)  # the commands read, their words, and those dropped
    decisions: list[str] = Field(default_factory=list)
    stack_ops: list[dict[str, Any]] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    path: list[dict[str, str]] = Field(default_factory=list)  # SOP nodes visited, in order: {sop, goal, node}
    act: str = ""  # what the reply did when no SOP step made it: greeting, thanks, goodbye, offer_more,
    #                capabilities, kb_answer, reprompt, cancelled (evaluations map it to their labels)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # the conversation went to people this turn: {by: customer|sop, request, step, tool, sent} (empty otherwise)
    handoff: dict[str, Any] = Field(default_factory=dict)
    denied: list[dict[str, Any]] = Field(default_factory=list)
    memory: dict[str, Any] = Field(default_factory=dict)
    grounding: dict[str, Any] = Field(default_factory=dict)
    slots: dict[str, dict[str, Any]] = Field(default_factory=dict)  # per goal type: values set this turn
    why: list[str] = Field(default_factory=list)  # the turn in plain sentences (core.engine.explain)
    llm: list[dict[str, Any]] = Field(default_factory=list)
    attempts: int = 1
    latency_ms: float = 0.0
    version: str = ""  # the workspace version that answered ("v3", "v3 + edits"; empty outside the playground)
    started_at: datetime = Field(default_factory=utcnow)
