"""Knowledge-base indexing off the request path: an upload returns at once, the chat keeps answering from what
is indexed, the progress is visible, and tests wait for the whole index.

The real model embeds every text; a gate in front of it holds back the texts of the new document, so the
tests can look at the playground while that document is still being indexed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from core.engine.build import load_workspace
from core.playground import Playground
from core.retrieval.embedding import CachedEmbedder, shared_model

MARK = "zanzibarite"  # a word only the uploaded document uses


class HeldBack:
    """The real model, except that texts with ``MARK`` wait for :attr:`gate` (or fail when ``fail`` is set)."""

    def __init__(self, fail: bool = False) -> None:
        self.gate = threading.Event()
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(MARK in t for t in texts):
            if self.fail:
                raise RuntimeError("the model ran out of memory")
            assert self.gate.wait(60), "the test never opened the gate"
        return shared_model().embed(texts)


def article(sections: int = 12) -> bytes:
    parts = ["# Polishing stones"]
    for n in range(sections):
        parts.append(f"## Grade {n}\n\n" + " ".join(
            f"Grade {n} {MARK} grit number {n * 7 + i} smooths the surface of soft stones in {i + 2} minutes."
            for i in range(20)))
    return "\n\n".join(parts).encode("utf-8")


def wait_until(check: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture()
def held() -> HeldBack:
    return HeldBack()


@pytest.fixture()
def gated_pg(ws_copy: Path, held: HeldBack) -> Iterator[Playground]:
    play = Playground(ws_copy, embedder=CachedEmbedder(held, None))
    play.wait_for_kb(60)
    yield play
    held.gate.set()
    play.close()


def test_an_upload_returns_before_its_document_is_indexed_and_the_chat_answers_meanwhile(
        gated_pg: Playground, held: HeldBack) -> None:
    before = gated_pg.kb_status()
    assert before is not None and before["ready"] and before["indexed"] == before["total"] > 0

    result = gated_pg.store.upload_kb([("polishing.md", article())])  # returns although no chunk of it is embedded

    assert result.saved
    status = gated_pg.kb_status()
    assert status is not None and not status["ready"] and status["total"] > before["total"]
    wait_until(lambda: gated_pg.kb_status()["indexed"] >= before["total"])  # type: ignore[index]
    # the documents known before the upload are searchable again while the new one waits
    hits = gated_pg.workspace.kb.search("my laptop overheats")  # type: ignore[union-attr]
    assert hits and hits[0]["ref"].startswith("kb/laptop-overheating")
    assert not gated_pg.kb_status()["ready"]  # type: ignore[index]
    view = gated_pg.chat.send("s1", "Hi there")
    assert view.reply

    held.gate.set()
    assert gated_pg.wait_for_kb(60)
    done = gated_pg.kb_status()
    assert done is not None and done["ready"] and done["indexed"] == done["total"] == status["total"]
    assert not done["error"]
    found = gated_pg.workspace.kb.search("which grit smooths soft stones")  # type: ignore[union-attr]
    assert found and found[0]["ref"].startswith("kb/polishing.md")


def test_test_runs_wait_for_the_whole_knowledge_base(gated_pg: Playground, held: HeldBack) -> None:
    (gated_pg.root / "conversations").mkdir(exist_ok=True)
    (gated_pg.root / "conversations" / "hello.yaml").write_text(
        "name: hello\nturns:\n  - user: Hi there\n    expect:\n      tools: []\n", encoding="utf-8")
    assert gated_pg.store.upload_kb([("polishing.md", article(3))]).saved
    files = gated_pg.runs.conversation_files()
    assert [f.name for f in files] == ["hello.yaml"]
    seen: list[str] = []
    runner = threading.Thread(target=lambda: gated_pg.runs.run_tests(files, progress=lambda _f, s: seen.append(s)))
    runner.start()
    runner.join(1.0)
    assert runner.is_alive() and seen == ["waiting for the knowledge base to be indexed"]
    held.gate.set()
    runner.join(120)
    assert not runner.is_alive() and seen[-1] == "done"
    assert gated_pg.kb_status()["ready"]  # type: ignore[index]


def test_a_newer_load_stops_the_indexing_it_replaces(gated_pg: Playground, held: HeldBack) -> None:
    assert gated_pg.store.upload_kb([("polishing.md", article())]).saved
    replaced = gated_pg.workspace.kb
    assert replaced is not None
    assert gated_pg.store.delete_kb("kb/polishing.md").saved  # reloads: the half-built index is of no use any more
    assert gated_pg.workspace.kb is not replaced
    held.gate.set()
    assert replaced.wait(60)
    assert replaced.status["indexed"] < replaced.status["total"]
    assert gated_pg.wait_for_kb(60) and gated_pg.kb_status()["indexed"] == gated_pg.kb_status()["total"]  # type: ignore[index]


def test_an_index_that_fails_is_reported_and_the_chat_goes_on(ws_copy: Path) -> None:
    play = Playground(ws_copy, embedder=CachedEmbedder(HeldBack(fail=True), None))
    try:
        assert play.store.upload_kb([("polishing.md", article(2))]).saved
        assert play.wait_for_kb(60)
        status = play.kb_status()
        assert status is not None and "RuntimeError" in status["error"] and status["indexed"] < status["total"]
        assert play.workspace.kb.search("my laptop overheats")  # type: ignore[union-attr]
        assert play.chat.send("s1", "Hi there").reply
    finally:
        play.close()


def test_a_lint_load_embeds_nothing_until_something_searches(ws_copy: Path) -> None:
    held = HeldBack(fail=True)  # any embedding of the new document would fail
    (ws_copy / "kb" / "polishing.md").write_bytes(article(2))
    loaded = load_workspace(ws_copy, CachedEmbedder(held, None), kb_index="lazy")
    assert loaded.kb is not None
    assert loaded.kb.status["indexed"] == 0 and not loaded.kb.status["ready"]
    held.fail = False
    held.gate.set()
    assert loaded.kb.search("which grit smooths soft stones")[0]["ref"].startswith("kb/polishing.md")
    assert loaded.kb.status["ready"] and loaded.kb.status["indexed"] == loaded.kb.status["total"]
