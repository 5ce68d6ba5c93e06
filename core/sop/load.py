"""Load and compile every SOP of a workspace."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from core.shared.errors import WorkspaceError
from core.shared.problems import Problem
from core.sop.graph import Node, Sop
from core.sop.parse_json import parse_json_sop
from core.sop.parse_text import GarResolver, parse_text_sop
from core.workspace.paths import read_text_file

log = logging.getLogger(__name__)


def compile_sop(source: str, file: str, fmt: str, resolver: GarResolver) -> tuple[Sop | None, list[Problem]]:
    """Compile one SOP from its source text; ``fmt`` is "text" or "json"."""
    default_id = Path(file).stem
    if not source.strip():
        return None, [Problem(file, 1, "error", "the SOP is empty")]
    try:
        if fmt == "json":
            sop, problems = parse_json_sop(source, file, default_id)
        else:
            sop, problems = parse_text_sop(source, file, resolver, default_id)
        if sop is not None and not any(p.severity == "error" for p in problems):
            problems += cycles_without_a_question(sop)
        if sop is not None and not any(p.severity == "error" for p in problems):
            problems += loops_without_exit(sop)
        return sop, problems
    except RecursionError:  # a safety net: nesting is bounded before this could happen
        return None, [Problem(file, 1, "error", "the SOP nests too deeply to compile")]
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the workspace from loading
        log.exception("compiling %s failed", file)
        return None, [Problem(file, 1, "error", f"the SOP cannot be compiled ({type(exc).__name__}: {exc}); "
                                                 "please report this file")]


def cycles_without_a_question(sop: Sop) -> list[Problem]:
    """An error for each cycle of steps the flow can reach in which no step waits for the customer: the flow
    would run its steps round and round in one turn (saying a message again and again). Named by its steps."""
    nodes = {nid: sop.nodes[nid] for nid in sop.reachable() if not sop.nodes[nid].asks}
    out: list[Problem] = []
    for ring in _rings(nodes):
        steps = sorted((nodes[nid] for nid in ring), key=lambda n: (n.line or 10**9, n.id))
        names = " -> ".join(repr(n.label) for n in steps[:6]) + (" ..." if len(steps) > 6 else "")
        out.append(Problem(sop.file, steps[0].line or 1, "error",
                           f"a cycle of steps that never waits for the customer: {names} (and back); the flow "
                           "would run them round and round in one turn. Add a question to the cycle, or go on to a "
                           "step outside it"))
    return out


def _rings(nodes: dict[str, Node]) -> list[list[str]]:
    """The cycles among ``nodes`` (following targets inside it): each strongly connected set of two or more,
    or a step going to itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    rings: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter([t for t in nodes[root].targets() if t in nodes]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            nid, targets = work[-1]
            step = next(targets, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on.add(step)
                    work.append((step, iter([t for t in nodes[step].targets() if t in nodes])))
                elif step in on:
                    low[nid] = min(low[nid], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[nid])
            if low[nid] == index[nid]:
                ring: list[str] = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    ring.append(top)
                    if top == nid:
                        break
                if len(ring) > 1 or nid in nodes[nid].targets():
                    rings.append(ring)
    return rings


def loops_without_exit(sop: Sop) -> list[Problem]:
    """A warning for steps the flow can reach but never leave: no path from them reaches an end (the
    agent would repeat them until its attempt limit ends the conversation)."""
    before: dict[str, list[str]] = {}
    for n in sop.nodes.values():
        for t in n.targets():
            before.setdefault(t, []).append(n.id)
    todo = [n.id for n in sop.nodes.values() if not n.targets()]  # the ends
    leads_out: set[str] = set(todo)
    while todo:  # back from the ends: every step from which one can be reached
        for prev in before.get(todo.pop(), []):
            if prev not in leads_out:
                leads_out.add(prev)
                todo.append(prev)
    stuck = [sop.nodes[nid] for nid in sop.reachable() if nid not in leads_out]
    if not stuck:
        return []
    first = min(stuck, key=lambda n: (n.line or 10**9, n.id))
    names = ", ".join(repr(n.label) for n in sorted(stuck, key=lambda n: n.line or 0)[:4])
    return [Problem(sop.file, first.line or 1, "warning",
                    f"a loop without an exit: from {names} no path reaches an end of the SOP; add a branch "
                    "that ends it (or goes on to a step that does)")]


def load_sops(files: list[Path], resolver: GarResolver) -> tuple[list[Sop], list[Problem]]:
    """Compile every SOP file; SOPs with errors are left out, problems say why."""
    sops: list[Sop] = []
    problems: list[Problem] = []
    ids: dict[str, str] = {}
    for path in files:
        rel = f"sops/{path.name}"
        try:
            source = read_text_file(path)
        except WorkspaceError as exc:
            problems.append(Problem(rel, exc.location.line if exc.location else 0, "error", exc.message))
            continue
        sop, found = compile_sop(source, rel, "json" if path.suffix == ".json" else "text", resolver)
        problems += found
        if sop is None or any(p.severity == "error" for p in found):
            continue
        if sop.id in ids:
            problems.append(Problem(rel, 1, "error", f"SOP id {sop.id!r} is already used by {ids[sop.id]}"))
            continue
        ids[sop.id] = rel
        sops.append(sop)
    called = resolve_calls(sops)
    problems += called
    failed = {p.file for p in called if p.severity == "error"}
    return [s for s in sops if s.file not in failed], problems


def resolve_calls(sops: list[Sop]) -> list[Problem]:
    """Each ``call`` step names another SOP of the workspace, by id or title ("call identity.verify", "call
    verify the customer's identity"); the step keeps its id. A name that is no SOP, an SOP calling itself, or
    a ring of calls is an error on the step's line."""
    by_name: dict[str, str] = {}
    for sop in sops:
        by_name[_name(sop.id)] = sop.id
        by_name.setdefault(_name(sop.title), sop.id)
    problems: list[Problem] = []
    for sop in sops:
        for node in sop.nodes.values():
            if not node.call:
                continue
            target = by_name.get(_name(node.call))
            if target is None:
                known = ", ".join(sorted(s.id for s in sops))
                problems.append(Problem(sop.file, node.line, "error", f"step {node.text!r} calls {node.call!r}, "
                                        f"which is no SOP here (SOPs: {known})"))
                continue
            node.call = target
    graph = calls_of(sops)
    for sop in sops:
        if sop.id in called_by(sop.id, graph):
            line = next((n.line for n in sop.nodes.values() if n.call), 1)
            problems.append(Problem(sop.file, line, "error", f"{sop.id} calls itself through its call steps "
                                    "(a ring of calls never ends)"))
    return problems


def _name(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def calls_of(sops: list[Sop]) -> dict[str, list[str]]:
    """Per SOP, the SOPs its ``call`` steps run, in step order."""
    return {s.id: [n.call for n in s.nodes.values() if n.call] for s in sops}


def called_by(start: str, calls: dict[str, list[str]]) -> list[str]:
    """The SOPs ``start`` calls, directly or through the SOPs it calls, in the order met (``start`` itself
    among them when the calls come back to it)."""
    out: list[str] = []
    todo = list(calls.get(start, ()))
    while todo:
        sid = todo.pop(0)
        if sid not in out:
            out.append(sid)
            todo += calls.get(sid, ())
    return out
