"""A long session costs what a short one does: finished goals the turn no longer reads leave the working
state (kept beside it in the store), and every reader of the whole session still sees them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from core.engine.build import Workspace, build_orchestrator
from core.engine.goals import GoalOps, next_number, retire_finished
from core.retrieval.embedding import CachedEmbedder
from core.shared.models import GoalStatus, MemoryEntry, SessionState
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store

ROOT = Path(__file__).resolve().parent.parent


def _finish(g: GoalOps, goal_type: str, outcome: str = "completed", turn: int = 1):  # type: ignore[no-untyped-def]
    goal = g.new_goal(goal_type, 1)
    g.activate(goal)
    goal.memory.append(MemoryEntry(action="step", turn=turn))
    g.mark_done(outcome)
    return goal


def test_only_finished_goals_a_newer_one_of_their_sop_replaced_are_retired() -> None:
    g = GoalOps(SessionState(session_id="s", turn=10))
    first = _finish(g, "refund")
    _finish(g, "refund", outcome="cancelled")  # the newest refund, but not completed: the completed one stays
    old_other = _finish(g, "address")
    new_other = _finish(g, "address")
    waiting = g.new_goal("refund", 1)
    g.activate(waiting)  # a refund still running
    assert retire_finished(g.state) == [old_other.id]
    assert set(g.state.goals) == {first.id, "g2", new_other.id, waiting.id}
    assert g.state.retired[old_other.id] is old_other
    third = _finish(GoalOps(g.state), "refund")  # a newer completed refund replaces the first
    third.updated_at = first.updated_at + timedelta(seconds=1)
    g.state.active_goal_id = None
    assert retire_finished(g.state) == [first.id, "g2"]


def test_goals_finished_this_turn_or_the_last_stay_and_numbers_never_repeat() -> None:
    g = GoalOps(SessionState(session_id="s", turn=5))
    a = _finish(g, "refund", turn=4)
    b = _finish(g, "refund", turn=5)
    assert retire_finished(g.state) == [] and {a.id, b.id} <= set(g.state.goals)
    g.state.turn = 9
    assert retire_finished(g.state) == [a.id]
    assert next_number(g.state) == 3 and g.new_goal("refund", 1).id == "g3"  # never "g2" again


def test_a_long_chat_keeps_a_bounded_working_state_and_shows_every_request(demo_ws: Workspace,
                                                                          tmp_path: Path) -> None:
    orch = build_orchestrator(demo_ws.files.root, store=open_state_store(f"sqlite:///{tmp_path}/s.db"),
                              memory=LocalPreferenceMemory(tmp_path / "p.db"), loaded=demo_ws)
    for n in range(6):
        orch.handle_message("long", "My laptop keeps freezing.")
        orch.handle_message("long", f"Lenovo Legion {n}, freezes when gaming.")
        orch.handle_message("long", f"Recommend a gaming mouse, budget {1500 + n}")
    hot = orch.store.load("long")
    whole = orch.load_state("long")
    assert hot is not None and whole is not None
    finished = [g for g in whole.goals.values() if g.status == GoalStatus.DONE]
    assert len([g for g in finished if g.type == "support.troubleshoot"]) >= 6
    assert len(hot.goals) <= 4 < len(whole.goals)  # per SOP its newest finished (and completed) goal
    assert list(whole.goals) == [f"g{i}" for i in range(1, len(whole.goals) + 1)]  # made in order, none lost
    assert {g.id for g in orch.store.retired_goals("long")} == set(whole.goals) - set(hot.goals)
    # the customer's device is still known from the newest request when a new problem comes
    reply = orch.handle_message("long", "My screen is frozen")
    assert "Lenovo Legion 5" in reply
    assert len(orch.store.load("long").goals) <= 4  # type: ignore[union-attr]


def test_the_playground_shows_and_exports_every_request_of_a_long_session(embedder: CachedEmbedder) -> None:
    import json

    from core.playground.service import Playground

    pg = Playground(ROOT, embedder=embedder, state_url="sqlite:///:memory:")
    sid = pg.chat.new_session_id()
    for n in range(4):
        pg.chat.send(sid, "My laptop keeps freezing.")
        pg.chat.send(sid, f"Asus Zenbook {n}, freezes when gaming.")
    hot = pg.state_store.load(sid)
    shown = pg.chat.state(sid)
    assert hot is not None and shown is not None and len(hot.goals) < len(shown.goals)
    exported = json.loads(pg.inspector.export_session(sid))
    assert sorted(exported["state"]["goals"]) == sorted(shown.goals)
    assert {g["slots"].get("device_model") for g in exported["state"]["goals"].values()} >= {
        f"Asus Zenbook {n}" for n in range(4)}
