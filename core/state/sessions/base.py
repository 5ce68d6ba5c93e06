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

import json
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

    def note_side_effect(self, session_id: str, turn: int, key: str, tool: str, args: dict[str, Any],
                         turn_id: str = "") -> None:
        """Record, committed before it is sent, that a turn runs a tool that changes the world: state
        ``started`` under its session, turn number and ``turn_id`` (one per message taken), with its idempotency
        ``key``. A second try of the same call in the same turn (``turn_id``, ``key``) is the same run."""
        ...

    def side_effect_outcome(self, session_id: str, turn_id: str, key: str, outcome: str) -> None:
        """Mark a run once its call returned: ``done``, ``failed`` (the tool answered that it failed),
        ``unknown`` (it may have gone through: a timeout, a crash mid-call) or ``not_sent``."""
        ...

    def settle_side_effects(self, session_id: str, turn_id: str = "") -> list[dict[str, Any]]:
        """Settle the runs of the session's turns that never committed (their process killed, the turn given
        up), other than ``turn_id``'s: each stays filed under its own turn, its turn marked lost, and one left
        ``started`` becomes ``unknown`` for a person to check. Called under the session's lock when a session
        is opened. Returns the runs settled (:meth:`side_effect_runs` rows)."""
        ...

    def unsettled_side_effect_sessions(self) -> list[str]:
        """The sessions with runs of turns that have neither committed nor been settled."""
        ...

    def side_effect_runs(self, session_id: str, turn: int | None = None) -> list[dict[str, Any]]:
        """Every side-effecting run of a session (of turn number ``turn`` only, when given), oldest first: ``{turn, turn_id, key, tool, args, at, state,
        turn_state}`` (``turn_state``: ``running``, ``committed`` with its turn, or ``lost``)."""
        ...

    def unconfirmed_side_effects(self, session_id: str) -> list[dict[str, Any]]:
        """Runs of turns that have not committed and are not settled yet (a crash, a turn given up, or a turn
        still running): ``{turn, key, tool, args, at, ...}``."""
        ...

    def side_effects_to_check(self, session_id: str) -> list[dict[str, Any]]:
        """Runs for a person to check: their outcome unknown (they failed after they may have been sent: a
        timeout, a server error, a crash mid-call, a process killed while one ran), or done in a turn that never
        committed (the customer was never told): ``{turn, key, tool, args, at, state, turn_state, ...}``."""
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


RUN_STATES = ("started", "done", "failed", "unknown", "not_sent")
"""A side-effecting run's states: recorded before it is sent, then what its call returned."""
RUN_COLUMNS = ("turn", "turn_id", "key", "tool", "args", "at", "state", "turn_state")


def call_outcome(call: Any) -> str:
    """What a finished call of a tool that changes the world did: ``done``, ``unknown`` (failed after it may have
    been sent), ``not_sent`` (refused before anything was sent) or ``failed`` (the tool answered that it failed)."""
    if call.ok:
        return "done"
    if call.outcome_unknown:
        return "unknown"
    return "failed" if call.sent else "not_sent"


def side_effect_outcomes(trace: Trace | None) -> list[tuple[str, str]]:
    """``(state, key)`` of each side-effecting call of a turn, all its tries of one key together: ``unknown`` if
    one may have gone through without an answer, else ``done`` if one went through, else ``not_sent`` if every
    try was refused before anything was sent, else ``failed``."""
    if trace is None:
        return []
    calls: dict[str, list[Any]] = {}
    for call in trace.tool_calls:
        if call.key:
            calls.setdefault(call.key, []).append(call)
    out = []
    for key, runs in calls.items():
        outcomes = {call_outcome(c) for c in runs}
        state = next(s for s in ("unknown", "done", "failed", "not_sent") if s in outcomes)
        out.append((state, key))
    return out


def run_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    """One stored run (its columns in RUN_COLUMNS order) as the store's methods return it."""
    out = dict(zip(RUN_COLUMNS, row, strict=True))
    out["args"] = json.loads(out["args"])
    out["turn"] = int(out["turn"])
    at = out["at"]
    out["at"] = at.isoformat(timespec="microseconds") if hasattr(at, "isoformat") else str(at)
    return out


def settled(run: dict[str, Any]) -> dict[str, Any]:
    """A run of a turn that never committed, as settling leaves it: its turn lost, a run still ``started``
    (cut off before its call returned) ``unknown``."""
    return {**run, "turn_state": "lost", "state": "unknown" if run["state"] == "started" else run["state"]}


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
