"""Shared fixtures: one model load per test session; workspaces copied to tmp when tests write."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.build import Workspace, load_workspace
from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder, shared_model

ROOT = Path(__file__).resolve().parent.parent


PAID_SERVICES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SOP_LLM_MODEL", "SOP_LLM_TIMEOUT_S", "SOP_BRAIN",
                 "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "ZEP_API_KEY", "ZEP_BASE_URL", "SOP_STATE_URL",
                 "SOP_SHEETS_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "SOP_SHEETS_BASE_URL",
                 "SOP_SHEETS_TIMEOUT_S")


@pytest.fixture(autouse=True)
def no_paid_services(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Whatever the developer's shell holds, tests talk to no real model or memory service
    (tests marked ``live`` opt in)."""
    if request.node.get_closest_marker("live"):
        return
    for name in PAID_SERVICES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def embedder() -> CachedEmbedder:
    return CachedEmbedder(shared_model(), None)


@pytest.fixture(scope="session")
def demo_ws(embedder: CachedEmbedder) -> Workspace:
    return load_workspace(ROOT, embedder)


@pytest.fixture()
def ws_copy(tmp_path: Path) -> Path:
    """A writable copy of the demo workspace."""
    dst = tmp_path / "ws"
    dst.mkdir()
    copy_workspace(ROOT, dst)
    return dst
