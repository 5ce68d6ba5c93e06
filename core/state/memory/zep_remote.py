"""A customer's Zep user, preference episodes and session threads (:mod:`core.state.memory.zep`): looked up,
created, listed and sent through the breaker, their ids kept in the local cache."""

from __future__ import annotations

import hashlib
from functools import partial

from zep_cloud import AddMessage, Episode, EpisodeListFilters, MetadataFilter, MetadataFilterGroup, Zep

from core.state.memory.events import EVENT_KIND, PreferenceEvent, parse_event
from core.state.memory.zep_cache import OutboxRow, ZepLocalCache
from core.state.memory.zep_calls import ZepBreaker, ZepFailure

PAGE_SIZE = 100
SOURCE_DESCRIPTION = "SOP Agent Playground: customer preference change"

_OUR_EPISODES = EpisodeListFilters(metadata_filters=MetadataFilterGroup(
    type="and", filters=[MetadataFilter(property_name="kind", operator="eq", value=EVENT_KIND)]))


class ZepRemote:
    """What one memory asks of Zep for a customer; every call goes through the memory's breaker."""

    def __init__(self, client: Zep, cache: ZepLocalCache, breaker: ZepBreaker) -> None:
        self._client = client
        self._cache = cache
        self._call = breaker.call

    def events(self, customer_id: str) -> list[PreferenceEvent]:
        """Every preference event of the customer stored in Zep, oldest first ([] for a new customer)."""
        for _ in range(2):  # a cached user id may be stale (user deleted in Zep): look it up once more
            user = self.user(customer_id, create=False)
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

    def user(self, customer_id: str, *, create: bool) -> str | None:
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

    def deliver(self, row: OutboxRow) -> None:
        """Send one queued event: the JSON episode, then (for a turn's update) the customer's message."""
        event = row.event
        user = self.user(event.customer_id, create=True)
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


def _episode_metadata(event: PreferenceEvent) -> dict[str, str | int]:
    """Episode metadata (Zep allows 10 scalar keys): what to filter on and what a person needs."""
    return {"kind": EVENT_KIND, "op": event.op, "event_id": event.event_id, "customer_id": event.customer_id,
            "session_id": event.session_id, "turn": event.turn}
