"""Fixtures for the preference-memory tests: a local fake Zep server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.memory.zep_fake import FakeZep


@pytest.fixture
def fake_zep() -> Iterator[FakeZep]:
    """A fresh fake Zep v4 API on 127.0.0.1 (state and request log start empty)."""
    with FakeZep() as fake:
        yield fake
