"""A new goal with what the session already told it (the signed-in customer, earlier answers), and what the
session's earlier goals say: the goal completed last, and whether one just finished."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.engine.flow import SpecialistAgent
from core.engine.processor.turn import Turn
from core.shared.models import Goal, GoalStatus, SessionState
from core.sop.graph import SESSION_SLOTS, Sop
from core.understanding import asked_in_order, reused_values, slot_unknown
from core.workspace.slots import PERSONAL_KINDS


class NewGoals:
    """New goals of a workspace's SOPs, filled from the session's earlier goals."""

    def __init__(self, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None]) -> None:
        self.sops = sops
        self.agent_of = agent_of

    def fresh(self, t: Turn, sop: Sop) -> Goal:
        """A new goal of ``sop`` at its start, with what the session already told it (signed-in customer,
        earlier answers)."""
        goal = t.ops.new_goal(sop.id, sop.priority)
        goal.step = sop.start
        known = self.draft(t.state, sop).slots
        goal.slots.update(known)
        for k in known:
            t.state.told.pop(k, None)
        if set(known) - SESSION_SLOTS:
            t.trace.decisions.append(f"already told in this session: {', '.join(sorted(set(known) - SESSION_SLOTS))}")
        return goal

    def prepared(self, state: SessionState, sop: Sop) -> Goal:
        """The goal of ``sop`` the next request for it would work on: the one waiting on the stack, or a new
        one (not yet part of the session, id '') with what the session already told it."""
        return state.waiting_goal(sop.id) or self.draft(state, sop)

    def draft(self, state: SessionState, sop: Sop) -> Goal:
        """A new goal of ``sop`` (not part of the session, id '') with what the session already told it."""
        goal = Goal(id="", type=sop.id, priority=sop.priority)
        if state.customer_id:
            goal.slots.update({k: state.customer_id for k in SESSION_SLOTS & set(sop.slot_names())})
        goal.slots.update(self.already_told(state, sop))
        return goal

    def already_told(self, state: SessionState, sop: Sop) -> dict[str, Any]:
        """What the customer already said in this session that a new goal of ``sop`` asks for: their
        answers to this SOP's questions last time ("and what about Detroit?" keeps the day), yes/no
        confirmations and picks excepted, their own name from any goal, and an identifying value (a card
        number, an email) another SOP asked for under the same slot name and kind."""
        agent = self.agent_of(sop.id)
        if agent is None:
            return {}
        types = agent.types(sop)
        asked = {p.name for n in sop.nodes.values() if n.asks for p in n.fills}
        keep = {k for k in asked if k in types and types[k].kind not in ("boolean", "choice")}
        names = [k for k in asked if k in types and types[k].person and not types[k].others]  # the customer's own
        out: dict[str, Any] = {}
        for old in sorted(state.goals.values(), key=lambda g: g.updated_at):  # the latest answer wins
            old_sop, old_agent = self.sops.get(old.type), self.agent_of(old.type)
            if old_sop is None or old_agent is None:
                continue
            given = {k: v for k, v in old.slots.items() if v not in (None, "")}
            old_types = old_agent.types(old_sop)
            if old.type == sop.id and old.outcome != "cancelled":  # a request called off leaves nothing to reuse
                out.update({k: v for k, v in given.items() if k in keep})
            else:  # the customer's own card number, email or phone (not a record's id: which order?), asked by
                #       another SOP under the same name
                out.update({k: v for k, v in given.items() if k in keep and k in old_types
                            and types[k].kind in PERSONAL_KINDS and old_types[k].kind == types[k].kind})
            person = next((v for k, v in given.items() if k in old_types and old_types[k].person
                           and not old_types[k].others), None)
            if person is not None:
                out.update({k: person for k in names})
        out.update({k: v for k, v in state.told.items() if k in keep and k not in out})
        return out

    def reused(self, state: SessionState, goal: Goal, text: str) -> dict[str, Any]:
        """Values a message asks to take from an earlier request of the session for ``goal``'s slots still to fill
        ("a car for the same dates as the hotel": :func:`core.understanding.reused_values`), from the latest
        other request that holds them."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return {}
        types = agent.types(sop)
        order = [n for n in asked_in_order(sop) if slot_unknown(goal, n)]
        earlier = []
        for old in sorted(state.goals.values(), key=lambda g: g.updated_at, reverse=True):
            old_sop, old_agent = self.sops.get(old.type), self.agent_of(old.type)
            if old.id != goal.id and old_sop is not None and old_agent is not None:
                kept = [n for n in asked_in_order(old_sop) if old.slots.get(n) not in (None, "")]
                earlier.append(({n: old.slots[n] for n in kept}, old_agent.types(old_sop)))
        return reused_values(text, types, order, earlier)

    @staticmethod
    def just_finished(state: SessionState) -> bool:
        """Whether a goal ended in the previous turn (the customer is likely answering its result)."""
        return NewGoals.finished_last(state) is not None

    @staticmethod
    def finished_last(state: SessionState) -> Goal | None:
        """The goal that ended in the previous turn (the latest of them), None when none did."""
        ended = [g for g in state.goals.values()
                 if g.status == GoalStatus.DONE and g.memory and g.memory[-1].turn >= state.turn - 1]
        return max(ended, key=lambda g: (g.memory[-1].turn, g.updated_at), default=None)

    def last_completed(self, state: SessionState) -> Goal | None:
        """The goal completed last in this session (whose SOP and agent still exist)."""
        done = [g for g in state.goals.values() if g.status == GoalStatus.DONE and g.outcome == "completed"
                and g.type in self.sops and self.agent_of(g.type) is not None]
        return max(done, key=lambda g: g.updated_at, default=None)
