"""An in-memory session store for STAR replays (:mod:`core.evaluation.star`): no SQLite round trips."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from core.shared.models import Goal, SessionState, Trace
from core.state.sessions.locks import LocalSessionLocks


class ReplayStore:
    """An in-memory :class:`~core.state.sessions.base.StateStore` for replays (no SQLite round trips).

    It keeps the contract's rules that matter here: ``load`` returns a fresh copy and a save
    whose expected version is stale raises :class:`StateConflictError`.
    """

    def __init__(self) -> None:
        self._states: dict[str, str] = {}  # as JSON: parsing it back is a fresh copy, and cheaper than a deep copy
        self._versions: dict[str, int] = {}
        self._traces: dict[str, list[dict[str, Any]]] = {}
        self._incidents: dict[str, list[dict[str, Any]]] = {}
        self._retired: dict[str, list[str]] = {}
        self._turns = LocalSessionLocks()

    def session_lock(self, session_id: str, wait_s: float) -> AbstractContextManager[float]:
        return self._turns.hold(session_id, wait_s)

    def note_incident(self, session_id: str, kind: str, detail: dict[str, Any]) -> None:
        self._incidents.setdefault(session_id, []).append({"at": "", "kind": kind, "detail": dict(detail)})

    def incidents(self, session_id: str) -> list[dict[str, Any]]:
        return list(self._incidents.get(session_id, []))

    def note_side_effect(self, session_id: str, turn: int, key: str, tool: str, args: dict[str, Any],
                         turn_id: str = "") -> None:
        return None  # replays call scripted tools only

    def side_effect_outcome(self, session_id: str, turn_id: str, key: str, outcome: str) -> None:
        return None

    def settle_side_effects(self, session_id: str, turn_id: str = "") -> list[dict[str, Any]]:
        return []

    def unsettled_side_effect_sessions(self) -> list[str]:
        return []

    def side_effect_runs(self, session_id: str, turn: int | None = None) -> list[dict[str, Any]]:
        return []

    def unconfirmed_side_effects(self, session_id: str) -> list[dict[str, Any]]:
        return []

    def side_effects_to_check(self, session_id: str) -> list[dict[str, Any]]:
        return []

    def load(self, session_id: str) -> SessionState | None:
        saved = self._states.get(session_id)
        return SessionState.model_validate_json(saved) if saved is not None else None

    def save(self, state: SessionState, expected_version: int, trace: Trace | None = None) -> None:
        from core.shared.errors import StateConflictError
        from core.state.sessions.base import check_save_arguments

        check_save_arguments(state, expected_version, trace)
        found = self._versions.get(state.session_id, 0)
        if found != expected_version:
            raise StateConflictError(state.session_id, expected_version, found)
        self._states[state.session_id] = state.model_dump_json()
        self._versions[state.session_id] = state.version
        if trace is not None:
            self._traces.setdefault(state.session_id, []).append(trace.model_dump(mode="json"))
        self._retired.setdefault(state.session_id, []).extend(g.model_dump_json() for g in state.retired.values())

    def retired_goals(self, session_id: str) -> list[Goal]:
        return [Goal.model_validate_json(g) for g in self._retired.get(session_id, [])]

    def list_sessions(self) -> list[dict[str, Any]]:
        states = [SessionState.model_validate_json(s) for s in self._states.values()]
        return [{"session_id": s.session_id, "customer_id": s.customer_id, "version": s.version,
                 "updated_at": s.updated_at.isoformat()} for s in states]

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        return list(self._traces.get(session_id, []))

    def last_trace(self, session_id: str) -> dict[str, Any] | None:
        found = self._traces.get(session_id)
        return found[-1] if found else None

    def delete_session(self, session_id: str) -> None:
        self._states.pop(session_id, None)
        self._versions.pop(session_id, None)
        self._traces.pop(session_id, None)
        self._retired.pop(session_id, None)

    def close(self) -> None:
        self._states.clear()
        self._versions.clear()
        self._traces.clear()
        self._retired.clear()
