"""The built-in ``knowledge_base.search`` tool: chunked KB, MiniLM embeddings, FAISS."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from core.errors import WorkspaceError
from core.problems import Problem
from core.retrieval import CachedEmbedder, Progress, VectorIndex
from core.tools.base import ToolSpec
from core.workspace import Param, read_text_file

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


class KnowledgeBase:
    """The workspace's KB documents, embedded and indexed."""

    def __init__(self, files: list[Path], root: Path, embedder: CachedEmbedder,
                 min_score: float = DEFAULT_MIN_SCORE, progress: Progress | None = None) -> None:
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
        texts = [c.embed_text() for c in self.chunks]
        batches = []
        for i in range(0, len(texts), EMBED_BATCH):
            if progress is not None:
                progress(i / len(texts), f"embedding knowledge-base chunks {i + 1}-{min(i + EMBED_BATCH, len(texts))} "
                                         f"of {len(texts)}")
            batches.append(embedder.embed(texts[i:i + EMBED_BATCH]))
        vectors = np.vstack(batches) if batches else embedder.embed([])
        self.index = VectorIndex(vectors, self.chunks)

    def search(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        """The best chunks for a query above the minimum score, as snippet + reference."""
        if not query.strip() or not len(self.index):
            return []
        q = self.embedder.embed([query])[0]
        hits = []
        for score, chunk in self.index.search(q, k):
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
