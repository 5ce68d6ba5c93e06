"""The built-in ``knowledge_base.search`` tool: chunked KB, MiniLM embeddings, FAISS."""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from core.language.lexicons import UNSPACED, phrases
from core.retrieval.embedding import CachedEmbedder, Progress
from core.retrieval.index import LexicalIndex, VectorIndex
from core.shared.errors import WorkspaceError
from core.shared.problems import Problem
from core.tools.base import ToolSpec
from core.workspace.params import Param
from core.workspace.paths import read_text_file

log = logging.getLogger(__name__)

MAX_PASSAGE = 900  # characters; a longer paragraph is cut between sentences (MiniLM reads ~256 tokens)
MIN_PASSAGE = 40  # a shorter block ("Note:", a lead-in line) joins the block after it
KB_TOOL = "knowledge_base.search"  # the built-in search tool
DEFAULT_MIN_SCORE = 0.30  # cosine similarity a passage needs to be an answer at all
LEXICAL_WEIGHT = 0.3  # how much the question's rare words found in a passage add to its similarity
CANDIDATES = 24  # passages the vectors and the words each propose before they are weighed together
EMBED_BATCH = 32

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
STEP = re.compile(r"^\s*\d+[.)]\s+\S", re.M)  # a numbered step (on any line of a text)
BULLET = re.compile(r"^\s*[-*+•]\s+\S")
BULLET_MARK = re.compile(r"^\s*[-*+•]\s+")
SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")


@dataclass(frozen=True)
class Chunk:
    """A passage of a KB document: one paragraph, one list item or one step, with the heading of its
    section kept apart (``heading``), and for a step the whole numbered procedure it belongs to."""

    ref: str
    title: str
    heading: str
    text: str
    procedure: str = ""
    order: int = 0  # its position in the document
    lead: str = ""  # the first passage of its section (a question about the whole section starts there)

    def embed_text(self) -> str:
        return ". ".join(p for p in (self.title, self.heading, self.text) if p)


def chunk_document(ref: str, text: str) -> list[Chunk]:
    """Split a document into passages that each answer one thing.

    The first ``#`` heading is the title; every other heading starts a section and is kept apart from
    the sentences (a passage's ``heading`` is its section's). In a section, each paragraph, each bullet
    (with the lines indented under it) and each numbered step is a passage; a step also carries the
    whole procedure, so a fix can be walked through step by step. Paragraphs longer than MAX_PASSAGE
    are cut between sentences.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").strip().splitlines()
    title = Path(ref).stem.replace("-", " ").replace("_", " ").capitalize()
    first = HEADING.match(lines[0]) if lines else None
    if first:
        title = first.group(2).strip() or title
        lines = lines[1:]
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    heading, section = "", cast(list[str], [])
    for line in [*lines, "## "]:  # a last empty heading closes the last section
        found = HEADING.match(line)
        if found is None:
            section.append(line)
            continue
        sections.append((heading, _passages(section)))
        heading, section = found.group(2).strip(), []
    chunks: list[Chunk] = []
    for at, (heading, passages) in enumerate(sections):
        later = sections[at + 1][1] if at + 1 < len(sections) else []
        steps = next((procedure for _, procedure in later if procedure), "")
        if passages and steps and not passages[-1][1] and leads_into_steps(passages[-1][0]):
            passages = [*passages[:-1], (passages[-1][0], steps)]  # "..., follow these steps": the next section's
        anchor = f"{ref}#{_slug(heading)}" if heading else ref
        lead = passages[0][0] if passages and not passages[0][1] else ""
        chunks += [Chunk(anchor, title, heading, body, procedure, len(chunks) + i, lead if i else "")
                   for i, (body, procedure) in enumerate(passages)]
    return chunks


def leads_into_steps(text: str) -> bool:
    """Whether a passage ends by leading into steps that follow it: a colon, or the words of ``step_leads`` in
    the language files ("... follow these steps", "... ทำตามขั้นตอนนี้")."""
    said = re.sub(r"\s+", "", text.strip().rstrip(" .!"))  # spacing aside: Thai is cut into words two ways
    leads = "|".join(re.sub(r"\s+", "", p) for p in phrases("step_leads"))
    return said.endswith(":") or bool(leads) and re.search(rf"(?:{leads})$", said, re.I) is not None


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """A section's blocks as (kind, text): ``step``, ``item`` (a bullet) or ``para``."""
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        if not line.strip():
            if blocks and blocks[-1][0] == "para":
                blocks.append(("gap", []))
            continue
        kind = "step" if STEP.match(line) else "item" if BULLET.match(line) else ""
        indented = line[:1].isspace()
        if kind and not (indented and blocks and blocks[-1][0] in ("step", "item")):
            blocks.append((kind, [BULLET_MARK.sub("", line) if kind == "item" else line.strip()]))
        elif blocks and blocks[-1][0] in ("step", "item", "para"):
            blocks[-1][1].append(line.strip())  # a continuation: wrapped text or a nested line
        else:
            blocks.append(("para", [line.strip()]))
    return [(kind, " ".join(body) if kind == "para" else "\n".join(body)) for kind, body in blocks if body]


