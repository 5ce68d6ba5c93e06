"""The checks of a loaded workspace that need its SOPs and tools together: unknown or forbidden tools, SOPs no
agent owns, declared slot types that cannot be used, inferred slot types (info), conditions that compare a slot
with a value its kind never holds, and JSON nodes that read a field nothing sets."""

from __future__ import annotations

from typing import Any

from core.engine.slot_typing import callees, comparisons
from core.shared.problems import Problem
from core.sop import Sop, expr
from core.sop.load import calls_of
from core.workspace.files import WorkspaceFiles
from core.workspace.slot_values import never_holds
from core.workspace.slots import SlotType, example_problem, type_label, type_problem


def cross_checks(files: WorkspaceFiles, sops: list[Sop], tools: dict[str, Any]) -> list[Problem]:
    """Tools a GAR row, the hand-off, an agent or a step names that do not exist (or that the step's agent may
    not call), SOPs no agent owns, and SOPs with no triggers that no other SOP calls."""
    out: list[Problem] = []
    called = {n.call for sop in sops for n in sop.nodes.values() if n.call}
    for row in files.gar:
        if row.api and row.api not in tools:
            out.append(Problem("gar.csv", row.line, "error", f"action {row.action!r}: unknown tool {row.api!r}"
                               f"{_mcp_hint(row.api, files, tools)}"))
    if files.config.handoff and files.config.handoff not in tools:
        out.append(Problem("store.yaml", 0, "error", f"handoff: unknown tool {files.config.handoff!r} (declare it "
                                                      "under tools:)"))
    for name, decl in files.config.agents.items():
        for tool in decl.tools:
            if tool not in tools:
                out.append(Problem("store.yaml", 0, "warning", f"agent {name!r} lists unknown tool {tool!r}"))
    for sop in sops:
        agent = files.config.agent_for(sop.id, sop.agent)
        if agent is None:
            out.append(Problem(sop.file, 1, "error", f"no agent owns {sop.id!r} (set 'agent' or add a goals "
                                                     "pattern in store.yaml)"))
            continue
        for node in sop.nodes.values():
            if node.tool and node.tool not in tools:
                out.append(Problem(sop.file, node.line, "error",
                                   f"step {node.label!r} uses unknown tool {node.tool!r}"
                                   f"{_mcp_hint(node.tool, files, tools)}"))
            elif node.tool and node.tool not in agent.tools:
                out.append(Problem(sop.file, node.line, "error", f"agent {agent.name!r} may not call {node.tool!r} "
                                                                 "(add it to its tools in store.yaml)"))
        if not sop.triggers and sop.id not in called:  # a procedure other SOPs call needs no triggers
            out.append(Problem(sop.file, 1, "warning", "no triggers: customers can only reach this SOP by its title"))
    return out


def _mcp_hint(name: str, files: WorkspaceFiles, tools: dict[str, Any]) -> str:
    """Which tools an MCP server lists, for an unknown tool named like one of its ('' without servers)."""
    if not files.config.mcp:
        return ""
    from core.tools.mcp_tools import unknown_tool_hint

    return unknown_tool_hint(name, files.config, tools)


def result_fields(sops: list[Sop], tools: dict[str, Any]) -> list[Problem]:
    """A JSON node that reads a key nothing sets, after a tool step, reads a field of that tool's result when
    the tool says it returns one (a table tool's columns: ``context.minutesLate`` after ``getOrderStatus``
    over an orders table); otherwise it is the problem the SOP's compiler found."""
    out: list[Problem] = []
    by_id, calls = {s.id: s for s in sops}, calls_of(sops)
    for sop in sops:
        reach = [sop, *(by_id[c] for c in callees(sop.id, calls))]  # a called SOP's values come back to its caller
        fields = {str(c) for s in reach for n in s.nodes.values() if n.tool
                  for c in getattr(getattr(tools.get(n.tool), "frame", None), "columns", [])}
        fields |= {name for s in reach[1:] for name in s.slot_names()}
        out += [problem for key, problem in sop.field_refs if key not in fields]
    return out


def type_checks(files: WorkspaceFiles, sops: list[Sop], columns: dict[str, list[str]] | None) -> list[Problem]:
    """Declared slot types that cannot be used (an inventory column that does not exist, an unknown type in
    an SOP's ``slots:``), and one slot declared as two different types in gar.csv."""
    out: list[Problem] = []
    first: dict[str, tuple[str, int]] = {}
    for row in files.gar:
        for p in row.params:
            if not p.type:
                continue
            why = type_problem(p.type, columns or {})
            if why and p.type.lower().startswith("column"):  # other bad types are reported with gar.csv itself
                out.append(Problem("gar.csv", row.line, "error", f"action {row.action!r}: slot {p.name!r}: {why}"))
            seen = first.setdefault(p.name, (p.type, row.line))
            if seen[0].replace(" ", "") != p.type.replace(" ", ""):
                out.append(Problem("gar.csv", row.line, "warning", f"slot {p.name!r} is declared {p.type!r} here "
                                   f"and {seen[0]!r} on line {seen[1]}; the first declaration is used"))
    for sop in sops:
        for name, spec in sop.slots.items():
            why = type_problem(spec, columns or {})
            if why:
                out.append(Problem(sop.file, sop.slots_line, "error", f"slots: {name!r}: {why}"))
    return out


