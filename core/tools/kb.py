"""The built-in ``knowledge_base.search`` tool: chunked KB, MiniLM embeddings, FAISS."""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from core.errors import WorkspaceError
from core.problems import Problem
from core.retrieval import CachedEmbedder, Progress, VectorIndex
from core.tools.base import ToolSpec
from core.workspace import Param, read_text_file

log = logging.getLogger(__name__)

MAX_CHUNK = 1800
DEFAULT_MIN_SCORE = 0.30
EMBED_BATCH = 32


@dataclass(frozen=True)
class Chunk:
    """A piece of a KB document."""

    ref: str
    title: str
    heading: str
    text: str

    def embed_text(self) -> str:
        return f"{self.title}. {self.heading}. {self.text}" if self.heading else f"{self.title}. {self.text}"


def chunk_document(ref: str, text: str) -> list[Chunk]:
    """Split a document: whole when short, else by ``##`` sections (each keeps the title)."""
    lines = text.strip().splitlines()
    title = Path(ref).stem.replace("-", " ").replace("_", " ").capitalize()
    if lines and lines[0].startswith("#"):
        title = lines[0].lstrip("#").strip()
        lines = lines[1:]
    body = "\n".join(lines).strip()
    if len(body) <= MAX_CHUNK:
        return [Chunk(ref, title, "", body)] if body else []
    chunks: list[Chunk] = []
    heading, buf = "", cast(list[str], [])
    for line in lines:
        if re.match(r"^#{2,6}\s", line):
            if "\n".join(buf).strip():
                body = "\n".join(buf).strip()
                chunks.append(Chunk(f"{ref}#{_slug(heading)}" if heading else ref, title, heading, body))
            heading, buf = line.lstrip("#").strip(), []
        else:
            buf.append(line)
    if "\n".join(buf).strip():
        chunks.append(Chunk(f"{ref}#{_slug(heading)}" if heading else ref, title, heading, "\n".join(buf).strip()))
    return chunks


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


IndexMode = Literal["now", "background", "lazy"]
BACKGROUND_BATCH = 2  # small batches while customers chat: a turn's own embedding waits for one (~70 ms) at most


class KnowledgeBase:
    """The workspace's KB documents, chunked at once and embedded into a FAISS index.

    ``index`` says when the embedding happens: ``"now"`` in the constructor (command line, tests),
    ``"background"`` in a daemon thread (the playground: an upload returns at once, :attr:`status`
    shows the progress and searches meanwhile see the chunks indexed so far: chunks whose vectors are
    already cached go first, so the documents known before the change are back within a moment), or
    ``"lazy"`` on the first search (a lint that may never search).
    """

    def __init__(self, files: list[Path], root: Path, embedder: CachedEmbedder,
                 min_score: float = DEFAULT_MIN_SCORE, progress: Progress | None = None,
                 index: IndexMode = "now") -> None:
        self.problems: list[Problem] = []
        self.chunks: list[Chunk] = []
        for path in files:
            ref = str(path.relative_to(root))
            try:
                text = read_text_file(path)
            except WorkspaceError as exc:
                self.problems.append(Problem(ref, 0, "error", exc.message))
                continue
            found = chunk_document(ref, text)
            if not found:
                self.problems.append(Problem(ref, 1, "warning", "empty knowledge-base document"))
            self.chunks += found
        self.embedder = embedder
        self.min_score = min_score
        self.index = VectorIndex(embedder.embed([]), [])
        self.error = ""
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()
        self._stop = threading.Event()
        if index == "now":
            self.build_index(progress)
        elif index == "background":
            self._started = True
            threading.Thread(target=self._build, args=(progress, BACKGROUND_BATCH), daemon=True,
                             name="index knowledge base").start()

    @property
    def status(self) -> dict[str, Any]:
        """How far indexing is: chunks indexed, chunks in all, whether it is finished, and its error if any."""
        return {"indexed": len(self.index), "total": len(self.chunks), "ready": self._done.is_set(),
                "error": self.error}

    def build_index(self, progress: Progress | None = None) -> None:
        """Embed and index every chunk now, or wait for the indexing already under way."""
        with self._lock:
            start = not self._started
            self._started = True
        if start:
            self._build(progress, EMBED_BATCH)
        self._done.wait()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the index (started if nothing started it); whether it is complete."""
        with self._lock:
            lazy = not self._started
        if lazy:
            self.build_index()
        return self._done.wait(timeout)

    def stop(self) -> None:
        """Stop background indexing (a newer load of the workspace replaced this one)."""
        self._stop.set()

    def _build(self, progress: Progress | None, batch: int) -> None:
        report = progress or (lambda _f, _s: None)
        try:
            cached = self.embedder.cached([c.embed_text() for c in self.chunks])
            order = [i for i, hit in enumerate(cached) if hit] + [i for i, hit in enumerate(cached) if not hit]
            known = sum(cached)
            if known:
                self._add(order[:known])
            for start in range(known, len(order), batch):
                if self._stop.is_set():
                    return
                report(start / len(order), f"embedding knowledge-base chunks {start + 1}-"
                                           f"{min(start + batch, len(order))} of {len(order)}")
                self._add(order[start:start + batch])
            report(1.0, f"{len(order)} knowledge-base chunks indexed")
        except Exception as exc:  # noqa: BLE001 - a failed background index is shown, never raised into a turn
            log.exception("indexing the knowledge base failed")
            self.error = f"indexing failed: {type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def _add(self, ids: list[int]) -> None:
        vectors = self.embedder.embed([self.chunks[i].embed_text() for i in ids])
        with self._lock:
            self.index.add(vectors, [self.chunks[i] for i in ids])

    def search(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        """The best chunks for a query above the minimum score, as snippet + reference (while indexing
        in the background: among the chunks indexed so far)."""
        with self._lock:
            lazy = not self._started
        if lazy:
            self.build_index()
        if not query.strip() or not len(self.index):
            return []
        q = self.embedder.embed([query])[0]
        with self._lock:
            found = self.index.search(q, k)
        hits = []
        for score, chunk in found:
            assert isinstance(chunk, Chunk)
            if score >= self.min_score:
                hits.append({"title": chunk.title, "snippet": chunk.text, "ref": chunk.ref,
                             "score": round(score, 3)})
        return hits


class KnowledgeBaseTool:
    """``knowledge_base.search``: takes a query, or joins whatever slots it is given into one."""

    spec = ToolSpec("knowledge_base.search", "Search the knowledge base for snippets and references",
                    [Param("query", True), Param("k", True)], accepts_extra=True)

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def run(self, args: dict[str, Any]) -> Any:
        query = str(args.get("query") or "")
        if not query:
            query = " ".join(str(v) for k, v in args.items() if k != "k" and isinstance(v, str | int | float))
        k = int(args.get("k") or 3)
        return self.kb.search(query, k)