def _passages(lines: list[str]) -> list[tuple[str, str]]:
    """(passage, procedure) pairs of one section."""
    blocks = _blocks(lines)
    procedure = "\n".join(text for kind, text in blocks if kind == "step")
    out: list[tuple[str, str]] = []
    carry = ""
    for kind, text in blocks:
        if carry and kind == "step":  # a short lead-in before a procedure ("Try this:") stays a passage
            out.append((carry, ""))
        text = f"{carry} {text}".strip() if carry and kind != "step" else text
        carry = ""
        if len(text) < MIN_PASSAGE and kind != "step":
            carry = text
            continue
        pieces = _cut(text) if kind == "para" else [text]
        out += [(piece, procedure if kind == "step" else "") for piece in pieces]
    if carry:
        if out and not out[-1][1]:
            out[-1] = (f"{out[-1][0]} {carry}", "")
        else:
            out.append((carry, ""))
    return out


def _cut(text: str) -> list[str]:
    """A paragraph in pieces of at most MAX_PASSAGE characters, cut after sentences (or at spaces)."""
    if len(text) <= MAX_PASSAGE:
        return [text]
    parts = SENTENCE_END.split(text)
    if len(parts) == 1:
        parts = text.split(" ")
    pieces, buf = [], ""
    for part in parts:
        while len(part) > MAX_PASSAGE:  # one "sentence" longer than a passage: cut it hard
            if buf:
                pieces.append(buf)
                buf = ""
            pieces.append(part[:MAX_PASSAGE])
            part = part[MAX_PASSAGE:]
        if buf and len(buf) + 1 + len(part) > MAX_PASSAGE:
            pieces.append(buf)
            buf = part
        else:
            buf = f"{buf} {part}".strip()
    if buf:
        pieces.append(buf)
    return pieces


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
        self.lexical = LexicalIndex()
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
        self._start_if_lazy()
        return self._done.wait(timeout)

    def _start_if_lazy(self) -> None:
        """Index now when nothing has started indexing (a ``lazy`` knowledge base's first use)."""
        with self._lock:
            lazy = not self._started
        if lazy:
            self.build_index()

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
        texts = [self.chunks[i].embed_text() for i in ids]
        vectors = self.embedder.embed(texts)
        with self._lock:
            self.index.add(vectors, [self.chunks[i] for i in ids])
            self.lexical.add(texts)

    def search(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        """The best chunks for a query above the minimum score, as snippet + reference (while indexing
        in the background: among the chunks indexed so far)."""
        self._start_if_lazy()
        if not query.strip() or not len(self.index):
            return []
        q = self.embedder.embed([query])[0]
        with self._lock:
            pool = max(CANDIDATES, 4 * k)
            dense = dict((i, s) for s, i in self.index.nearest(q, pool))
            words = self.lexical.scores(query)
            for i in sorted(words, key=words.__getitem__, reverse=True)[:pool]:
                if i not in dense:
                    dense[i] = self.index.score(q, i)
            ranked = sorted(((s + LEXICAL_WEIGHT * words.get(i, 0.0), s, i) for i, s in dense.items()
                             if s >= self.min_score), reverse=True)[:k]
            if UNSPACED.search(query):  # Thai: the model reads no Thai (every passage looks alike); words decide
                ranked = sorted(((s, s, i) for i, s in words.items() if s >= self.min_score), reverse=True)[:k]
            found = [(score, similarity, self.index.payloads[i]) for score, similarity, i in ranked]
        hits = []
        for score, similarity, chunk in found:
            assert isinstance(chunk, Chunk)
            hit = {"title": chunk.title, "heading": chunk.heading, "snippet": chunk.text, "ref": chunk.ref,
                   "order": chunk.order, "score": round(score, 3), "similarity": round(similarity, 3)}
            if chunk.procedure:
                hit["procedure"] = chunk.procedure
            if chunk.lead:
                hit["lead"] = chunk.lead
            hits.append(hit)
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
