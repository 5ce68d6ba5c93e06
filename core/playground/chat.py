"""The Chat page's service: chat turns, the stored sessions, and what the chat shows beside the conversation
(the goal panel, the goals in plain words, the flow the conversation took)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.shared.errors import UserInputError
from core.shared.models import SessionState
from core.state.sessions.base import whole_session

if TYPE_CHECKING:
    from core.playground.service import Playground

OUTCOMES = {"completed": "done", "cancelled": "cancelled by the customer", "left": "closed: the customer left",
            "failed": "could not be completed", "sop removed": "stopped: its SOP was removed"}
"""How a finished goal's outcome reads in the playground."""


@dataclass
class TurnView:
    """What one chat turn produced."""

    reply: str
    trace: dict[str, Any]
    state: SessionState


class Chat:
    """Chat turns and the sessions they are stored in, for one :class:`~core.playground.service.Playground`."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    @staticmethod
    def new_session_id() -> str:
        """A fresh session id."""
        return f"s-{uuid.uuid4().hex[:8]}"

    def send(self, session_id: str, text: str, customer_id: str | None = None) -> TurnView:
        """Run one chat turn.

        Raises:
            UserInputError: the workspace has errors (nothing runs), or the message is empty.
        """
        orch = self.pg.orch
        if orch is None:
            raise UserInputError(f"the workspace has errors, so the agent cannot run: {self.pg.error}")
        if not text.strip():
            raise UserInputError("type a message first")
        before = orch.store.load(session_id)  # its version: the whole session is read after the turn
        reply = orch.handle_message(session_id, text, customer_id=customer_id or None)
        state = orch.load_state(session_id)
        if state is None or (before is not None and state.version == before.version):
            raise UserInputError(reply)  # the turn was abandoned (e.g. the language model is unreachable)
        return TurnView(reply, orch.last_trace(session_id) or {}, state)

    def state(self, session_id: str) -> SessionState | None:
        """A session's saved state, its retired goals included."""
        return whole_session(self.pg.state_store, session_id)

    def sessions(self, limit: int = 200) -> list[dict[str, Any]]:
        """The stored sessions, newest first (at most ``limit``), each with its first message and number of
        turns, so people can tell them apart."""
        store = self.pg.state_store
        found = sorted(store.list_sessions(), key=lambda s: str(s.get("updated_at", "")), reverse=True)[:limit]
        for s in found:
            traces = store.traces(str(s["session_id"]))
            s["first_message"] = str(traces[0].get("user", "")) if traces else ""
            s["turns"] = len(traces)
        return found

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        """A session's turn traces, oldest first."""
        return self.pg.state_store.traces(session_id)

    def delete_session(self, session_id: str) -> None:
        """Remove a session and its traces."""
        self.pg.state_store.delete_session(session_id)

    @staticmethod
    def goal_panel(state: SessionState | None) -> dict[str, Any]:
        """What the chat shows beside the conversation: the active goal and the stack."""
        if state is None:
            return {"active_goal": None, "status": None, "slots": {}, "missing": [], "next_question": "",
                    "stack": []}
        goal = state.active_goal
        return {
            "active_goal": goal.type if goal else None,
            "status": goal.status.value if goal else None,
            "step": goal.step if goal else None,
            "slots": dict(goal.slots) if goal else {},
            "missing": list(goal.missing) if goal else [],
            "next_question": goal.next_question if goal else "",
            "stack": [state.goals[g].type for g in state.goal_stack],
            "turn": state.turn,
            "version": state.version,
        }

    def goal_story(self, state: SessionState | None) -> dict[str, Any]:
        """The goals of a session in plain words, for people who do not read engine ids: what the agent
        is doing now ("Recommend an item: waiting for the budget"), what waits, and how each finished
        request ended, newest first."""
        titles = {sop.id: sop.title or sop.id for sop in self.pg.workspace.sops}
        if state is None:
            return {"now": "", "waiting": [], "finished": [], "handoff": None}
        goal = state.active_goal
        now = ""
        if goal is not None:
            title = titles.get(goal.type, goal.type)
            if goal.pending and goal.missing:
                now = f"{title}: waiting for the {_words(goal.missing[0])}"
            elif goal.pending:
                now = f"{title}: waiting for the customer's answer"
            else:
                now = f"{title}: in progress"
        waiting = [titles.get(state.goals[g].type, state.goals[g].type) for g in reversed(state.goal_stack)
                   if g in state.goals]
        done = sorted((g for g in state.goals.values() if g.status.value == "done"), key=lambda g: g.updated_at,
                      reverse=True)
        finished = [{"request": titles.get(g.type, g.type), "outcome": OUTCOMES.get(g.outcome, g.outcome or "ended")}
                    for g in done]
        return {"now": now, "waiting": waiting, "finished": finished, "handoff": state.handoff_turn}

    def flow(self, session_id: str) -> dict[str, Any] | None:
        """The SOP graph of the session's active goal (else its latest one) with the path the conversation
        took through it drawn and the current step lit, as Graphviz DOT; None before any SOP ran."""
        state = self.state(session_id)
        if state is None or not state.goals:
            return None
        goal = state.active_goal or max(state.goals.values(), key=lambda g: g.updated_at)
        sop = next((s for s in self.pg.workspace.sops if s.id == goal.type), None)
        if sop is None:
            return None
        path = [p["node"] for tr in self.traces(session_id) for p in tr.get("path") or []
                if p.get("goal") == goal.id and p.get("node") in sop.nodes]
        current = (goal.pending or goal.step) if goal is state.active_goal else None
        return {"sop": sop.id, "title": sop.title or sop.id, "current": current, "visited": path,
                "dot": sop.to_dot(visited=path, taken=sop.walked(path), current=current)}


def _words(slot: str) -> str:
    """A slot name as words ("order_id" -> "order id")."""
    return slot.replace("_", " ").replace(".", " ").strip()
