"""The customer ends requests: cancelling one (with the procedures it called, the goal under it coming back),
or saying goodbye with requests still open."""

from __future__ import annotations

from core.engine.processor.running import GoalRunner, end_with_callers
from core.engine.processor.turn import Turn, say_to
from core.shared.models import Goal
from core.sop.graph import Sop


def cancel(t: Turn, goal: Goal, sops: dict[str, Sop], runner: GoalRunner, *, resume: bool = True) -> None:
    """End ``goal`` as the customer asked; the goal waiting under it comes back (asked again when
    ``resume``; not when the message goes on to ask for something else)."""
    requested = goal  # a procedure another one called is part of the customer's request: both end
    while requested.caller and requested.caller in t.state.goals:
        requested = t.state.goals[requested.caller]
    sop = sops.get(requested.type)
    title = sop.title.lower() if sop else requested.type
    t.trace.decisions.append(f"customer cancelled {requested.type}")
    t.trace.act = "cancelled"
    t.messages.append(say_to(t, "cancelled", title=title))
    resumed = end_with_callers(t, goal, "cancelled")
    if resumed is not None and resume:
        runner.resume(t, resumed)


def leave(t: Turn) -> None:
    """The customer says goodbye with a request still open: close it and say goodbye."""
    while t.state.active_goal is not None:
        t.trace.decisions.append(f"customer left: {t.state.active_goal.type} closed")
        t.ops.mark_done("left")
    t.trace.act = "goodbye"
    t.messages.append(say_to(t, "goodbye"))