def inferred_types(sops: list[Sop], types: dict[str, dict[str, SlotType]],
                   gar_source: str = "") -> list[Problem]:
    """An info line for every slot whose type was inferred, not declared: what it was read as and why; an
    error, at its line and column, for an author's example that does not pass its own slot's kind."""
    out: list[Problem] = []
    for sop in sops:
        own = set(sop.slot_names())  # the slots of SOPs it calls are reported where they are asked
        for name, st in types.get(sop.id, {}).items():
            if name not in own:
                continue
            why = example_problem(st)
            if why:
                out.append(_example_at(sop, name, st.example, gar_source, f"slot {name!r}: {why}"))
            if st.declared:
                continue
            line = next((n.line for n in sop.nodes.values() if any(p.name == name for p in n.fills + n.params)), 0)
            out.append(Problem(sop.file, line, "info",
                               f"slot {name!r} is read as {type_label(st)} ({st.origin}); declare it to change "
                               f"that: {name}:<type> in gar.csv params or slots: {{{name}: <type>}} in the SOP"))
    return out


def condition_values(sops: list[Sop], types: dict[str, dict[str, SlotType]]) -> list[Problem]:
    """A warning, at the condition's line, for each comparison of a slot with a value its kind never holds
    (``under_warranty == 'yes'`` for a yes/no slot, which holds true or false): that branch is never taken, or
    always."""
    out: list[Problem] = []
    for sop in sops:
        slots = types.get(sop.id, {})
        for node in sop.nodes.values():
            for branch in node.branches:
                cond = branch.condition
                if not cond or not (branch.expr or expr.is_expression(cond)):
                    continue
                try:
                    tree = expr.parse(cond)
                except expr.ExprError:
                    continue  # the compiler reports it
                for key, value in comparisons(tree):
                    st = slots.get(key)
                    why = never_holds(st, value) if st is not None else ""
                    if st is not None and why:
                        out.append(Problem(sop.file, _condition_line(sop, node.line, cond), "warning",
                                           f"condition {cond!r}: slot {key!r} is {type_label(st)} ({st.origin}); "
                                           f"{why}"))
    return out


def _condition_line(sop: Sop, first: int, cond: str) -> int:
    """The line a condition is written on: the first at or after its step's line that shows it."""
    lines = sop.source.splitlines()
    for no in range(max(first, 1), len(lines) + 1):
        if cond in lines[no - 1] or cond.replace('"', '\\"') in lines[no - 1]:
            return no
    return first


def _example_at(sop: Sop, name: str, example: str, gar_source: str, message: str) -> Problem:
    """An error placed where the example is written: the GAR row of the ask that fills ``name``, or the SOP
    line that shows it (its column, 1-based; 0 when the text is not found there)."""
    asks = [n for n in sop.nodes.values() if any(p.name == name for p in n.fills)]
    for node in asks:
        if node.gar is not None and gar_source:
            lines = gar_source.splitlines()
            text = lines[node.gar.line - 1] if 0 < node.gar.line <= len(lines) else ""
            if example in text:
                return Problem("gar.csv", node.gar.line, "error", message, column=text.index(example) + 1)
    for no, text in enumerate(sop.source.splitlines(), start=1):
        if example in text:
            return Problem(sop.file, no, "error", message, column=text.index(example) + 1)
    return Problem(sop.file, asks[0].line if asks else 0, "error", message)


def tool_users(files: WorkspaceFiles, sops: list[Sop], tool: str) -> list[tuple[str, int, str]]:
    """Where a tool is named: (file, line, what) for each GAR row, SOP step and agent that uses it."""
    out = [("gar.csv", row.line, f"action {row.action!r}") for row in files.gar if row.api == tool]
    out += [(sop.file, node.line, f"step {node.label!r}") for sop in sops for node in sop.nodes.values()
            if node.tool == tool]
    out += [("store.yaml", 0, f"agent {name!r}") for name, decl in files.config.agents.items() if tool in decl.tools]
    return out


def find_step(sops: list[Sop], text: str) -> tuple[str, int]:
    """The SOP file and line where a step's text appears (for a warning about it)."""
    for sop in sops:
        for no, line in enumerate(sop.source.splitlines(), start=1):
            if line.strip().rstrip(":") == text.strip():
                return sop.file, no
    return "sops", 0
