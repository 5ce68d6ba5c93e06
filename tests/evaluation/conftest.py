"""Workspaces for the evaluator's tests, loaded once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.build import Workspace, load_workspace
from core.retrieval.embedding import CachedEmbedder

ROOT = Path(__file__).resolve().parents[2]
SELLER = ROOT / "examples" / "seller_support"


@pytest.fixture(scope="session")
def seller_ws(embedder: CachedEmbedder) -> Workspace:
    return load_workspace(SELLER, embedder)
