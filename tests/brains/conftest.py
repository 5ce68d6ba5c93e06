"""Fixtures for the LLM brain: a fake OpenAI-compatible server on 127.0.0.1 and orchestrators pointed at it.

No test here reaches a real model: the OPENAI_* variables are removed for every test, and every
orchestrator gets the fake server's URL passed in as its settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.retrieval.embedding import CachedEmbedder
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.understanding import LLMSettings
from tests.brains.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
SELLER = ROOT / "examples" / "seller_support"


@pytest.fixture(scope="session")
def seller(embedder: CachedEmbedder) -> Workspace:
    return load_workspace(SELLER, embedder)


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


OrchFactory = Callable[..., Orchestrator]


@pytest.fixture()
def make_orch(tmp_path: Path) -> Iterator[OrchFactory]:
    """Build orchestrators on temporary stores: ``make_orch(ws, fake, brain="hybrid", timeout_s=5)``."""
    closers: list[Callable[[], None]] = []

    def make(ws: Workspace, fake: FakeOpenAI | None, brain: str = "hybrid", *, timeout_s: float = 5.0,
             max_retries: int = 1, base_url: str | None = None) -> Orchestrator:
        n = len(closers)
        store = open_state_store(f"sqlite:///{tmp_path}/sessions{n}.sqlite")
        memory = LocalPreferenceMemory(tmp_path / f"prefs{n}.sqlite")
        closers.extend([store.close, memory.close])
        url = base_url or (fake.base_url if fake is not None else None)
        llm = LLMSettings(model="fake-model", base_url=url, timeout_s=timeout_s, max_retries=max_retries)
        orch = build_orchestrator(ws.files.root, brain=brain, store=store, memory=memory, loaded=ws, llm=llm)
        closers.append(orch.close)
        return orch

    yield make
    for close in closers:
        close()
