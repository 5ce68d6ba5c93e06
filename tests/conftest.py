"""Shared fixtures: one model load per test session; workspaces copied to tmp when tests write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.build import Workspace, load_workspace
from core.retrieval import CachedEmbedder, shared_model

ROOT = Path(__file__).resolve().parent.parent


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
    shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(".git", ".state", "tests", "examples", "__pycache__",
                                                            "core", "docs", ".ci"))
    return dst
