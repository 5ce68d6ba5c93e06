"""The brain interface: perception, branch decisions, questions and messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from core.sop.graph import Node, Sop


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
        return {"intents": [[s, round(v, 3)] for s, v in self.intents[:3]], "question": self.question,
                "cancel": self.cancel, "greeting": self.greeting, "thanks": self.thanks,
                "correction": self.correction, "go_back": self.go_back, "embedded": self.embedded}


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
