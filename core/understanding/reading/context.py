"""What the rule reader knows of a turn besides the message (:class:`ReadContext`): the running goal, the goal
below it and the one finished last, where the reading is written, and what it may ask of the session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.brains.base import Perception
from core.understanding.commands import Reading


@dataclass
class ReadContext:
    """What the rule reader knows of the turn besides the message: the running goal, where the reading is
    written (commands it drops, with the reason), the trace's decision notes, and what it may ask of the
    session (a goal finished last turn, the SOP completed last, whether the knowledge base answers)."""

    p: Perception
    active: Goal | None
    reading: Reading
    notes: list[str]
    threshold: float = 0.5  # the intent score from which a message asks for an SOP
    just_finished: bool = False  # a goal ended last turn (the customer may be answering its result)
    last: Goal | None = None  # the goal completed last in the session
    below: Goal | None = None  # the goal that comes back when the running one ends
    offered_more: bool = False  # our last message asked "anything else?"
    kb_tool: bool = False  # the workspace has a knowledge base to answer questions from
    kb_knows: Callable[[], bool] = lambda: False
    kb_similarity: Callable[[], float] = lambda: 0.0  # how close the knowledge base's best passage is (0 when none)
    prepared: Callable[[Sop], Goal] = lambda sop: Goal(id="", type=sop.id)  # a goal of an SOP as it would start

    @property
    def finished(self) -> str:
        """The SOP completed last ('' when none)."""
        return self.last.type if self.last is not None else ""
