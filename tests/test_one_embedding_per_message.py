"""A message is embedded once per turn: the knowledge base asked the message's words takes the vector the
router computed, even from the tool call's own thread."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder, one_vector_per_words, shared_model, words_key
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store

ROOT = Path(__file__).resolve().parent.parent


class Counting:
    """The real model, counting the texts it is given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return shared_model().embed(texts)


def test_a_text_is_read_as_its_words() -> None:
    assert words_key("Is it in stock, Ann?") == "is it in stock ann"
    assert words_key("What's the Wi-Fi password -- again?!") == "what's the wi-fi password again"
    assert words_key("¿Cuál es la política?") == "cuál es la política"
    assert words_key("แบตหมดเร็วมาก!") == "แบตหมดเร็วมาก"  # Thai vowel and tone marks stay with their letters
    assert words_key("?!") == ""


def test_the_same_words_are_embedded_once_within_a_turn_whatever_the_caches_hold() -> None:
    model = Counting()
    cached = CachedEmbedder(model, None)
    cached.embed(["Is it in stock, Ann?"])  # outside a turn: its own vector, cached under its exact text
    with one_vector_per_words():
        first = cached.embed(["is it in stock ann"])[0]
        second = cached.embed(["Is it in stock, Ann?"])[0]  # the turn's vector of these words wins
        other = cached.embed(["Is it in stock, Bob?"])[0]
    assert model.texts == ["Is it in stock, Ann?", "is it in stock ann", "Is it in stock, Bob?"]
    assert np.array_equal(first, second) and not np.array_equal(first, other)
    with one_vector_per_words():  # a new turn starts empty: the exact text's own vector again
        third = cached.embed(["Is it in stock, Ann?"])[0]
    assert not np.array_equal(third, first) and float(third @ first) > 0.9  # punctuation moves it a little
    assert len(model.texts) == 3


def test_a_thread_started_with_the_turns_context_shares_its_vectors() -> None:
    model = Counting()
    cached = CachedEmbedder(model, None)
    with one_vector_per_words():
        cached.embed(["where is my parcel"])
        context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(cached.embed, ["Where is my parcel?"]))
        worker.start()
        worker.join()
    assert model.texts == ["where is my parcel"]


def test_a_question_the_knowledge_base_weighs_embeds_the_message_once(tmp_path: Path) -> None:
    model = Counting()
    ws = load_workspace(ROOT, CachedEmbedder(model, None))
    orch = build_orchestrator(ROOT, store=open_state_store(f"sqlite:///{tmp_path}/s.db"),
                              memory=LocalPreferenceMemory(tmp_path / "p.db"), loaded=ws)
    orch.handle_message("s", "Recommend a laptop for Mira, budget 1500")  # none that cheap: nothing to refer to
    model.texts.clear()
    orch.handle_message("s", "Is the one you just recommended in stock, Mira?")
    trace = orch.last_trace("s")
    assert trace is not None
    searched = [c for c in trace["tool_calls"] if c["tool"] == "knowledge_base.search"]
    assert searched and searched[0]["args"]["query"] == "Is the one you just recommended in stock, Mira?"
    assert len(model.texts) == 1 and words_key(model.texts[0]) == words_key(searched[0]["args"]["query"])
