"""A Playground on a writable copy of the demo workspace, plus a snapshot helper for "nothing changed on disk"."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.playground import Playground
from core.retrieval.embedding import CachedEmbedder


def snapshot(root: Path) -> dict[str, str]:
    """Hash of every workspace file (the .state folder excluded)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".state" not in p.relative_to(root).parts}


@pytest.fixture()
def pg(ws_copy: Path, embedder: CachedEmbedder) -> Iterator[Playground]:
    play = Playground(ws_copy, embedder=embedder)
    yield play
    play.close()
