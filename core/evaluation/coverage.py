"""Step coverage: which steps of each SOP the conversation tests reach, and how many tests reach each.

A step is one node of the compiled SOP graph that the graph drawing shows (those reachable from the start).
A test reaches a step when one of its turns visited it: the trace's ``path`` lists the nodes each turn
visited, per SOP.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.engine.build import Workspace
from core.evaluation.testing import FileResult
from core.sop.graph import Node, Sop


@dataclass
class StepCoverage:
    """One step and how many tests reached it."""

    id: str
    label: str
    kind: str
    line: int  # where the step is written (0 when the SOP does not say)
    tests: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "kind": self.kind, "line": self.line, "tests": self.tests}


@dataclass
class SopCoverage:
    """The steps of one SOP of one workspace, in the order they are written."""

    workspace: str
    id: str
    title: str
    file: str  # relative to the workspace
    steps: list[StepCoverage]
    sop: Sop | None = field(default=None, repr=False, compare=False)  # for drawing the graph

    @property
    def reached(self) -> int:
        return sum(1 for s in self.steps if s.tests)

    @property
    def percent(self) -> float:
        return 100.0 * self.reached / len(self.steps) if self.steps else 100.0

    @property
    def unreached(self) -> list[StepCoverage]:
        return [s for s in self.steps if not s.tests]

    def counts(self) -> dict[str, int]:
        """Step id -> how many tests reached it."""
        return {s.id: s.tests for s in self.steps}

    def where(self, step: StepCoverage) -> str:
        """``file:line`` of a step (the file alone when the step carries no line)."""
        return f"{self.file}:{step.line}" if step.line else self.file

    def as_dict(self) -> dict[str, Any]:
        return {"workspace": self.workspace, "sop": self.id, "title": self.title, "file": self.file,
                "reached": self.reached, "steps": len(self.steps), "percent": round(self.percent, 1),
                "nodes": [s.as_dict() for s in self.steps], "unreached": [s.id for s in self.unreached]}


def step_label(node: Node) -> str:
    """A step as the graph names it: the GAR action or node id, a decision's first condition, or ``end``."""
    if node.kind == "end":
        return "end"
    if node.kind == "decision" and node.label == node.id:
        first = next((b.condition for b in node.branches if b.condition), "")
        return f"{first}?" if first else node.id
    return node.label


def reached_by_tests(results: Iterable[FileResult]) -> Counter[tuple[str, str, str]]:
    """(workspace, SOP id, node id) -> how many of the tests visited that node in any of their turns."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for r in results:
        if not r.workspace:
            continue
        counts.update({(r.workspace, str(p.get("sop", "")), str(p.get("node", "")))
                       for t in r.turns for p in t.trace.get("path") or []})
    return counts


def sop_coverage(sop: Sop, workspace: str, counts: Mapping[tuple[str, str, str], int]) -> SopCoverage:
    """One SOP's steps with the number of tests reaching each."""
    shown = sop.reachable()
    order = {nid: i for i, nid in enumerate(sop.walk(depth_first=False))}
    ids = [nid for nid in sop.nodes if nid in shown or counts.get((workspace, sop.id, nid), 0)]
    ids.sort(key=lambda nid: (sop.nodes[nid].line or 10**9, order.get(nid, len(order))))
    steps = [StepCoverage(nid, step_label(sop.nodes[nid]), sop.nodes[nid].kind, sop.nodes[nid].line,
                          counts.get((workspace, sop.id, nid), 0)) for nid in ids]
    return SopCoverage(workspace, sop.id, sop.title or sop.id, sop.file, steps, sop)


def step_coverage(results: list[FileResult], workspaces: Mapping[str, Workspace]) -> list[SopCoverage]:
    """Every SOP of every workspace the tests ran on (``workspaces``: the loaded workspace of each folder
    named by a result's ``workspace``), with the tests reaching each of its steps."""
    counts = reached_by_tests(results)
    out: list[SopCoverage] = []
    for root in dict.fromkeys(r.workspace for r in results if r.workspace):
        ws = workspaces.get(root)
        if ws is not None:
            out += [sop_coverage(s, root, counts) for s in sorted(ws.sops, key=lambda s: (s.file, s.id))]
    return out


def overall(found: list[SopCoverage]) -> tuple[int, int, float]:
    """Steps reached, steps in all, and the percentage reached, over several SOPs."""
    reached = sum(c.reached for c in found)
    total = sum(len(c.steps) for c in found)
    return reached, total, (100.0 * reached / total if total else 100.0)


def step_coverage_of_sessions(reached: Mapping[tuple[str, str], int], workspace: Workspace,
                              root: str) -> list[SopCoverage]:
    """Every SOP of a workspace with the number of evaluation sessions that reached each step (``reached``:
    (SOP id, step id) -> sessions, as the synthetic evaluation counts them)."""
    counts = {(root, sop, node): n for (sop, node), n in reached.items()}
    return [sop_coverage(s, root, counts) for s in sorted(workspace.sops, key=lambda s: (s.file, s.id))]
