"""Procedure sets: every workspace's conversation tests under a folder, counted per workspace.

A procedure set is a folder of workspaces that someone else wrote from a published policy, each with
its conversation tests (``<set>/workspace/`` and ``<set>/conversations/*.yaml``, or any layout where the
conversation files name their ``workspace:``). The report says, per set, how many conversations pass and,
for each one that fails, its first failing turn in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.evaluation.testing import FileResult, WorkspaceCache, collect, run_file
from core.shared.errors import UserInputError


@dataclass
class SetReport:
    """One procedure set: its conversations and how each went."""

    name: str
    folder: str
    results: list[FileResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def handoffs(self) -> int:
        """Conversations that went to a person."""
        return sum(r.handed_off for r in self.results)

    def failures(self) -> list[dict[str, Any]]:
        """Each failing conversation's first failing turn (or the error that stopped it)."""
        out: list[dict[str, Any]] = []
        for r in self.results:
            if r.passed:
                continue
            if r.error:
                out.append({"file": Path(r.file).name, "turn": 0, "user": "", "failure": r.error})
                continue
            i, turn = next((i, t) for i, t in enumerate(r.turns, start=1) if not t.passed)
            out.append({"file": Path(r.file).name, "turn": i, "user": turn.user,
                        "failure": turn.failures[0] if turn.failures else "failed"})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "folder": self.folder, "passed": self.passed, "total": self.total,
                "handoffs": self.handoffs, "failures": self.failures()}


def find_sets(folder: Path) -> list[tuple[str, list[Path]]]:
    """The procedure sets under ``folder``: each folder holding a ``conversations/`` folder (``folder``
    itself included), with its conversation files, in name order."""
    if not folder.is_dir():
        raise UserInputError(f"no such folder: {folder}")
    homes = sorted({p.parent for p in folder.rglob("conversations") if p.is_dir()} |
                   ({folder} if (folder / "conversations").is_dir() else set()))
    sets = [(home.name, collect([str(home / "conversations")])) for home in homes]
    sets = [(name, files) for name, files in sets if files]
    if not sets:
        raise UserInputError(f"{folder}: no conversations/ folder with .yaml files under it")
    return sets


def evaluate_procedures(folder: Path, progress: Callable[[int, int], None] | None = None) -> list[SetReport]:
    """Run every procedure set's conversations under ``folder`` (each file on fresh stores)."""
    sets = find_sets(folder)
    total = sum(len(files) for _, files in sets)
    cache = WorkspaceCache()
    reports: list[SetReport] = []
    done = 0
    for name, files in sets:
        report = SetReport(name, str(files[0].parent.parent))
        for f in files:
            report.results.append(run_file(f, None, cache))
            done += 1
            if progress is not None:
                progress(done, total)
        reports.append(report)
    return reports


def format_procedures(reports: list[SetReport]) -> str:
    """Per set: passed/total, then one line per failing conversation (file, turn, what the customer said,
    the first failure)."""
    lines: list[str] = []
    for r in reports:
        lines.append(f"{r.name}: {r.passed}/{r.total} passed" + (f", {r.handoffs} handed off" if r.handoffs else ""))
        for f in r.failures():
            said = f" {f['user']!r}" if f["user"] else ""
            where = f"turn {f['turn']}{said}" if f["turn"] else "error"
            lines.append(f"  FAIL {f['file']} {where}: {f['failure']}")
    passed, total = sum(r.passed for r in reports), sum(r.total for r in reports)
    lines.append(f"total: {passed}/{total} passed")
    lines.append(f"hand-off rate: {_handoffs(reports)}/{total} conversations went to a person "
                 f"({_handoffs(reports) / total if total else 0.0:.1%})")
    return "\n".join(lines)


def _handoffs(reports: list[SetReport]) -> int:
    return sum(r.handoffs for r in reports)


def procedures_report(reports: list[SetReport]) -> dict[str, Any]:
    """The ``--json`` form: overall counts and accuracy, and each set's."""
    passed, total = sum(r.passed for r in reports), sum(r.total for r in reports)
    return {"passed": passed, "total": total, "accuracy": passed / total if total else 0.0,
            "handoffs": _handoffs(reports), "handoff_rate": _handoffs(reports) / total if total else 0.0,
            "sets": [r.to_dict() for r in reports]}
