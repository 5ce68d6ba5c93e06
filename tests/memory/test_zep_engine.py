"""The engine with preferences in Zep (the local fake server): store selection, two sessions of one
customer on two app instances, and a Zep outage that never breaks a turn."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.engine.build import Workspace, build_orchestrator
from core.engine.orchestrator import Orchestrator
from core.shared.errors import UserInputError
from core.state.memory import LocalPreferenceMemory, PreferenceMemory, ZepPreferenceMemory, open_preference_memory
from core.state.sessions import open_state_store
from tests.memory.zep_fake import FakeZep

ROOT = Path(__file__).resolve().parents[2]
CONVERSATION = ROOT / "tests" / "conversations" / "variant_preferences_across_sessions.yaml"


class Instances:
    """App instances over one workspace: each with its own folder (state store, Zep cache)."""

    def __init__(self, ws: Workspace, tmp: Path) -> None:
        self.ws, self.tmp = ws, tmp
        self.opened: list[Any] = []

    def orchestrator(self, name: str, memory: PreferenceMemory | None = None) -> Orchestrator:
        root = self.tmp / name
        root.mkdir()
        loaded = dataclasses.replace(self.ws, files=dataclasses.replace(self.ws.files, root=root))
        store = open_state_store(f"sqlite:///{root}/sessions.sqlite")
        orch = build_orchestrator(root, store=store, memory=memory, loaded=loaded)
        self.opened += [store, orch.memory]
        return orch

    def zep(self, fake: FakeZep, name: str, **options: Any) -> ZepPreferenceMemory:
        return ZepPreferenceMemory("test-key", base_url=fake.url, cache_path=self.tmp / f"{name}.sqlite",
                                   **{"cooldown_s": 0.0, **options})


@pytest.fixture
def apps(demo_ws: Workspace, tmp_path: Path) -> Iterator[Instances]:
    instances = Instances(demo_ws, tmp_path)
    yield instances
    for thing in instances.opened:
        thing.close()


# -- which store -----------------------------------------------------------------------


def test_build_picks_zep_when_a_key_is_set(apps: Instances, fake_zep: FakeZep,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEP_API_KEY", "test-key")
    monkeypatch.setenv("ZEP_BASE_URL", fake_zep.url)
    orch = apps.orchestrator("with-key")
    assert isinstance(orch.memory, ZepPreferenceMemory)
    assert orch.memory.label == f"Zep Cloud ({fake_zep.url})"
    assert (apps.tmp / "with-key" / ".state" / "zep_cache.sqlite").is_file()
    orch.handle_message("s1", "I like Logitech", customer_id="c1")
    assert fake_zep.episodes and orch.last_trace("s1")["memory"]["store"] == orch.memory.label  # type: ignore[index]
    monkeypatch.delenv("ZEP_API_KEY")
    plain = apps.orchestrator("without-key")
    assert isinstance(plain.memory, LocalPreferenceMemory)
    assert plain.memory.path == str(apps.tmp / "without-key" / ".state" / "preferences.sqlite")


def test_without_a_key_the_zep_sdk_is_never_loaded(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEP_")}
    code = ("import sys; from core.state.memory import open_preference_memory as o; m = o(sys.argv[1]); "
            "assert type(m).__name__ == 'LocalPreferenceMemory', m; assert 'zep_cloud' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_bad_base_url_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="ZEP_BASE_URL must be an http"):
        open_preference_memory(tmp_path, environ={"ZEP_API_KEY": "k", "ZEP_BASE_URL": "api.getzep.com"})
    memory = open_preference_memory(tmp_path, environ={"ZEP_API_KEY": "k"})
    try:
        assert memory.label == "Zep Cloud (https://api.getzep.com/api/v4)"  # constructed, nothing sent yet
    finally:
        memory.close()


# -- two sessions of one customer, on two app instances ----------------------------------


def test_preferences_follow_the_customer_to_another_instance(apps: Instances, fake_zep: FakeZep) -> None:
    spec = yaml.safe_load(CONVERSATION.read_text(encoding="utf-8"))
    first, second = spec["turns"][:2]
    customer = spec["customer_id"]
    one = apps.orchestrator("instance-1", apps.zep(fake_zep, "cache-1"))
    one.handle_message(first["session"], first["user"], customer_id=customer)
    two = apps.orchestrator("instance-2", apps.zep(fake_zep, "cache-2"))  # nothing shared but Zep
    reply = two.handle_message(second["session"], second["user"], customer_id=customer)
    for text in second["expect"]["reply_contains"]:
        assert text.lower() in reply.lower()
    for text in second["expect"]["reply_not_contains"]:
        assert text.lower() not in reply.lower()
    assert reply.startswith("My pick: Logitech")  # short: one item, the preferred brand first
    memory = two.last_trace(second["session"])["memory"]  # type: ignore[index]
    assert memory["summary"]["disliked_brands"] == ["Razer"] and "error" not in memory
    stored = " ".join(str(e["content"]) for e in fake_zep.episodes)
    assert "Logitech" in stored and "goal" not in stored  # preferences only, never the goal stack


# -- an outage never breaks a turn --------------------------------------------------------


def test_zep_500s_never_break_a_turn_and_the_update_is_retried(apps: Instances, fake_zep: FakeZep) -> None:
    memory = apps.zep(fake_zep, "cache")
    orch = apps.orchestrator("app", memory)
    fake_zep.outage(500)
    reply = orch.handle_message("s1", "I like Logitech, no Razer please, keep it short", customer_id="c1")
    assert reply
    noted = orch.last_trace("s1")["memory"]  # type: ignore[index]
    assert "500" in noted["error"] and noted["store"] == memory.label
    assert memory.pending("c1") == 1  # the write after the commit failed too: queued

    reply = orch.handle_message("s2", "recommend a gaming mouse under 2000", customer_id="c1")
    assert reply.startswith("My pick: Logitech") and "Razer" not in reply  # the queued update still counts
    noted = orch.last_trace("s2")["memory"]  # type: ignore[index]
    assert "1 change(s) queued" in noted["error"] and noted["pending_updates"] == 1
    assert noted["summary_from"] == "last known"
    assert not fake_zep.episodes

    fake_zep.recover()
    orch.handle_message("s2", "thanks", customer_id="c1")
    noted = orch.last_trace("s2")["memory"]  # type: ignore[index]
    assert noted["retried_updates"] == 1 and "error" not in noted
    assert memory.pending("c1") == 0 and len(fake_zep.episodes) == 1
    assert orch.preferences("c1")["preferred_brands"] == ["Logitech"]


def test_zep_timeouts_never_break_a_turn(apps: Instances, fake_zep: FakeZep) -> None:
    memory = apps.zep(fake_zep, "cache", timeout_s=0.2, cooldown_s=30.0)
    orch = apps.orchestrator("app", memory)
    fake_zep.outage(delay_s=5.0)
    reply = orch.handle_message("s1", "I like Logitech, recommend a gaming mouse under 2000", customer_id="c1")
    assert "Logitech" in reply
    noted = orch.last_trace("s1")["memory"]  # type: ignore[index]
    assert "did not answer" in noted["error"]
    assert orch.last_trace("s1")["latency_ms"] < 3000  # type: ignore[index]  # one timeout, then the breaker
    assert memory.pending("c1") == 1
