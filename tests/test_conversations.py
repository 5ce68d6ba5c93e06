"""Every conversation file passes with the rule brain, invariants included.

Files: the demo store's ``tests/conversations/`` and each example workspace's ``conversations/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evaluation.testing import WorkspaceCache, collect, run_file

HERE = Path(__file__).parent
ROOT = HERE.parent
FILES = collect([str(HERE / "conversations"), *map(str, sorted((ROOT / "examples").glob("*/conversations")))])
CACHE = WorkspaceCache()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_conversation(path: Path) -> None:
    result = run_file(path, None, CACHE)
    assert not result.error, result.error
    failures = [f"turn {i} {t.user!r}: {f}" for i, t in enumerate(result.turns, 1) for f in t.failures]
    assert not failures, "\n".join(failures)
    assert result.turns, "a conversation file without turns tests nothing"
