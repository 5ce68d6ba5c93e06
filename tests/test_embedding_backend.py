"""The ONNX embedding path gives torch's vectors, and is the one used when onnxruntime is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from core.retrieval.embedding import MiniLMEmbedder, shared_model

SENTENCES = [
    "Recommend a gaming mouse.",
    "  Lovely, thanks! where is my refund. You are a star, cheers!  ",
    "1500",
    "มือถือค้าง ร้านเปิดกี่โมง",
    "",
    "a very long message " * 120,  # longer than the model's 256 tokens: truncated alike
]


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime is not installed")
def test_onnx_is_the_backend_and_its_vectors_are_torchs() -> None:
    fast = shared_model()
    assert fast.backend == "onnx"
    slow = MiniLMEmbedder("torch")
    assert slow.backend == "torch"
    a, b = fast.embed(SENTENCES), slow.embed(SENTENCES)
    assert a.shape == b.shape == (len(SENTENCES), 384) and a.dtype == np.float32
    assert float(np.max(1 - np.sum(a * b, axis=1))) < 1e-5
    one_by_one = np.stack([fast.embed([s])[0] for s in SENTENCES])  # padding in a batch changes nothing
    assert float(np.max(np.abs(one_by_one - a))) < 1e-5


def test_a_lone_process_embeds_on_up_to_two_cores_and_workers_on_one_each(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from core.retrieval.embedding import MAX_THREADS, THREADS_ENV, one_thread_each, thread_count

    for name in (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "")  # restored as it was after the test, whatever one_thread_each sets
        monkeypatch.delenv(name)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert thread_count() == MAX_THREADS == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3})
    assert thread_count() == 1  # a process pinned to one core
    monkeypatch.setenv(THREADS_ENV, "3")
    assert thread_count() == 3  # the environment decides
    monkeypatch.setenv(THREADS_ENV, "none")
    assert thread_count() == 1
    monkeypatch.delenv(THREADS_ENV)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    one_thread_each()  # what `serve --workers N` and parallel replays do before starting their workers
    assert thread_count() == 1 and os.environ["OMP_NUM_THREADS"] == "1"


def test_two_threads_give_the_same_vectors_as_one() -> None:
    from core.retrieval.embedding import model_path
    from core.retrieval.onnx_minilm import OnnxMiniLM

    texts = [f"Where is my order {4711 + 37 * i}, placed {i % 28 + 1} days ago?" * (1 + i % 3) for i in range(40)]
    one, two = OnnxMiniLM(Path(model_path()), 1), OnnxMiniLM(Path(model_path()), 2)
    assert np.array_equal(one.embed(texts), two.embed(texts))
    assert all(np.array_equal(one.embed([t]), two.embed([t])) for t in texts[:10])
