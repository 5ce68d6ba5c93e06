"""The values a message gives SOPs unasked (:class:`VolunteeredValues`): those for a goal it starts or resumes
(with the slots it says it cannot give), and those kept for other SOPs that will ask for them later."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.language.measures import without_quantities
from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.answers import AnswerReader
from core.understanding.commerce import Commerce
from core.understanding.executor import FlowExecutor
from core.understanding.signals import NOT_KEPT


@dataclass
class VolunteeredValues:
    """The values a message gives one workspace's SOPs before they are asked for."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    answers: AnswerReader
    commerce: Commerce | None = None  # a store's items: the attribute words customers use ("a wireless one")

    def values_for(self, goal: Goal, text: str, *, opening: bool) -> tuple[dict[str, Any], list[str]]:
        """The values a message gives ``goal``'s slots unasked (a budget up front, a brand, an order id;
        ``opening``: the message that starts the goal, whose words may describe the problem), and the
        slots it says the customer cannot give."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return {}, []
        found = self.answers.extract_volunteered(goal, sop, text, opening=opening)
        unavailable = self.answers.unavailable_named(goal, sop, text, found)
        if self.commerce is not None:
            measured, numbers = self.commerce.measures_said(text, goal)  # "for 12 guests": no budget of 12
            found = self.commerce.not_budget(found, numbers)
            found.update(measured)
            rest = without_quantities(text)  # "size M" is no wish for an M
            found.update(self.commerce.features_said(rest, self.answers.slot_words(sop), goal))
            if self.commerce.searches(sop):  # a product type, "anything by <maker>": the shop's own words
                found.update({k: v for k, v in self.commerce.products_said(rest, sop, goal).items() if k not in found})
        return found, unavailable

    def kept_for_later(self, active: Goal, text: str) -> dict[str, dict[str, Any]]:
        """Per other SOP, the typed values (listed options, dates, numbers, ids) a message gives for
        questions only that SOP asks: what the session keeps for the goal that will ask for them."""
        if active.type not in self.sops:
            return {}
        own = set(self.sops[active.type].slot_names())
        out: dict[str, dict[str, Any]] = {}
        for sop in self.sops.values():
            agent = self.agent_of(sop.id)
            if sop.id == active.type or agent is None:
                continue
            types = agent.types(sop)
            found = self.answers.extract_volunteered(Goal(id="", type=sop.id), sop, text, opening=False, typos=False)
            kept = {k: v for k, v in found.items() if k not in own and k in types
                    and types[k].kind not in NOT_KEPT}
            if kept:
                out[sop.id] = kept
        return out
