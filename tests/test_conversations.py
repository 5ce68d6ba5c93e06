"""Every conversation file under tests/conversations passes with the rule brain, invariants included."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.testing import WorkspaceCache, collect, run_file

HERE = Path(__file__).parent
FILES = collect([str(HERE / "conversations")])
CACHE = WorkspaceCache()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(HERE)) for p in FILES])
def test_conversation(path: Path) -> None:
    result = run_file(path, None, CACHE)
    assert not result.error, result.error
    failures = [f"turn {i} {t.user!r}: {f}" for i, t in enumerate(result.turns, 1) for f in t.failures]
    assert not failures, "\n".join(failures)
    assert result.turns, "a conversation file without turns tests nothing"
