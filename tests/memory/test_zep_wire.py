"""The Zep adapter against a local HTTP server that records what the real, pinned SDK sends.

What this proves: ``ZepPreferenceMemory`` drives the pinned ``zep-cloud`` 4.x SDK into the
v4 API calls we mean (method, path, ``Authorization: Api-Key …`` header, JSON body and
query of each call: ``user.lookup``, ``user.create``, ``thread.create``,
``thread.add_messages``, ``graph.episode.add`` with ``type="json"``, ``graph.episode.list``,
``thread.get_context``, ``graph.get_context``), that it reads the SDK's parsed 4.x-shaped
replies correctly, and that it handles 404 on lookup, 409 on create, 429 and 500 replies and
timeouts as designed (queue, retry later with the same idempotency keys, circuit breaker).
Nothing is patched: the SDK's own HTTP stack talks to a real socket.

What it does not prove: that Zep Cloud behaves like the fake beyond the documented wire
format, nor anything about Zep's own fact extraction (the fake's context block is canned).
``test_zep_live.py`` runs against the real service when ``ZEP_API_KEY`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.shared.errors import UserInputError
from core.state.memory import MemoryUnavailableError, PreferenceSummary, PreferenceUpdate, ZepPreferenceMemory
from core.state.memory.events import EVENT_KIND
from tests.memory.zep_fake import FakeZep

KEY = "test-key"
UPDATE = PreferenceUpdate(preferred_brands=["Logitech"], disliked_brands=["Razer"], communication_style="short")


class Clock:
    """A monotonic clock the test moves by hand (for the circuit breaker)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def open_zep(fake: FakeZep, tmp_path: Path, **kwargs: object) -> ZepPreferenceMemory:
    options: dict[str, object] = {"cache_path": tmp_path / "zep_cache.sqlite", "cooldown_s": 0.0, **kwargs}
    return ZepPreferenceMemory(KEY, base_url=fake.url, **options)  # type: ignore[arg-type]


# -- the calls, as sent -----------------------------------------------------------------


