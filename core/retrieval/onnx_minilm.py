"""The packaged MiniLM model run by ONNX Runtime: the same vectors as sentence-transformers, about twice as fast.

The ONNX graph is exported once from the model package's own files (no download) into a cache folder
shared by every workspace (:func:`cache_dirs`: ``SOP_MODEL_CACHE``, else the virtual environment's
``share/sop-playground/models``, where ``make venv`` exports it at install time, else ``.state/models`` at the
project root), then reused.
Tokenising uses the package's ``tokenizer.json``; pooling (the mean of the tokens' vectors) and L2
normalisation follow the package's pooling config, as sentence-transformers does.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.retrieval.token_rows import INPUT, TokenRows, split_table

OPSET = 17
FORMAT = 2  # of the exported files: 2 keeps the token table out of the graph (core.retrieval.token_rows)
BATCH = 64  # texts in one run at most
# Padded tokens in one run at most: on a CPU a big run costs more per token than a few small ones (a knowledge
# base's passages embed about twice as fast in runs of ~512 tokens as in runs of 64 passages), while short
# texts (triggers, messages) still share runs. The vectors do not depend on how texts are grouped.
TOKENS_PER_RUN = 512
ENCODE_BLOCK = 1024  # texts tokenised at once
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


SHARED_MODELS = Path("share") / "sop-playground" / "models"  # below a virtual environment's folder


def cache_dirs() -> list[Path]:
    """Where exported models are looked for, in order: ``SOP_MODEL_CACHE`` alone when it is set; else, in a
    virtual environment, its ``share/sop-playground/models`` (installing exports there, and an emptied
    ``.state/`` keeps it), then ``.state/models`` at the project root."""
    raw = os.environ.get("SOP_MODEL_CACHE", "").strip()
    if raw:
        return [Path(raw)]
    found = [Path(sys.prefix) / SHARED_MODELS] if sys.prefix != sys.base_prefix else []
    return [*found, Path(__file__).resolve().parents[2] / ".state" / "models"]


def cache_dir() -> Path:
    """Where a new export is written: the first of :func:`cache_dirs` this process may write to (the last
    one when it may write to none: the export then fails with the system's reason)."""
    dirs = cache_dirs()
    return next((d for d in dirs if writable(d)), dirs[-1])


def writable(folder: Path) -> bool:
    """Whether this process may create files in ``folder``, or create it (its nearest existing parent)."""
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            return False
        existing = existing.parent
    return existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)


def _fingerprint(model_dir: Path) -> str:
    """Changes when the packaged model or the exporter's versions change (the export is then redone). The
    runtime's version is read from its package metadata: finding an export imports nothing.

    Raises:
        ImportError: onnxruntime is not installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        runtime = version("onnxruntime")
    except PackageNotFoundError as exc:
        raise ImportError("onnxruntime is not installed") from exc
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    parts = [str(model_dir.resolve()), str(stat.st_size), str(stat.st_mtime_ns),
             (model_dir / "config.json").read_text(encoding="utf-8"), runtime, str(OPSET),
             f"format {FORMAT}"]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def export(model_dir: Path, target: Path) -> None:
    """Export the transformer of ``model_dir`` to ONNX at ``target``, its token table beside it
    (:func:`table_file`, see :mod:`core.retrieval.token_rows`): each written to a temporary file and renamed into
    place, the table first, so concurrent processes never see (or leave) half an export."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    base = AutoModel.from_pretrained(str(model_dir)).eval()

    class _Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.base(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    sample = torch.tensor([[101, 7592, 102]])
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "hidden")}
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp, rows = (_temporary(target), _temporary(table_file(target)))
    try:
        import warnings

        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Hidden(), (sample, torch.ones_like(sample), torch.zeros_like(sample)), tmp,
                              input_names=list(_INPUTS), output_names=["hidden"], dynamic_axes=axes,
                              opset_version=OPSET, dynamo=False)
        split_table(Path(tmp), Path(rows))
        for done, final in ((rows, table_file(target)), (tmp, target)):
            os.chmod(done, 0o644)
            os.replace(done, final)
    finally:
        for left in (tmp, rows):
            if os.path.exists(left):
                os.unlink(left)


