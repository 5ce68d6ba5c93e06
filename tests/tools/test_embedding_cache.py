"""The on-disk embedding cache: shared by several processes (replay workers, playground processes),
and never a reason for a turn to fail."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.retrieval.embedding import DIM, CachedEmbedder


class Counting:
    """An embedder that counts the texts it had to embed (a deterministic vector per text)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return np.array([np.full(DIM, len(t), dtype=np.float32) for t in texts], dtype=np.float32).reshape(-1, DIM)


def test_a_second_cache_on_the_same_file_embeds_nothing_again(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    first, second = Counting(), Counting()
    a = CachedEmbedder(first, path)
    b = CachedEmbedder(second, path)  # opened before a wrote: another process, say
    vectors = a.embed(["where is my order", "reset my password"])
    again = b.embed(["reset my password", "where is my order", "a new sentence"])
    assert first.seen == ["where is my order", "reset my password"]
    assert second.seen == ["a new sentence"]
    assert np.array_equal(again[0], vectors[1]) and np.array_equal(again[1], vectors[0])
    a.close()
    b.close()


def test_a_locked_cache_file_only_costs_the_disk_copy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "emb.sqlite"
    inner = Counting()
    cache = CachedEmbedder(inner, path)
    blocker = sqlite3.connect(str(path), timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the file
    cache._db.execute("PRAGMA busy_timeout = 50")  # type: ignore[union-attr]  # do not wait 30 s here
    out = cache.embed(["hello there"])
    assert out.shape == (1, DIM) and inner.seen == ["hello there"]
    assert cache.embed(["hello there"]).shape == (1, DIM) and inner.seen == ["hello there"]  # from memory
    assert "embedding cache not written" in caplog.text
    blocker.rollback()
    blocker.close()
    cache.close()
