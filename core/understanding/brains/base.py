"""The brain interface: perception, branch decisions, questions and messages.

``Brain`` is what every brain implements (the rule brain is the offline default). Brains that need
the whole turn (an LLM's prompt is built from the session, and its calls are traced) also implement
``TurnAware``; the engine calls them through the helpers at the end of this module, which do nothing
for brains that are not turn-aware.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from core.shared.models import SessionState, Trace
from core.sop.graph import Node, Sop
from core.understanding.commands import Command


@dataclass
class Perception:
    """What a message is: intents against SOP triggers and dialogue acts."""

    text: str
    intents: list[tuple[str, float]] = field(default_factory=list)  # (sop id, score), best first
    question: bool = False
    cancel: bool = False
    greeting: bool = False
    thanks: bool = False
    correction: bool = False
    go_back: bool = False
    embedded: bool = False
    search_query: str = ""  # a knowledge-base query for a question, when a brain wrote one
    commands: list[Command] = field(default_factory=list)  # a model's checked reading: the engine acts on it
    brain: dict[str, Any] = field(default_factory=dict)  # how an LLM brain read the message (for the trace)

    def best_intent(self, threshold: float) -> tuple[str, float] | None:
        """The best SOP above the threshold."""
        if self.intents and self.intents[0][1] >= threshold:
            return self.intents[0]
        return None

    def score(self, sop_id: str) -> float:
        """This message's score for one SOP."""
        return dict(self.intents).get(sop_id, 0.0)

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the trace."""
        out = {"intents": [[s, round(v, 3)] for s, v in self.intents[:3]], "question": self.question,
               "cancel": self.cancel, "greeting": self.greeting, "thanks": self.thanks,
               "correction": self.correction, "go_back": self.go_back, "embedded": self.embedded}
        if self.search_query:
            out["search_query"] = self.search_query
        if self.commands:
            out["commands"] = [c.as_dict() for c in self.commands]
        if self.brain:
            out["brain"] = self.brain
        return out


class Brain(Protocol):
    """What interprets language. RuleBrain is the offline default."""

    def perceive(self, text: str, sops: list[Sop], *, need_intents: bool = True) -> Perception:
        """Classify a message."""
        ...

    def branch(self, condition: str, observation: Any) -> bool:
        """Whether a plain-text branch condition holds for an observation."""
        ...

    def question(self, node: Node, slots: dict[str, Any]) -> str:
        """The question that asks for what an ask step needs."""
        ...

    def correct(self, text: str) -> str:
        """The message with its typos corrected (the observation kept in execution memory)."""
        ...


@dataclass
class TurnContext:
    """The turn in progress: the session being changed and the trace being written."""

    state: SessionState
    trace: Trace


@runtime_checkable
class TurnAware(Protocol):
    """A brain that reads the whole turn (LLM brains): it is told when a turn starts, may propose
    slot values for an answer, and may reword the reply. Every proposal is checked by the engine."""

    def begin_turn(self, ctx: TurnContext) -> None:
        """A new turn (or a re-run of one after a conflict) starts."""
        ...

    def proposed_values(self, node: Node, text: str) -> dict[str, Any]:
        """Slot values this brain read in a reply to an ask step (already checked against the step)."""
        ...

    def phrase(self, draft: str, *, ending: bool) -> str | None:
        """The reply reworded for the customer (their language), or None to send the draft as it is."""
        ...


@functools.lru_cache(maxsize=64)
def _turn_aware(kind: type) -> bool:
    """Whether brains of a class are :class:`TurnAware` (asked once per class: a protocol check is slow)."""
    return issubclass(kind, TurnAware)


def begin_turn(brain: Brain, ctx: TurnContext) -> None:
    """Tell a turn-aware brain that a turn starts (no-op for other brains)."""
    if _turn_aware(type(brain)):
        cast(TurnAware, brain).begin_turn(ctx)


def proposed_values(brain: Brain, node: Node, text: str) -> dict[str, Any]:
    """Slot values a turn-aware brain proposes for a reply to ``node`` ({} for other brains)."""
    return cast(TurnAware, brain).proposed_values(node, text) if _turn_aware(type(brain)) else {}


def phrase(brain: Brain, draft: str, *, ending: bool) -> str | None:
    """A turn-aware brain's rewording of the reply (None: send the draft)."""
    return cast(TurnAware, brain).phrase(draft, ending=ending) if _turn_aware(type(brain)) else None
