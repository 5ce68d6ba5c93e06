"""The STAR tests' fixture: one small task in STAR's layout, written for these tests (not dataset data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.build import Workspace, load_workspace
from core.importers import import_star_task, write_import
from core.retrieval.embedding import CachedEmbedder
from tests.star.support import TASK


@pytest.fixture(scope="session")
def library_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding the fixture task, imported once for the session (read-only for tests)."""
    root = tmp_path_factory.mktemp("library")
    write_import(import_star_task(TASK, root), root)
    return root


@pytest.fixture(scope="session")
def library_ws(library_root: Path, embedder: CachedEmbedder) -> Workspace:
    return load_workspace(library_root, embedder)