def test_first_write_sends_the_v4_calls(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", UPDATE, session_id="s1", turn=2, message="I like Logitech, no Razer please")
    assert fake_zep.routes() == [
        "POST /users/lookup",             # 404: a new customer
        "POST /users",
        "POST /graphs/{id}/episodes",     # the structured update
        "POST /threads",                  # the session's thread, created on first use
        "POST /threads/{id}/messages",    # the customer's words, for Zep's own extraction
    ]
    assert all(r.headers["authorization"] == f"Api-Key {KEY}" for r in fake_zep.requests)
    assert all(r.headers["idempotency-key"] for r in fake_zep.requests)
    lookup, create, episode, thread, messages = fake_zep.requests
    assert lookup.body == {"user_id": "c1"}
    assert create.body == {"user_id": "c1", "metadata": {"created_by": "sop-agent-playground"}}
    user = next(iter(fake_zep.users))
    assert episode.path == f"/graphs/{user}/episodes"
    assert episode.body["type"] == "json"
    assert episode.body["source_description"]
    data = json.loads(episode.body["data"])
    assert (data["kind"], data["op"], data["customer_id"]) == (EVENT_KIND, "remember", "c1")
    assert (data["session_id"], data["turn"], data["message"]) == ("s1", 2, "I like Logitech, no Razer please")
    assert [(f["field"], f["value"]) for f in data["facts"]] == [
        ("communication_style", "short"), ("preferred_brands", "Logitech"), ("disliked_brands", "Razer")]
    assert episode.body["metadata"] == {"kind": EVENT_KIND, "op": "remember", "event_id": data["event_id"],
                                        "customer_id": "c1", "session_id": "s1", "turn": 2}
    assert episode.headers["idempotency-key"] == f"{data['event_id']}-episode"
    assert thread.body == {"user_uuid": user}
    assert messages.path == f"/threads/{next(iter(fake_zep.threads))}/messages"
    assert messages.body == {"messages": [{"role": "user", "name": "c1", "content": "I like Logitech, no Razer please",
                                           "metadata": {"session_id": "s1", "turn": 2,
                                                        "event_id": data["event_id"]}}]}


def test_summary_lists_our_json_episodes(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", UPDATE, session_id="s1", turn=1, message="m")
        fake_zep.clear_log()
        summary = mem.summary("c1")
    assert summary == PreferenceSummary(preferred_brands=["Logitech"], disliked_brands=["Razer"],
                                        communication_style="short")
    (listing,) = fake_zep.requests  # the user's uuid is cached: one request per read
    user = next(iter(fake_zep.users))
    assert (listing.method, listing.path) == ("POST", f"/graphs/{user}/episodes/list")
    assert listing.query == {"page_size": "100", "order_by": "created_at", "order": "asc"}
    assert listing.body == {"filters": {"metadata_filters": {"type": "and", "filters": [
        {"property_name": "kind", "operator": "eq", "value": EVENT_KIND}]}}}


def test_a_new_instance_reads_the_same_facts_from_zep(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path / "a") as first:
        first.write("c1", UPDATE, session_id="s1", turn=1, message="m")
        entries = first.entries("c1")
    with open_zep(fake_zep, tmp_path / "b") as second:  # another machine: empty local cache
        assert second.entries("c1") == entries


def test_episodes_are_read_across_pages(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        for i in range(105):
            mem.write("c1", PreferenceUpdate(preferred_features=[f"feature {i}"]))
        fake_zep.clear_log()
        assert len(mem.summary("c1").preferred_features) == 105
    assert [r.query.get("cursor") for r in fake_zep.requests] == [None, "100"]


def test_unknown_customer_is_looked_up_but_never_created_by_a_read(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        assert mem.summary("nobody").is_empty()
        assert mem.context("nobody") == ""
    assert fake_zep.routes() == ["POST /users/lookup", "POST /users/lookup"]
    assert not fake_zep.users


def test_409_on_create_means_another_instance_won_the_race(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path / "a") as first:
        first.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
    fake_zep.clear_log()
    fake_zep.fail("POST", "/users/lookup", 404)  # our lookup races the other instance's create
    with open_zep(fake_zep, tmp_path / "b") as second:
        second.write("c1", PreferenceUpdate(disliked_brands=["Razer"]))
        assert second.summary("c1").preferred_brands == ["Logitech"]
    assert fake_zep.routes()[:4] == ["POST /users/lookup", "POST /users", "POST /users/lookup",
                                     "POST /graphs/{id}/episodes"]
    assert len(fake_zep.users) == 1


def test_context_comes_from_the_thread_or_the_graph(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", UPDATE, session_id="s1", turn=1, message="keep it short")
        fake_zep.clear_log()
        assert "keep it short" in mem.context("c1", "s1")
        assert "episode" in mem.context("c1", query="brands")
    user, thread = next(iter(fake_zep.users)), next(iter(fake_zep.threads))
    (by_thread, by_graph) = fake_zep.requests
    assert (by_thread.method, by_thread.path, by_thread.body) == ("GET", f"/threads/{thread}/context", None)
    assert (by_graph.method, by_graph.path, by_graph.body) == ("POST", f"/graphs/{user}/context", {"query": "brands"})


def test_a_message_less_update_opens_no_thread(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
        mem.write("c1", PreferenceUpdate())  # empty: no request at all
        entry = mem.entries("c1")[0]
        mem.set_entry("c1", entry.id, "Keychron")
        mem.forget("c1", entry.id)
    episodes = [json.loads(r.body["data"]) for r in fake_zep.calls("POST", r"/graphs/.+/episodes")]
    assert [e["op"] for e in episodes] == ["remember", "edit", "forget"]
    assert episodes[2]["facts"] == [{"id": entry.id, "field": "preferred_brands", "value": "Keychron"}]
    assert not fake_zep.calls("POST", "/threads")


# -- outages ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_failed_write_is_queued_and_delivered_later(fake_zep: FakeZep, tmp_path: Path, status: int) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        fake_zep.fail("POST", r"/graphs/.+/episodes", status)
        with pytest.raises(MemoryUnavailableError, match=f"{status}.*1 change\\(s\\) queued") as caught:
            mem.write("c1", UPDATE, session_id="s1", turn=3, message="m")
        assert caught.value.pending == 1
        assert mem.pending("c1") == 1
        assert mem.summary("c1").preferred_brands == ["Logitech"]  # the queued update is already used
        assert mem.retry_pending("c1") == 1
        assert mem.pending("c1") == 0
        assert mem.retry_pending("c1") == 0
    sent = fake_zep.calls("POST", r"/graphs/.+/episodes")
    assert len(sent) == 2 and sent[0].headers["idempotency-key"] == sent[1].headers["idempotency-key"]
    assert len(fake_zep.episodes) == 1
    assert len(fake_zep.calls("POST", r"/threads/.+/messages")) == 1


def test_queued_updates_are_delivered_in_order_by_the_next_write(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        fake_zep.outage(500)
        with pytest.raises(MemoryUnavailableError):
            mem.write("c1", PreferenceUpdate(budget_max=30000))
        with pytest.raises(MemoryUnavailableError, match="2 change"):
            mem.write("c1", PreferenceUpdate(budget_max=40000))
        fake_zep.recover()
        mem.write("c1", PreferenceUpdate(communication_style="short"))
        assert mem.pending("c1") == 0
    with open_zep(fake_zep, tmp_path / "other") as fresh:
        assert fresh.summary("c1") == PreferenceSummary(budget_max=40000, communication_style="short")


def test_a_half_delivered_update_resumes_where_it_stopped(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        fake_zep.fail("POST", r"/threads/.+/messages", 500)
        with pytest.raises(MemoryUnavailableError):
            mem.write("c1", UPDATE, session_id="s1", turn=1, message="m")
        assert mem.retry_pending("c1") == 1
    assert len(fake_zep.episodes) == 1  # the episode was not sent twice
    assert len(fake_zep.calls("POST", r"/threads/.+/messages")) == 2


def test_a_timeout_is_an_outage(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path, timeout_s=0.2) as mem:
        mem.write("c1", UPDATE)
        fake_zep.fail("POST", r"/graphs/.+/episodes/list", times=None, delay_s=2.0)
        with pytest.raises(MemoryUnavailableError, match="did not answer graph.episode.list within 0.2s") as caught:
            mem.summary("c1")
        assert caught.value.fallback == mem_summary(UPDATE)  # the last summary read


def mem_summary(update: PreferenceUpdate) -> PreferenceSummary:
    return PreferenceSummary(**update.model_dump())


def test_reads_during_an_outage_fall_back_to_the_last_known_summary(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
        assert mem.summary("c1").preferred_brands == ["Logitech"]
        fake_zep.outage(500)
        with pytest.raises(MemoryUnavailableError) as caught:
            mem.write("c1", PreferenceUpdate(communication_style="short"))
        with pytest.raises(MemoryUnavailableError, match="500") as caught:
            mem.summary("c1")
        assert caught.value.fallback == PreferenceSummary(preferred_brands=["Logitech"], communication_style="short")
        assert caught.value.pending == 1


def test_the_breaker_skips_zep_after_a_failure(fake_zep: FakeZep, tmp_path: Path) -> None:
    clock = Clock()
    with open_zep(fake_zep, tmp_path, cooldown_s=30.0, clock=clock) as mem:
        mem.write("c1", UPDATE)
        fake_zep.outage(500)
        fake_zep.clear_log()
        with pytest.raises(MemoryUnavailableError):
            mem.summary("c1")
        with pytest.raises(MemoryUnavailableError, match="skipped for another 30s"):
            mem.write("c1", PreferenceUpdate(preferred_features=["quiet"]))
        assert len(fake_zep.requests) == 1  # the second call never reached Zep
        fake_zep.recover()
        clock.now += 31
        assert mem.retry_pending("c1") == 1
        assert mem.summary("c1").preferred_features == ["quiet"]


def test_429_retry_after_extends_the_pause(fake_zep: FakeZep, tmp_path: Path) -> None:
    clock = Clock()
    with open_zep(fake_zep, tmp_path, cooldown_s=5.0, clock=clock) as mem:
        fake_zep.fail("POST", "/users/lookup", 429, headers={"Retry-After": "120"})
        with pytest.raises(MemoryUnavailableError, match="rate limit"):
            mem.summary("c1")
        clock.now += 60
        with pytest.raises(MemoryUnavailableError, match="skipped"):
            mem.summary("c1")
        clock.now += 61
        assert mem.summary("c1").is_empty()
    assert len(fake_zep.calls("POST", "/users/lookup")) == 2


def test_a_user_deleted_in_zep_is_created_again(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
        fake_zep.users.clear()
        fake_zep.episodes.clear()
        with pytest.raises(MemoryUnavailableError, match="will recreate"):  # 404 on the cached uuid
            mem.write("c1", PreferenceUpdate(disliked_brands=["Razer"]))
        assert mem.retry_pending("c1") == 1
        assert mem.summary("c1") == PreferenceSummary(disliked_brands=["Razer"])
        fake_zep.users.clear()
        fake_zep.episodes.clear()
        assert mem.summary("c1").is_empty()  # 404 on the cached uuid: looked up again, none


def test_a_rejected_update_is_reported_and_not_retried_forever(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        fake_zep.fail("POST", r"/graphs/.+/episodes", 400)
        with pytest.raises(MemoryUnavailableError, match="rejected 1 preference change.*400"):
            mem.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
        assert mem.pending("c1") == 0
        mem.write("c1", PreferenceUpdate(disliked_brands=["Razer"]))
        assert mem.summary("c1") == PreferenceSummary(disliked_brands=["Razer"])


def test_a_wrong_key_is_named(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        fake_zep.fail("POST", "/users/lookup", 401)
        with pytest.raises(MemoryUnavailableError, match="refused the API key.*ZEP_API_KEY"):
            mem.summary("c1")


def test_an_unreachable_zep_is_an_outage(tmp_path: Path) -> None:
    with ZepPreferenceMemory(KEY, base_url="http://127.0.0.1:9/api/v4", cache_path=tmp_path / "c.sqlite") as mem:
        with pytest.raises(MemoryUnavailableError, match="cannot reach Zep at http://127.0.0.1:9/api/v4"):
            mem.summary("c1")
        with pytest.raises(MemoryUnavailableError):
            mem.write("c1", UPDATE)
        assert mem.pending("c1") == 1


def test_forget_customer_deletes_the_zep_user(fake_zep: FakeZep, tmp_path: Path) -> None:
    with open_zep(fake_zep, tmp_path) as mem:
        mem.write("c1", UPDATE, session_id="s1", turn=1, message="m")
        user = next(iter(fake_zep.users))
        assert mem.forget_customer("c1") is True
        assert fake_zep.calls("DELETE")[0].path == f"/users/{user}"
        assert not fake_zep.users and not fake_zep.episodes and not fake_zep.threads
        assert mem.summary("c1").is_empty()
        assert mem.forget_customer("c1") is False


def test_needs_a_key() -> None:
    with pytest.raises(UserInputError, match="ZEP_API_KEY"):
        ZepPreferenceMemory("  ")
