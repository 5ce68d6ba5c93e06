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
        what it returned (a ticket, a queue place). One hand-off is open per session: asking again while it is
        open is answered with it, and nothing is sent twice. When the tool fails or is too slow, the customer
        is told plainly and offered what remains (ask again, leave a message); with no tool, unless the SOP's
        step said its own words, that the team will take over."""
        t.state.handoff_turn = t.state.turn
        sop = self.sops.get(goal.type) if goal is not None else None
        record = {"by": by, "request": goal.type if goal is not None else "", "step": step}
        if t.state.handoff_open:  # already with the team: no second ticket
            t.trace.decisions.append(f"a hand-off is already open ({t.state.handoff_open}): nothing sent again")
            t.trace.handoff = {**record, "tool": "", "sent": t.state.handoff_open, "already_open": True}
            t.messages.append(say_to(t, "handoff_already", detail=t.state.handoff_open))
            return
        reached, failed = self.reach_a_person(t, goal, sop)
        t.state.handoff_open = reached
        t.trace.handoff = {**record, "tool": self.handoff if reached else "", "sent": reached}
        if reached:
            t.messages.append(say_to(t, "handoff_sent", detail=reached))
        elif failed:  # said even after the step's own words: the customer must know it is not confirmed
            t.trace.handoff["failed"] = True
            t.messages.append(say_to(t, "handoff_failed"))
        elif not told:
            t.messages.append(say_to(t, "handoff_with", title=sop.title.lower()) if sop is not None and sop.title
                              else say_to(t, "handoff"))

    def reach_a_person(self, t: Turn, active: Goal | None, sop: Sop | None) -> tuple[str, bool]:
        """Call the store's hand-off tool (``handoff:`` in store.yaml) with the request and a short summary, both
        built from the conversation whenever it is asked for (and the session and customer, for a tool that
        takes them). Returns what it returned, as a phrase for the customer ("ticket: HD-1042"), and whether the
        call failed (``("", False)`` when the store has no such tool)."""
        impl = self.gateway.tools.get(self.handoff) if self.handoff else None
        if impl is None:
            return "", False
        known = {k: v for k, v in (active.slots if active is not None else {}).items()
                 if not k.startswith("_") and v not in (None, "", [], {})}
        request = self.request_of(t, sop)
        said = [m.text for m in t.state.history if m.role == "user"][-3:]
        offered = {"request": request, "summary": "; ".join(
            [f"request: {request}",
             *(f"{k}: {render.as_text(v)}" for k, v in list(known.items())[:8]),
             *([f"earlier messages: {' / '.join(said[:-1])}"] if len(said) > 1 else []),
             f"last message: {t.perception.text}"]), "message": t.perception.text}
        declared = {p.name for p in impl.spec.params}
        call = self.tools.call(t, "", self.handoff, {k: v for k, v in offered.items() if k in declared}, system=True)
        if not call.ok:
            t.trace.decisions.append(f"the hand-off tool {self.handoff} failed ({call.error_kind}: {call.error}): "
                                     "the customer is told the team could not confirm they have it")
            return "", True
        t.trace.decisions.append(f"hand-off sent through {self.handoff}")
        result = call.result
        if isinstance(result, dict):  # its first few plain fields ("ticket: HD-1041; queue position: 1")
            plain = {k: v for k, v in result.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}
            return render.render_record(dict(list(plain.items())[:3])) or "sent", False
        return (render.as_text(result) if result not in (None, "") else "sent"), False

    def request_of(self, t: Turn, sop: Sop | None) -> str:
        """What the customer wants, for the team: the open request's title, else the latest request of the
        session, else the customer's own words (asking for a person before any SOP ran)."""
        if sop is not None:
            return sop.title or sop.id
        for goal in reversed(list(t.state.goals.values())):
            latest = self.sops.get(goal.type)
            if latest is not None:
                return latest.title or latest.id
        first = next((m.text for m in t.state.history if m.role == "user"), "") or t.perception.text
        return f"asked for a person: {first}"
