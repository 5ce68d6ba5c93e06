"""``python -m core eval kb QUESTIONS.yaml``: does the knowledge base answer with the right passage?

A question file names its workspace and lists questions, each with a phrase that only the passage
answering it contains::

    workspace: ../my_store          # relative to this file
    questions:
      - q: How long do refunds take?
        expect: 7-14 business days      # or a list: [7-14 business days, two weeks]

The score is the share of questions whose best passage contains the phrase (top-1), and whose three
best do (top-3); every miss is listed with what was found instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.language.render import render_kb_answer
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import Location, UserInputError
from core.shared.yamlsrc import load_with_lines


@dataclass
class KbQuestion:
    """One question, the phrase its answer contains, and where it is written."""

    q: str
    expect: list[str]  # phrases, any of which the answering passage contains
    line: int


@dataclass
class KbMiss:
    """A question whose best passage does not contain the expected phrase."""

    question: str
    expect: list[str]
    line: int
    found: list[dict[str, Any]]
    rank: int  # 1-based rank of the first passage with the phrase among the top 3, 0 when none has it


@dataclass
class KbReport:
    """Top-1 and top-3 hit rates over a question file."""

    file: str
    workspace: str
    questions: int
    top1: int
    top3: int
    answered: int = 0  # questions whose reply (render_kb_answer) contains the phrase
    misses: list[KbMiss] = field(default_factory=list)

    @property
    def top1_rate(self) -> float:
        return self.top1 / self.questions if self.questions else 0.0

    @property
    def answered_rate(self) -> float:
        return self.answered / self.questions if self.questions else 0.0

    @property
    def top3_rate(self) -> float:
        return self.top3 / self.questions if self.questions else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "workspace": self.workspace, "questions": self.questions,
                "top1": round(self.top1_rate, 4), "top3": round(self.top3_rate, 4),
                "answered": round(self.answered_rate, 4),
                "misses": [{"question": m.question, "expect": m.expect, "line": m.line, "rank": m.rank,
                            "found": [{"ref": h.get("ref"), "heading": h.get("heading"), "score": h.get("score"),
                                       "snippet": str(h.get("snippet", ""))[:160]} for h in m.found]}
                           for m in self.misses]}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _contains(text: str, phrases: list[str]) -> bool:
    flat = _norm(text)
    return any(_norm(p) in flat for p in phrases)


def read_questions(path: Path) -> tuple[Path, list[KbQuestion]]:
    """The workspace a question file names and its questions.

    Raises:
        UserInputError: the file is missing, not YAML, or a question lacks ``q`` or ``expect`` (with its line).
    """
    name = str(path)
    try:
        data, lines = load_with_lines(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserInputError(f"cannot read the question file: {exc.strerror}", Location(name)) from exc
    except UnicodeDecodeError as exc:
        raise UserInputError("not UTF-8 text", Location(name)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise UserInputError(f"not valid YAML: {getattr(exc, 'problem', exc)}",
                             Location(name, mark.line + 1 if mark else 0, mark.column + 1 if mark else 0)) from exc
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list) or not data["questions"]:
        raise UserInputError("expected a mapping with a non-empty 'questions' list", Location(name, 1))
    workspace = (path.parent / str(data.get("workspace") or ".")).resolve()
    out: list[KbQuestion] = []
    for i, item in enumerate(data["questions"]):
        line = lines.get(("questions", i), 0)
        expect = item.get("expect") if isinstance(item, dict) else None
        phrases = [str(e).strip() for e in (expect if isinstance(expect, list) else [expect]) if str(e or "").strip()]
        if not isinstance(item, dict) or not str(item.get("q") or "").strip() or not phrases:
            raise UserInputError(f"question {i + 1} needs a non-empty 'q' and 'expect' (a phrase or a list of them)",
                                 Location(name, line))
        out.append(KbQuestion(str(item["q"]).strip(), phrases, line))
    return workspace, out


def evaluate_kb(path: Path, embedder: CachedEmbedder | None = None) -> KbReport:
    """Ask every question of ``path`` to its workspace's knowledge base (see the module docstring).

    Raises:
        UserInputError: a bad question file, or a workspace without a knowledge base.
    """
    from core.engine.build import load_workspace

    root, questions = read_questions(path)
    kb = load_workspace(root, embedder).kb
    if kb is None:
        raise UserInputError(f"{root} has no knowledge base (no files in kb/)", Location(str(path), 1))
    report = KbReport(str(path), str(root), len(questions), 0, 0)
    for question in questions:
        hits = kb.search(question.q, 3)
        ranks = [i for i, h in enumerate(hits, start=1) if _contains(str(h.get("snippet", "")), question.expect)]
        rank = ranks[0] if ranks else 0
        report.top1 += rank == 1
        report.top3 += rank >= 1
        report.answered += bool(hits) and _contains(render_kb_answer(hits), question.expect)
        if rank != 1:
            report.misses.append(KbMiss(question.q, question.expect, question.line, hits, rank))
    return report


def format_kb_report(report: KbReport) -> str:
    """The report as text: the rates, then each miss with what came first."""
    out = [f"{report.file}: {report.questions} questions over {report.workspace}",
           f"  top-1 {report.top1_rate:.1%} ({report.top1}/{report.questions}), "
           f"top-3 {report.top3_rate:.1%} ({report.top3}/{report.questions}); the reply contains the answer: "
           f"{report.answered_rate:.1%} ({report.answered}/{report.questions})"]
    for miss in report.misses:
        first = miss.found[0] if miss.found else {}
        where = f"{first.get('ref')} ({first.get('score')})" if first else "nothing above the minimum score"
        out.append(f"  line {miss.line}: {miss.question!r} expected {' or '.join(map(repr, miss.expect))}"
                   f"{f' (rank {miss.rank})' if miss.rank else ''}; first: {where}: "
                   f"{str(first.get('snippet', ''))[:100]!r}")
    return "\n".join(out)