def _temporary(beside: Path) -> str:
    fd, name = tempfile.mkstemp(prefix=beside.name + ".", suffix=".tmp", dir=beside.parent)
    os.close(fd)
    return name


def table_file(graph: Path) -> Path:
    """The token table of the exported graph at ``graph``."""
    return graph.with_name(graph.name.removesuffix(".onnx") + ".tokens.npy")


def exported(model_dir: Path) -> Path:
    """The ONNX file for ``model_dir``, exported first if no cache folder has one for this model and runtime."""
    found = cached(model_dir)
    if found is not None:
        return found
    target = cache_dir() / model_name(model_dir)
    export(model_dir, target)
    return target


def model_name(model_dir: Path) -> str:
    """The file name of ``model_dir``'s export for this runtime."""
    return f"minilm-{_fingerprint(model_dir)}.onnx"


def cached(model_dir: Path) -> Path | None:
    """The export of ``model_dir`` for this runtime in the first cache folder that has one, else None."""
    name = model_name(model_dir)
    return next((d / name for d in cache_dirs() if (d / name).is_file() and table_file(d / name).is_file()), None)


class OnnxMiniLM:
    """Embeds with ONNX Runtime and the ``tokenizers`` library: mean pooling and L2 normalisation."""

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if not pooling.get("pooling_mode_mean_tokens") or any(
                pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                         "pooling_mode_mean_sqrt_len_tokens")):
            raise ValueError(f"only mean pooling is supported, not {pooling}")
        limit = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(int(limit))
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = exported(model_dir)
        self._session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self._rows = TokenRows(table_file(graph))
        # A batch (indexing a knowledge base) grows the runtime's memory arena to its largest activations, and
        # an arena keeps what it grew to: after a batch the arena gives back what the run added. One message
        # runs without, so a turn's embedding pays nothing for it.
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.dim = int(pooling["word_embedding_dimension"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), dim). Texts are tokenised a block at a time and
        run longest first in runs of similar lengths, each at most TOKENS_PER_RUN tokens with its padding (as
        sentence-transformers sorts by length, so little padding is computed)."""
        if len(texts) == 1:  # a message: nothing to group
            one = self._tokenizer.encode(texts[0])
            return self._embed_run(np.array([one.ids], dtype=np.int64), np.array([one.attention_mask], dtype=np.int64))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), ENCODE_BLOCK):
            block = list(texts[start : start + ENCODE_BLOCK])
            out[start : start + len(block)] = self._embed_block(block)
        return out

    def _embed_block(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)  # padded to the block's longest text
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        lengths = mask.sum(axis=1)
        order = [int(i) for i in np.argsort(-lengths, kind="stable")]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for run in runs([int(lengths[i]) for i in order]):
            rows = order[run.start : run.stop]
            width = int(lengths[rows[0]])  # the run's longest text: the others are padded to it
            out[rows] = self._embed_run(ids[rows, :width], mask[rows, :width])
        return out

    def _embed_run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids), INPUT: self._rows.rows(ids)},
                                   self._shrink if len(ids) > 1 else None)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(np.float32)


def runs(lengths: Sequence[int], tokens: int = TOKENS_PER_RUN, most: int = BATCH) -> list[range]:
    """Consecutive runs over texts' token counts sorted longest first: each run's texts, padded to its first
    (longest), hold at most ``tokens`` tokens, and at most ``most`` texts (a text longer than ``tokens`` runs
    alone)."""
    out: list[range] = []
    start = 0
    while start < len(lengths):
        width, stop = max(1, lengths[start]), start + 1
        while stop < len(lengths) and stop - start < most and (stop - start + 1) * width <= tokens:
            stop += 1
        out.append(range(start, stop))
        start = stop
    return out
