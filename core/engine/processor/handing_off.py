"""Handing the conversation to a person: the session is marked for the team, the store's hand-off tool
(store.yaml ``handoff:``) is called with the open request and a summary, and the customer is told."""

from __future__ import annotations

from core.engine.processor.tool_calls import ToolCaller
from core.engine.processor.turn import Turn, say_to
from core.language import render
from core.shared.models import Goal
from core.sop.graph import Sop
from core.tools.gateway import ToolGateway


class HandOff:
    """Reaches the team for the customer (who asked for a person) or for an SOP step (``hand off to a person``)."""

    def __init__(self, *, sops: dict[str, Sop], gateway: ToolGateway, tools: ToolCaller, handoff: str) -> None:
        self.sops = sops
        self.gateway = gateway
        self.tools = tools
        self.handoff = handoff  # the tool that reaches a person (store.yaml ``handoff:``); "" when none

    def customer_asks(self, t: Turn, active: Goal | None) -> None:
        """The customer asks for a person: the session is marked for the team, every goal is kept as it is
        (the person picks up with what the customer said), and the customer is told so."""
        t.trace.act = "human_handoff"
        t.trace.decisions.append("customer asked for a person: handed over to the team"
                                 + (f" with {active.type} open" if active is not None else ""))
        self.handed_over(t, active, "customer")

    def handed_over(self, t: Turn, goal: Goal | None, by: str, *, step: str = "", told: bool = False) -> None:
        """Mark the session for the team, reach them through the store's hand-off tool, and tell the customer
        what it returned (a ticket, a queue place), or, unless the SOP's step said its own words, that the team
        will take over."""
        t.state.handoff_turn = t.state.turn
        sop = self.sops.get(goal.type) if goal is not None else None
        reached = self.reach_a_person(t, goal, sop)
        t.trace.handoff = {"by": by, "request": goal.type if goal is not None else "", "step": step,
                           "tool": self.handoff if reached else "", "sent": reached}
        if reached:
            t.messages.append(say_to(t, "handoff_sent", detail=reached))
        elif not told:
            t.messages.append(say_to(t, "handoff_with", title=sop.title.lower()) if sop is not None and sop.title
                              else say_to(t, "handoff"))

    def reach_a_person(self, t: Turn, active: Goal | None, sop: Sop | None) -> str:
        """Call the store's hand-off tool (``handoff:`` in store.yaml) with the open request and a short summary
        (and the session and customer, for a tool that takes them); what it returned, as a phrase for the
        customer ("ticket: HD-1042"), or "" when the store has no such tool or the call failed."""
        impl = self.gateway.tools.get(self.handoff) if self.handoff else None
        if impl is None:
            return ""
        known = {k: v for k, v in (active.slots if active is not None else {}).items()
                 if not k.startswith("_") and v not in (None, "", [], {})}
        offered = {"request": sop.title if sop is not None else "", "summary": "; ".join(
            [f"request: {sop.title}" if sop is not None else "no request open",
             *(f"{k}: {render.as_text(v)}" for k, v in list(known.items())[:8]),
             f"last message: {t.perception.text}"]), "message": t.perception.text}
        declared = {p.name for p in impl.spec.params}
        call = self.tools.call(t, "", self.handoff, {k: v for k, v in offered.items() if k in declared}, system=True)
        if not call.ok:
            t.trace.decisions.append(f"the hand-off tool {self.handoff} failed ({call.error}): the team is told "
                                     "by the session's mark only")
            return ""
        t.trace.decisions.append(f"hand-off sent through {self.handoff}")
        result = call.result
        if isinstance(result, dict):  # its first few plain fields ("ticket: HD-1041; queue position: 1")
            plain = {k: v for k, v in result.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}
            return render.render_record(dict(list(plain.items())[:3])) or "sent"
        return render.as_text(result) if result not in (None, "") else "sent"
