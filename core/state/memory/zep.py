"""Customer preference memory on Zep Cloud, through the ``zep-cloud`` 4.x SDK (Zep's v4 API).

How preferences live in Zep
---------------------------
Each customer is a Zep user: ``user.lookup(user_id=customer_id)``, and ``user.create``
when that answers 404 (a 409 on create means another app instance created the user
first, so we look it up again). Every change to the customer's preferences is one
JSON episode in the user's graph (``graph.episode.add(type="json")``) holding one
:class:`~core.state.memory.events.PreferenceEvent`: the facts with their ids and their
provenance (session, turn, the customer's message). The episode metadata repeats the
event's kind, op, id, session and turn, so our episodes can be listed by a metadata
filter and read by people in Zep's console. The customer's message is also added to
the session's thread (``thread.create``, ``thread.add_messages``) so Zep's own fact
extraction sees the customer's words, as Zep intends.

Why the summary is not Zep's context block
------------------------------------------
``thread.get_context`` / ``graph.get_context`` return prose that Zep's extraction model
assembled. Agents need exact fields (a budget number, brand lists) and the inspector
needs every fact's provenance and a handle to edit or forget it, which prose cannot
give reliably. So the summary is the fold of our own JSON episodes
(``graph.episode.list`` filtered on metadata ``kind``): exact, with provenance, and
identical to what the local SQLite store gives for the same calls. Zep's context block
is still available from :meth:`ZepPreferenceMemory.context` for callers that want prose
(e.g. an LLM prompt).

Outages never break a turn
--------------------------
Every change is queued in a local outbox (:mod:`core.state.memory.zep_cache`) *before* it is
sent and removed once Zep has it, so a timeout, a 5xx or a 429 only delays it: the
next ``write`` or ``retry_pending`` for that customer delivers it, in order, with the
same idempotency keys (and the fold applies an event once even if Zep stored it
twice). While Zep is down, reads raise :class:`MemoryUnavailableError` carrying the
last summary read plus the queued changes, and a short circuit breaker (``cooldown_s``,
:mod:`core.state.memory.zep_calls`) skips Zep for a while after a failure, so a down Zep costs one
timeout, not one per call.
The SDK's own retries are off (``max_retries=0``): its back-off sleeps would stall a chat turn.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx
from zep_cloud import Zep
from zep_cloud.environment import ZepEnvironment

from core.shared.concurrency import holding
from core.shared.errors import UserInputError
from core.state.memory.base import (
    MemoryUnavailableError,
    PreferenceEntry,
    PreferenceSummary,
    PreferenceUpdate,
    normalize_fact,
    summary_from_entries,
)
from core.state.memory.events import FactIds, edit_event, fold, forget_event, remember_event
from core.state.memory.zep_cache import ZepLocalCache
from core.state.memory.zep_calls import ZepBreaker, ZepFailure
from core.state.memory.zep_remote import ZepRemote

DEFAULT_BASE_URL = ZepEnvironment.DEFAULT.value
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_COOLDOWN_S = 30.0
CONTEXT_QUERY = "the customer's shopping preferences and communication style"

log = logging.getLogger(__name__)


class ZepPreferenceMemory:
    """A :class:`~core.state.memory.base.PreferenceMemory` whose facts live in Zep Cloud."""

    def __init__(self, api_key: str, *, base_url: str | None = None, cache_path: str | Path = ":memory:",
                 timeout_s: float = DEFAULT_TIMEOUT_S, cooldown_s: float = DEFAULT_COOLDOWN_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Connect to Zep (no request is made until the first call).

        Args:
            api_key: The Zep project API key (``ZEP_API_KEY``); required.
            base_url: The API root, default ``https://api.getzep.com/api/v4`` (``ZEP_BASE_URL``).
            cache_path: The local SQLite cache and outbox, e.g. ``<workspace>/.state/zep_cache.sqlite``.
            timeout_s: Per-request timeout.
            cooldown_s: How long to skip Zep after a failed call (a 429's Retry-After may extend it).
            clock: Monotonic seconds (tests pass a fake one).

        Raises:
            UserInputError: No API key was given.
        """
        if not api_key or not api_key.strip():
            raise UserInputError("Zep preference memory needs an API key: set ZEP_API_KEY")
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._http = httpx.Client(timeout=timeout_s, follow_redirects=True)
        self._client = Zep(api_key=api_key.strip(), base_url=self.base_url, httpx_client=self._http,
                           timeout=timeout_s, max_retries=0)
        self._cache = ZepLocalCache(cache_path)
        self._ids = FactIds()
        self._guard = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}
        self._breaker = ZepBreaker(self.base_url, timeout_s, cooldown_s, clock)
        self._remote = ZepRemote(self._client, self._cache, self._breaker)

    @property
    def label(self) -> str:
        """``Zep Cloud (<base url>)``."""
        return f"Zep Cloud ({self.base_url})"

    # ------------------------------------------------------------------ the contract
    def summary(self, customer_id: str) -> PreferenceSummary:
        """What is known about the customer: the fold of their events in Zep plus any still queued.

        Raises:
            MemoryUnavailableError: Zep is down; ``fallback`` holds the last known summary.
        """
        return summary_from_entries(self.entries(customer_id))

    def entries(self, customer_id: str) -> list[PreferenceEntry]:
        """The customer's facts with provenance, oldest first.

        Raises:
            MemoryUnavailableError: Zep is down; ``fallback`` holds the last known summary.
        """
        with holding(self._lock_for(customer_id)):
            entries, error = self._current(customer_id)
            if error is not None:
                raise error
            return entries

    def write(self, customer_id: str, update: PreferenceUpdate, *, session_id: str = "", turn: int = 0,
              message: str = "") -> None:
        """Queue what a turn learned and deliver it (with anything queued before); empty: no-op.

        Raises:
            MemoryUnavailableError: Zep is down; the update stays queued for a later call.
        """
        if update.is_empty():
            return
        with holding(self._lock_for(customer_id)):
            known = self._cache.mirror(customer_id) + [row.event for row in self._cache.pending(customer_id)]
            if session_id and turn and any(e.op == "remember" and e.session_id == session_id and e.turn == turn
                                           for e in known):
                return  # this turn's update is already queued or delivered (a re-run, a resend after a crash)
            event = remember_event(customer_id, update, self._ids, session_id=session_id, turn=turn,
                                   message=message)
            self._cache.enqueue(event)
            self._flush(customer_id)

    def forget(self, customer_id: str, entry_id: int) -> None:
        """Remove one fact (an unknown id is ignored).

        Raises:
            MemoryUnavailableError: Zep is down; the removal stays queued for a later call.
        """
        with holding(self._lock_for(customer_id)):
            entry = self._find(customer_id, entry_id)
            if entry is None:
                return
            self._cache.enqueue(forget_event(entry))
            self._flush(customer_id)

    def set_entry(self, customer_id: str, entry_id: int, value: str) -> None:
        """Change one fact's value, keeping its provenance; merge rules apply.

        Raises:
            UserInputError: The entry does not exist or the value is invalid for its field.
            MemoryUnavailableError: Zep is down; the change stays queued for a later call.
        """
        with holding(self._lock_for(customer_id)):
            entry = self._find(customer_id, entry_id)
            if entry is None:
                raise UserInputError(f"no preference entry {entry_id} for customer {customer_id!r}")
            try:
                text = normalize_fact(entry.field, value)
            except ValueError as exc:
                raise UserInputError(f"preference entry {entry_id}: {exc}") from None
            self._cache.enqueue(edit_event(entry, text))
            self._flush(customer_id)

    def retry_pending(self, customer_id: str) -> int:
        """Deliver the customer's queued changes, oldest first; no request when none is queued.

        Returns:
            How many were delivered.

        Raises:
            MemoryUnavailableError: Zep is still down (the rest stays queued), or it rejected a change.
        """
        with holding(self._lock_for(customer_id)):
            if not self._cache.pending(customer_id):
                return 0
            return self._flush(customer_id)

    def pending(self, customer_id: str) -> int:
        """How many of the customer's changes wait in the outbox."""
        return len(self._cache.pending(customer_id))

    def context(self, customer_id: str, session_id: str = "", query: str = CONTEXT_QUERY) -> str:
        """Zep's own context block about the customer (prose from Zep's extraction), "" if none.

        The session's thread answers when this process created one (``thread.get_context``);
        otherwise the customer's graph does (``graph.get_context`` with ``query``).

        Raises:
            MemoryUnavailableError: Zep is down.
        """
        with holding(self._lock_for(customer_id)):
            try:
                thread = self._cache.thread_uuid(customer_id, session_id) if session_id else None
                if thread is not None:
                    answer = self._breaker.call("thread.get_context", partial(self._client.thread.get_context, thread))
                    return answer.context or ""
                user = self._remote.user(customer_id, create=False)
                if user is None:
                    return ""
                reply = self._breaker.call("graph.get_context",
                                           partial(self._client.graph.get_context, user, query=query))
                return reply.context or ""
            except ZepFailure as exc:
                raise MemoryUnavailableError(f"Zep preference memory unavailable: {exc.message}") from exc

    def forget_customer(self, customer_id: str) -> bool:
        """Delete everything Zep holds about a customer (user, threads, graph) and the local rows.

        Returns:
            Whether Zep knew the customer.

        Raises:
            MemoryUnavailableError: Zep is down; nothing was deleted.
        """
        with holding(self._lock_for(customer_id)):
            try:
                user = self._remote.user(customer_id, create=False)
                if user is not None:
                    self._breaker.call("user.delete", partial(self._client.user.delete, user))
            except ZepFailure as exc:
                raise MemoryUnavailableError(f"Zep preference memory unavailable: {exc.message}") from exc
            self._cache.forget_customer(customer_id)
            return user is not None

    def close(self) -> None:
        """Close the HTTP client and the local cache; a second close is harmless."""
        self._http.close()
        self._cache.close()

    def __enter__(self) -> ZepPreferenceMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ZepPreferenceMemory(base_url={self.base_url!r}, cache={self._cache.path!r})"

    # ------------------------------------------------------------------ reading and delivering
    def _current(self, customer_id: str) -> tuple[list[PreferenceEntry], MemoryUnavailableError | None]:
        """The customer's facts now; when Zep is down, the last known ones and the error to raise."""
        pending = [row.event for row in self._cache.pending(customer_id)]
        try:
            remote = self._remote.events(customer_id)
        except ZepFailure as exc:
            stale = fold(customer_id, self._cache.mirror(customer_id) + pending)
            queued = f"; {len(pending)} change(s) queued" if pending else ""
            error = MemoryUnavailableError(f"Zep preference memory unavailable: {exc.message}{queued}",
                                           fallback=summary_from_entries(stale), pending=len(pending))
            error.__cause__ = exc
            return stale, error
        return fold(customer_id, remote + pending), None

    def _find(self, customer_id: str, entry_id: int) -> PreferenceEntry | None:
        """One of the customer's facts by id (from the last known facts while Zep is down)."""
        entries, _ = self._current(customer_id)
        return next((e for e in entries if e.id == entry_id), None)

    def _flush(self, customer_id: str) -> int:
        """Deliver the customer's queued events in order; stop at the first outage.

        Returns:
            How many were delivered.

        Raises:
            MemoryUnavailableError: An event could not be delivered (it stays queued), or Zep
                rejected one (it is kept in the outbox, marked dead, and skipped from now on).
        """
        delivered, rejected = 0, []
        rows = self._cache.pending(customer_id)
        for i, row in enumerate(rows):
            try:
                self._remote.deliver(row)
            except ZepFailure as exc:
                if exc.retryable:
                    self._cache.failed(row.id, exc.message)
                    left = len(rows) - i
                    raise MemoryUnavailableError(
                        f"Zep preference memory unavailable: {exc.message}; {left} change(s) queued for retry",
                        pending=left) from exc
                self._cache.failed(row.id, exc.message, give_up=True)
                log.warning("Zep rejected preference event %s of %r: %s", row.event.event_id, customer_id,
                            exc.message)
                rejected.append(exc.message)
                continue
            self._cache.delivered(row.id)
            self._cache.set_mirror(customer_id, self._cache.mirror(customer_id) + [row.event])
            delivered += 1
        if rejected:
            raise MemoryUnavailableError(f"Zep rejected {len(rejected)} preference change(s): {rejected[0]}")
        return delivered

    def _lock_for(self, customer_id: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(customer_id, threading.RLock())
