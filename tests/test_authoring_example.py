"""The worked example of docs/authoring.md (examples/bike_repairs) is what the document says: it lints with
nothing inferred, its conversation tests pass, and every file the document shows is the example's own."""

from __future__ import annotations

import re
from pathlib import Path

from core.engine.build import load_workspace
from core.evaluation.testing import WorkspaceCache, run_file
from core.retrieval.embedding import CachedEmbedder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bike_repairs"
DOC = ROOT / "docs" / "authoring.md"


def test_the_example_lints_clean_with_every_slot_type_declared(embedder: CachedEmbedder) -> None:
    loaded = load_workspace(EXAMPLE, embedder)
    assert [str(p) for p in loaded.problems] == []
    assert all(st.declared for types in loaded.types.values() for st in types.values())


def test_the_examples_conversation_tests_pass() -> None:
    files = sorted((EXAMPLE / "conversations").glob("*.yaml"))
    assert len(files) >= 3
    for path in files:
        result = run_file(path, EXAMPLE, WorkspaceCache())
        assert result.passed, (path.name, result.error, [t.failures for t in result.turns if not t.passed])


def test_the_files_the_document_shows_are_the_examples_files() -> None:
    doc = DOC.read_text(encoding="utf-8")
    shown = re.findall(r"```\w*\n# (examples/\w+/\S+)[^\n]*\n(.*?)```", doc, re.S)
    assert len(shown) >= 5
    for rel, body in shown:
        assert body.strip() in (ROOT / rel).read_text(encoding="utf-8"), rel


def test_the_synthetic_evaluation_reads_the_declared_types_as_the_engine_does(embedder: CachedEmbedder) -> None:
    """Its answers come from the declared types (a day is answered with a date, not with an item), and a
    booking that timed out is expected to end unsure, never to be sent again."""
    from core.evaluation.synthetic import run_synthetic

    report = run_synthetic(EXAMPLE, sessions=40, seed=3, embedder=embedder)
    assert report.accuracy >= 0.85, report.accuracy
