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
last summary read plus the queued changes, and a short circuit breaker (``cooldown_s``)
skips Zep for a while after a failure, so a down Zep costs one timeout, not one per call.
The SDK's own retries are off (``max_retries=0``): its back-off sleeps would stall a chat turn.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
from zep_cloud import AddMessage, Episode, EpisodeListFilters, MetadataFilter, MetadataFilterGroup, Zep
from zep_cloud.core.api_error import ApiError
from zep_cloud.core.parse_error import ParsingError
from zep_cloud.environment import ZepEnvironment

from core.shared.concurrency import holding, waiting
from core.shared.errors import UserInputError
from core.state.memory.base import (
    MemoryUnavailableError,
    PreferenceEntry,
    PreferenceSummary,
    PreferenceUpdate,
    normalize_fact,
    summary_from_entries,
)
from core.state.memory.events import (
    EVENT_KIND,
    FactIds,
    PreferenceEvent,
    edit_event,
    fold,
    forget_event,
    parse_event,
    remember_event,
)
from core.state.memory.zep_cache import OutboxRow, ZepLocalCache

DEFAULT_BASE_URL = ZepEnvironment.DEFAULT.value
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_COOLDOWN_S = 30.0
MAX_COOLDOWN_S = 300.0
PAGE_SIZE = 100
SOURCE_DESCRIPTION = "SOP Agent Playground: customer preference change"
CONTEXT_QUERY = "the customer's shopping preferences and communication style"

log = logging.getLogger(__name__)
T = TypeVar("T")

_OUR_EPISODES = EpisodeListFilters(metadata_filters=MetadataFilterGroup(
    type="and", filters=[MetadataFilter(property_name="kind", operator="eq", value=EVENT_KIND)]))


