"""The goal stack alone (core.engine.goals.GoalOps): pure transitions on a SessionState, each logged."""

from __future__ import annotations

from core.engine.goals import GoalOps
from core.shared.models import GoalStatus, SessionState


def ops() -> GoalOps:
    return GoalOps(SessionState(session_id="s", workspace_id="w"))


def test_a_new_request_suspends_the_active_goal_and_the_end_resumes_it() -> None:
    g = ops()
    first = g.new_goal("refund", 1)
    g.activate(first)
    second = g.new_goal("address", 1)
    g.suspend_and_activate(second)
    assert g.state.active_goal is second and g.state.goal_stack == [first.id]
    assert first.status == GoalStatus.SUSPENDED
    resumed = g.mark_done("completed")
    assert resumed is first and g.state.active_goal is first and g.state.goal_stack == []
    assert second.status == GoalStatus.DONE and second.outcome == "completed"
    assert [o["op"] for o in g.ops] == ["activate", "push", "suspend_and_activate", "done", "pop"]


def test_a_goal_waiting_on_a_question_comes_back_blocked() -> None:
    g = ops()
    first = g.new_goal("refund", 1)
    g.activate(first)
    first.pending = "ask_order_id"
    g.suspend_and_activate(g.new_goal("faq", 1))
    assert g.mark_done("completed") is first
    assert first.status == GoalStatus.BLOCKED  # it waits for the customer's answer again


def test_deferred_goals_wait_in_order_of_priority() -> None:
    g = ops()
    g.activate(g.new_goal("chat", 1))
    low, high, mid = g.new_goal("low", 1), g.new_goal("high", 5), g.new_goal("mid", 3)
    for goal in (low, high, mid):
        g.defer(goal)
    # the top of the stack resumes first: the highest priority
    assert [g.state.goals[i].type for i in g.state.goal_stack] == ["low", "mid", "high"]
    assert g.mark_done("completed").type == "high"


def test_bringing_a_waiting_goal_forward_suspends_the_active_one() -> None:
    g = ops()
    a = g.new_goal("a", 1)
    g.activate(a)
    b = g.new_goal("b", 1)
    g.suspend_and_activate(b)
    c = g.new_goal("c", 1)
    g.suspend_and_activate(c)
    g.bring_forward(a)
    assert g.state.active_goal is a
    assert [g.state.goals[i].type for i in g.state.goal_stack] == ["b", "c"]


def test_a_draft_is_not_part_of_the_session_until_added() -> None:
    g = ops()
    d = g.draft("search", 1)
    assert d.id not in g.state.goals
    g.add(d)
    g.activate(d)
    assert g.state.active_goal is d
    assert g.mark_done("left") is None and g.state.active_goal is None
