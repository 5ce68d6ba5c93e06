"""The ONNX embedding path gives torch's vectors, and is the one used when onnxruntime is installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from core.retrieval import MiniLMEmbedder, shared_model

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
