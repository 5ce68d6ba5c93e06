"""Shared fixtures: one model load per test session; workspaces copied to tmp when tests write."""

from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def own_trust_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Workspace trust is kept in a file of the test session's own, never the developer's (set before any
    module's workspace is written, and inherited by the servers and browsers tests start): nothing is trusted
    but the bundled workspaces, their unchanged copies and what a test trusts itself."""
    path = tmp_path_factory.mktemp("trust") / "trusted.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOP_TRUST_FILE", str(path))
        yield path


def trusted(root: Path) -> Path:
    """Trust the workspace at ``root`` as it is now (a test's own workspace that runs Python tools or MCP
    servers), and return ``root``."""
    from core.workspace.store_yaml import load_store_config
    from core.workspace.trust import trust

    trust(root, load_store_config(root / "store.yaml")[0])
    return root


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
