"""The customer's preferences in a turn: their summary read first (a memory outage never breaks a turn: the
last known one is used and the trace says why), and what the turn learned written just before the commit."""

from __future__ import annotations

import logging
from typing import Any

from core.engine.processor.turn import Turn
from core.shared.models import SessionState
from core.state.memory.base import MemoryUnavailableError, PreferenceMemory, PreferenceSummary, PreferenceUpdate

log = logging.getLogger(__name__)


def customer_key(state: SessionState) -> str:
    """Whose preferences a session reads and writes: its customer, else the session itself."""
    return state.customer_id or f"session:{state.session_id}"


def safe_summary(memory: PreferenceMemory, customer_id: str) -> tuple[PreferenceSummary, dict[str, Any]]:
    """Step 2: the customer's preference summary, and notes for ``trace.memory``.

    Updates earlier turns could not write are retried first. A memory outage never
    breaks a turn: the summary is then the store's last known one (or empty) and the
    notes say what failed and how many updates still wait.
    """
    notes: dict[str, Any] = {"store": memory.label}
    try:
        retried = memory.retry_pending(customer_id)
        if retried:
            notes["retried_updates"] = retried
    except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
        notes.update(error=str(exc), pending_updates=getattr(exc, "pending", 0))
    try:
        return memory.summary(customer_id), notes
    except MemoryUnavailableError as exc:
        notes.update(error=exc.message, pending_updates=exc.pending, summary_from="last known" if exc.fallback
                     else "none")
        return exc.fallback or PreferenceSummary(), notes
    except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
        notes.update(error=f"{type(exc).__name__}: {exc}", summary_from="none")
        return PreferenceSummary(), notes


def write_preferences(memory: PreferenceMemory, t: Turn, text: str) -> None:
    """Step 9 (just before the commit): write what the turn learned; an empty update is a no-op.

    Written before the state is saved, so a crash between the two never loses a preference; the
    turn's (session, turn) makes it once only: a turn re-run after a conflict, or the same message sent
    again after a crash (the same turn number), finds it written and writes nothing. A failure never
    breaks the turn; a store that queues updates (Zep) keeps this one and delivers it on a later turn
    (``safe_summary`` retries and notes it in that turn's trace).
    """
    update = PreferenceUpdate(**{k: v for k, v in t.trace.memory.get("update", {}).items()})
    if update.is_empty():
        return
    try:  # the store writes a (session, turn) once
        memory.write(customer_key(t.state), update, session_id=t.state.session_id, turn=t.state.turn,
                     message=text)
    except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
        log.warning("preference update of session %s turn %d not written now: %s", t.state.session_id,
                    t.state.turn, exc)
