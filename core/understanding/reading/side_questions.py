"""A question asked instead of an answer (:class:`SideQuestions`): about the offered items when it is one, and
as a knowledge-base query with 'it' read as what the pending question asks for."""

from __future__ import annotations

from dataclasses import dataclass

from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.brains.base import Perception
from core.understanding.commands import Command, FollowUp, KnowledgeQuestion
from core.understanding.commerce import Commerce
from core.understanding.reading.context import ReadContext
from core.understanding.signals import search_query


@dataclass
class SideQuestions:
    """Side questions to one workspace's SOPs, and the store's items when it has them (``commerce``)."""

    sops: dict[str, Sop]
    commerce: Commerce | None = None

    def doubt(self, c: ReadContext, goal: Goal | None) -> list[Command]:
        """A question asked instead of an answer: about the offered items (or a category or brand the store
        carries) when it is one, and as a knowledge-base query, 'it' read as what the pending question
        asks for."""
        p = c.p
        out: list[Command] = []
        question = self.commerce.read(goal, p.text) if self.commerce is not None and goal is not None else None
        if question is not None:
            out.append(FollowUp(evidence=p.text, about="items", question=question))
        return [*out, KnowledgeQuestion(evidence=p.text, query=self.doubt_query(p, goal))]

    def doubt_query(self, p: Perception, goal: Goal | None) -> str:
        """The message as a knowledge-base query, 'it' read as what the pending question asks for."""
        sop = self.sops.get(goal.type) if goal is not None else None
        pending = sop.node(goal.pending) if sop is not None and goal is not None and goal.pending else None
        return p.search_query or search_query(p.text, pending)
