"""The Inspector page's service: a session turn by turn (goal and stack operations), the execution memory of
its goals, its tool calls, and the whole session exported as one JSON document for a bug report."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.engine.explain import op_text
from core.shared.errors import UserInputError
from core.shared.models import SessionState, utcnow
from core.shared.redaction import redact

if TYPE_CHECKING:
    from core.playground.service import Playground


class Inspector:
    """What one :class:`~core.playground.service.Playground`'s sessions did, for the Inspector page."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    def timeline(self, session_id: str) -> list[dict[str, Any]]:
        """Turn by turn: the goal and stack operations, and the active goal and stack after each turn."""
        rows: list[dict[str, Any]] = []
        active: str | None = None
        stack: list[str] = []
        for tr in self.pg.chat.traces(session_id):
            ops = tr.get("stack_ops") or []
            for op in ops:
                kind = op.get("op")
                if kind in ("activate", "suspend_and_activate") or (kind == "pop"):
                    active = op.get("goal")
                elif kind == "done":
                    active = None
                stack = list(op.get("stack") or [])
            rows.append({
                "turn": tr.get("turn"),
                "user": tr.get("user", ""),
                "active goal": active or "",
                "stack (bottom → top)": " → ".join(stack),
                "operations": "; ".join(op_text(op) for op in ops),
                "actions": ", ".join(tr.get("actions") or []),
                "reply": tr.get("reply", ""),
            })
        return rows

    @staticmethod
    def execution_memory(state: SessionState) -> list[dict[str, Any]]:
        """The paper's execution memory of every goal: action, observation, feedback."""
        return [{"goal": f"{g.id} {g.type}", "turn": m.turn, "action": m.action,
                 "observation": _short(m.observation), "feedback": m.feedback}
                for g in state.goals.values() for m in g.memory]

    def tool_calls(self, session_id: str) -> list[dict[str, Any]]:
        """Every tool call of a session, with arguments, outcome and latency."""
        return [{"turn": tr.get("turn"), "agent": c.get("agent", ""), "tool": c.get("tool", ""),
                 "args": _short(c.get("args")), "ok": c.get("ok"),
                 "result": _short(c.get("result")) if c.get("ok") else c.get("error", ""),
                 "latency_ms": c.get("latency_ms")}
                for tr in self.pg.chat.traces(session_id) for c in tr.get("tool_calls") or []]

    def export_session(self, session_id: str) -> str:
        """A session as one JSON document for a bug report: state, traces, the customer's memory."""
        state = self.pg.chat.state(session_id)
        if state is None:
            raise UserInputError(f"no session {session_id!r}")
        customer = state.customer_id
        doc = {
            "exported_at": utcnow().isoformat(),
            "workspace": {"id": self.pg.workspace.files.id, "name": self.pg.name},
            "sops": {s.id: s.version for s in self.pg.workspace.sops},
            "state": state.model_dump(mode="json"),
            "traces": self.pg.chat.traces(session_id),
            "preferences": [e.model_dump() for e in self.pg.preferences.entries_or_empty(customer)],
        }
        return redact(json.dumps(doc, indent=2, ensure_ascii=False, default=str), data=True)  # no secret leaves


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
