"""The state-store contract: where sessions and their turn traces are kept.

Every implementation (SQLite now, Postgres later) honours the same rules, which
``tests/store/test_state_store_contract.py`` checks for each of them:

* ``load`` returns a fresh copy each call, or None for an unknown session.
* ``save`` uses optimistic locking on ``SessionState.version`` and stores the
  turn's trace in the same transaction; a conflicting save writes nothing.
* ``session_lock`` lets one turn of a session run at a time, across threads and
  processes sharing the store (``core.state.sessions.locks``); waiting for it is bounded.
* ``note_incident`` records what happened to a turn that could not run (the
  session busy too long, a commit that kept conflicting); ``incidents`` lists them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from core.shared.errors import EngineError
from core.shared.models import Goal, SessionState, Trace
from core.shared.redaction import redact as redact  # store URLs in messages: the engine's one redaction


@runtime_checkable
class StateStore(Protocol):
    """Persistent storage for session states and turn traces."""

    def load(self, session_id: str) -> SessionState | None:
        """Return a fresh copy of the stored state, or None if the session is unknown."""
        ...

    def save(self, state: SessionState, expected_version: int, trace: Trace | None = None) -> None:
        """Store ``state`` if the stored version still equals ``expected_version``.

        ``expected_version`` 0 means the session must not exist yet, and
        ``state.version`` must be ``expected_version + 1``. The trace, if given,
        is written in the same transaction. ``state`` is not mutated.

        Raises:
            StateConflictError: The stored version is not ``expected_version``.
            EngineError: ``state.version`` or ``trace`` is inconsistent with the call.
        """
        ...

    def session_lock(self, session_id: str, wait_s: float) -> AbstractContextManager[float]:
        """Hold the session's turn lock for the body (yields the seconds waited for it).

        Raises:
            SessionBusyError: Another turn of the session held it for all of ``wait_s``.
        """
        ...

    def note_incident(self, session_id: str, kind: str, detail: dict[str, Any]) -> None:
        """Record that a turn of the session could not run (``kind``: busy, conflict, ...)."""
        ...

    def incidents(self, session_id: str) -> list[dict[str, Any]]:
        """Return the session's incidents ``{at, kind, detail}``, oldest first."""
        ...

    def note_side_effect(self, session_id: str, turn: int, key: str, tool: str, args: dict[str, Any]) -> None:
        """Record, before it runs, that a turn calls a tool that changes the world (once per ``key``).
        ``save`` of that turn marks it done; one a later save finds still intended is marked unconfirmed."""
        ...

    def unconfirmed_side_effects(self, session_id: str) -> list[dict[str, Any]]:
        """Side-effecting calls of turns that never committed (a crash, a turn given up), still intended:
        ``{turn, key, tool, args, at}``."""
        ...

    def side_effects_to_check(self, session_id: str) -> list[dict[str, Any]]:
        """Side-effecting calls whose outcome is unknown (they failed after they may have been sent: a timeout,
        a server error, a crash mid-call), for a person to check: ``{turn, key, tool, args, at}``."""
        ...

    def list_sessions(self) -> list[dict[str, Any]]:
        """Return ``{session_id, customer_id, version, updated_at, handoff_turn}`` rows, newest first
        (``handoff_turn``: the turn the session went to a person, None when it has not)."""
        ...

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        """Return every trace of a session as JSON-ready dicts, ordered by turn."""
        ...

    def retired_goals(self, session_id: str) -> list[Goal]:
        """Return the finished goals moved out of the session's working state (``SessionState.retired``
        at each save), oldest first; ``load`` leaves them out."""
        ...

    def last_trace(self, session_id: str) -> dict[str, Any] | None:
        """Return the trace of the latest turn, or None if there is none."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its traces; unknown sessions are ignored."""
        ...

    def close(self) -> None:
        """Release the store's resources; calling it twice is harmless."""
        ...


def check_save_arguments(
    state: SessionState, expected_version: int, trace: Trace | None
) -> None:
    """Reject a save whose arguments contradict each other (a caller bug).

    Args:
        state: The state about to be saved.
        expected_version: The version the caller believes is stored (0 = new).
        trace: The turn trace to store with it, if any.

    Raises:
        EngineError: The versions or the trace's session do not fit together.
    """
    if expected_version < 0:
        raise EngineError(f"expected_version must be >= 0, got {expected_version}")
    if state.version != expected_version + 1:
        raise EngineError(
            f"session {state.session_id!r}: state.version must be expected_version + 1 "
            f"({expected_version + 1}), got {state.version}"
        )
    if trace is not None and trace.session_id != state.session_id:
        raise EngineError(
            f"trace belongs to session {trace.session_id!r}, "
            f"not to the saved session {state.session_id!r}"
        )


def side_effect_outcomes(trace: Trace | None) -> list[tuple[str, str]]:
    """``(state, key)`` of the side-effecting calls of a turn that did not simply go through: ``unknown`` (one
    failed after it may have been sent) or ``not_sent`` (every try was refused before anything was sent)."""
    if trace is None:
        return []
    calls: dict[str, list[Any]] = {}
    for call in trace.tool_calls:
        if call.key:
            calls.setdefault(call.key, []).append(call)
    out = []
    for key, runs in calls.items():
        if any(c.outcome_unknown for c in runs):
            out.append(("unknown", key))
        elif not any(c.ok or c.sent for c in runs):
            out.append(("not_sent", key))
    return out


def retired_rows(state: SessionState) -> list[tuple[str, str, int, str]]:
    """The rows ``(session_id, goal_id, turn, data)`` a save writes for the goals the state retired."""
    return [(state.session_id, gid, state.turn, goal.model_dump_json()) for gid, goal in state.retired.items()]


def whole_session(store: StateStore, session_id: str) -> SessionState | None:
    """The session with its retired goals back among its goals (what the Inspector, exports and replays
    show), or None if it is unknown."""
    state = store.load(session_id)
    return None if state is None else with_retired(state, store.retired_goals(session_id))


def with_retired(state: SessionState, retired: list[Goal]) -> SessionState:
    """A copy of ``state`` with its retired goals back among its goals, in the order they were made
    (what the Inspector, exports and replays show: the whole session)."""
    if not retired:
        return state
    goals = {g.id: g for g in retired if g.id not in state.goals} | state.goals
    ordered = sorted(goals.values(), key=lambda g: int(g.id[1:]) if g.id[1:].isdigit() else 0)
    return state.model_copy(update={"goals": {g.id: g for g in ordered}})