class ZepFailure(Exception):
    """One failed Zep call, classified: ``retryable`` unless Zep rejected the request itself."""

    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None,
                 retry_after: float = 0.0) -> None:
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


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
        self._timeout_s = timeout_s
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._http = httpx.Client(timeout=timeout_s, follow_redirects=True)
        self._client = Zep(api_key=api_key.strip(), base_url=self.base_url, httpx_client=self._http,
                           timeout=timeout_s, max_retries=0)
        self._cache = ZepLocalCache(cache_path)
        self._ids = FactIds()
        self._guard = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}
        self._down_until = 0.0
        self._last_error = ""

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
                    answer = self._call("thread.get_context", partial(self._client.thread.get_context, thread))
                    return answer.context or ""
                user = self._user(customer_id, create=False)
                if user is None:
                    return ""
                reply = self._call("graph.get_context", partial(self._client.graph.get_context, user, query=query))
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
                user = self._user(customer_id, create=False)
                if user is not None:
                    self._call("user.delete", partial(self._client.user.delete, user))
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

    # ------------------------------------------------------------------ reading
    def _current(self, customer_id: str) -> tuple[list[PreferenceEntry], MemoryUnavailableError | None]:
        """The customer's facts now; when Zep is down, the last known ones and the error to raise."""
        pending = [row.event for row in self._cache.pending(customer_id)]
        try:
            remote = self._remote_events(customer_id)
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

    def _remote_events(self, customer_id: str) -> list[PreferenceEvent]:
        """Every preference event of the customer stored in Zep, oldest first ([] for a new customer)."""
        for _ in range(2):  # a cached user id may be stale (user deleted in Zep): look it up once more
            user = self._user(customer_id, create=False)
            if user is None:
                return []
            try:
                episodes = self._call("graph.episode.list", partial(self._episodes, user))
            except ZepFailure as exc:
                if exc.status != 404:
                    raise
                self._cache.set_user_uuid(customer_id, None)
                continue
            events = [e for e in (parse_event(ep.content or "") for ep in episodes) if e is not None]
            self._cache.set_mirror(customer_id, events)
            return events
        return []

    def _episodes(self, user: str) -> list[Episode]:
        """All of the user's preference episodes, oldest first (the pager fetches every page)."""
        return list(self._client.graph.episode.list(user, page_size=PAGE_SIZE, order_by="created_at", order="asc",
                                                     filters=_OUR_EPISODES))

    def _user(self, customer_id: str, *, create: bool) -> str | None:
        """Zep's UUID for a customer; with ``create``, make the user when Zep has none."""
        cached = self._cache.user_uuid(customer_id)
        if cached:
            return cached
        try:
            user = self._call("user.lookup", lambda: self._client.user.lookup(user_id=customer_id))
        except ZepFailure as exc:
            if exc.status != 404:
                raise
            if not create:
                return None
            try:
                user = self._call("user.create", lambda: self._client.user.create(
                    user_id=customer_id, metadata={"created_by": "sop-agent-playground"}))
            except ZepFailure as conflict:
                if conflict.status != 409:  # 409: another instance created it since our lookup
                    raise
                user = self._call("user.lookup", lambda: self._client.user.lookup(user_id=customer_id))
        if not user.uuid_:
            raise ZepFailure("Zep answered without the user's uuid")
        self._cache.set_user_uuid(customer_id, user.uuid_)
        return user.uuid_

    # ------------------------------------------------------------------ delivering
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
                self._deliver(row)
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

    def _deliver(self, row: OutboxRow) -> None:
        """Send one queued event: the JSON episode, then (for a turn's update) the customer's message."""
        event = row.event
        user = self._user(event.customer_id, create=True)
        assert user is not None  # create=True never answers None
        if row.stage < 1:
            try:
                self._call("graph.episode.add", lambda: self._client.graph.episode.add(
                    user, data=event.model_dump_json(), type="json", source_description=SOURCE_DESCRIPTION,
                    metadata=_episode_metadata(event), idempotency_key=f"{event.event_id}-episode"))
            except ZepFailure as exc:
                if exc.status == 404:  # the user was deleted in Zep: recreate it on the next try
                    self._cache.set_user_uuid(event.customer_id, None)
                    raise ZepFailure(f"Zep no longer has customer {event.customer_id!r}; will recreate",
                                     status=404) from exc
                raise
            self._cache.advance(row.id, 1)
        if event.op == "remember" and event.message and event.session_id:
            thread = self._thread(event.customer_id, event.session_id, user)
            message = AddMessage(role="user", name=event.customer_id, content=event.message,
                                 metadata={"session_id": event.session_id, "turn": event.turn,
                                           "event_id": event.event_id})
            try:
                self._call("thread.add_messages", lambda: self._client.thread.add_messages(
                    thread, messages=[message], idempotency_key=f"{event.event_id}-message"))
            except ZepFailure as exc:
                if exc.status == 404:  # the thread was deleted in Zep: start a new one on the next try
                    self._cache.drop_thread(event.customer_id, event.session_id)
                raise

    def _thread(self, customer_id: str, session_id: str, user: str) -> str:
        """The Zep thread of a customer's session, created on first use."""
        cached = self._cache.thread_uuid(customer_id, session_id)
        if cached:
            return cached
        key = hashlib.sha256(f"thread:{user}:{session_id}".encode()).hexdigest()
        thread = self._call("thread.create", lambda: self._client.thread.create(user_uuid=user,
                                                                                 idempotency_key=key))
        if not thread.uuid_:
            raise ZepFailure("Zep answered without the thread's uuid")
        self._cache.set_thread_uuid(customer_id, session_id, thread.uuid_)
        return thread.uuid_

    # ------------------------------------------------------------------ calling Zep
    def _call(self, what: str, request: Callable[[], T]) -> T:
        """Run one SDK call behind the circuit breaker; every failure becomes a :class:`ZepFailure`."""
        now = self._clock()
        if now < self._down_until:
            raise ZepFailure(f"{self._last_error} (Zep skipped for another {self._down_until - now:.0f}s)")
        try:
            with waiting():  # other turns compute while this one waits on Zep
                result = request()
        except Exception as exc:  # noqa: BLE001 - classified below; nothing escapes unclassified
            failure = classify(exc, what, self.base_url, self._timeout_s)
            if failure.retryable and failure.status not in (404, 409):
                self._last_error = failure.message
                self._down_until = now + min(MAX_COOLDOWN_S, max(self._cooldown_s, failure.retry_after))
            raise failure from exc
        self._down_until = 0.0
        return result

    def _lock_for(self, customer_id: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(customer_id, threading.RLock())


def classify(exc: Exception, what: str, base_url: str, timeout_s: float) -> ZepFailure:
    """Turn an SDK or transport exception into a :class:`ZepFailure` with a clear message.

    Retryable: timeouts, connection errors, 408, 409, 429 (with its Retry-After), 5xx, 401/403
    (a key can be fixed; nothing is lost meanwhile) and replies the SDK cannot parse. Any other
    4xx means Zep rejected the request itself, so sending it again cannot help.
    """
    if isinstance(exc, httpx.TimeoutException):
        return ZepFailure(f"Zep did not answer {what} within {timeout_s:g}s")
    if isinstance(exc, httpx.TransportError):
        return ZepFailure(f"cannot reach Zep at {base_url} ({what}): {exc}")
    if isinstance(exc, ParsingError):
        return ZepFailure(f"unexpected reply from Zep to {what} (HTTP {exc.status_code})")
    if not isinstance(exc, ApiError):
        return ZepFailure(f"{what} failed: {type(exc).__name__}: {exc}")
    status = exc.status_code or 0
    detail = _error_detail(exc.body)
    if status in (401, 403):
        return ZepFailure(f"Zep refused the API key ({status}) on {what}: check ZEP_API_KEY", status=status)
    if status == 429:
        return ZepFailure(f"Zep rate limit (429) on {what}{detail}", status=status,
                          retry_after=_retry_after(exc.headers or {}))
    retryable = status >= 500 or status in (404, 408, 409)
    return ZepFailure(f"Zep answered {status} to {what}{detail}", retryable=retryable, status=status)


def _error_detail(body: Any) -> str:
    """``": <message>"`` from a v4 error body ({"error": {"message": …}}), else ""."""
    error = getattr(body, "error", None)
    if error is None and isinstance(body, dict):
        error = body.get("error")
    message = getattr(error, "message", None) if not isinstance(error, dict) else error.get("message")
    return f": {message}" if message else ""


def _retry_after(headers: dict[str, str]) -> float:
    """Seconds from a Retry-After header (numeric form only), 0 when absent or unreadable."""
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0


def _episode_metadata(event: PreferenceEvent) -> dict[str, str | int]:
    """Episode metadata (Zep allows 10 scalar keys): what to filter on and what a person needs."""
    return {"kind": EVENT_KIND, "op": event.op, "event_id": event.event_id, "customer_id": event.customer_id,
            "session_id": event.session_id, "turn": event.turn}
