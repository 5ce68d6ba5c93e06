"""A climbing shop of our own (tests/shops/crag: its own column names, aliases and triggers): its
conversation tests pass with the rule brain, invariants included."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evaluation.testing import WorkspaceCache, collect, run_file

SHOP = Path(__file__).resolve().parents[1] / "shops" / "crag"
FILES = collect([str(SHOP / "conversations")])
CACHE = WorkspaceCache()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_conversation(path: Path) -> None:
    result = run_file(path, None, CACHE)
    assert not result.error, result.error
    failures = [f"turn {i} {t.user!r}: {f}" for i, t in enumerate(result.turns, 1) for f in t.failures]
    assert not failures, "\n".join(failures)
    assert result.turns
