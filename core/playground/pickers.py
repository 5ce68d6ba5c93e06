"""What the SOP canvas offers to pick from, read from the workspace: GAR actions by kind of step, tools with
their parameters, slots with their kinds, agents, SOPs to call, knowledge-base articles, and the values a
condition can compare (slots, tool results and their fields, with the values a table holds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.engine.build import Workspace
from core.language import text as T
from core.sop import Node, Sop
from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.model import Canvas, Format
from core.tools.kb import KB_TOOL
from core.workspace.gar import GarIndex
from core.workspace.gar_file import GarRow
from core.workspace.slot_values import ValueChoice, values_of
from core.workspace.slots import SlotType, declared_type, infer_type, type_problem

MAX_VALUES = 30  # values of a table column offered to a condition


@dataclass(frozen=True)
class ToolChoice:
    """A tool a step may call, and what it takes."""

    name: str
    description: str
    params: list[str]
    optional: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SlotChoice:
    """A slot and what it holds: its declared kind, else the one read from its name and question."""

    name: str
    kind: str
    origin: str
    options: tuple[str, ...] = ()  # the values it takes, when its kind lists them
    values: ValueChoice = ValueChoice("free")  # what a condition may compare it with


@dataclass
class Pickers:
    """Everything the canvas's side form offers, from one workspace (and the SOP being edited)."""

    actions: dict[str, list[str]]  # canvas kind -> GAR actions fit for it (text SOPs)
    gar: dict[str, GarRow]  # action -> its row (what a picked action asks, calls or says)
    tools: list[ToolChoice]
    slots: list[SlotChoice]
    agents: list[str]
    agent_tools: dict[str, list[str]]  # each agent's tools (the permission matrix)
    sops: list[tuple[str, str]]  # (id, title) of the SOPs a step may call
    articles: list[tuple[str, str]]  # (file, title) of the knowledge-base articles
    values: dict[str, list[str]]  # what a condition can read -> values it is known to take (may be empty)

    def tool(self, name: str) -> ToolChoice | None:
        """A tool by name."""
        return next((t for t in self.tools if t.name == name), None)

    def compare_with(self, name: str) -> ValueChoice:
        """What a condition may compare ``name`` with: a slot's values by its kind (true/false, a choice's
        options, a number, a date), else free text with the values it is known to take."""
        slot = next((s for s in self.slots if s.name == name), None)
        if slot is not None:
            return slot.values
        return ValueChoice("free", tuple(self.values.get(name, [])))

    def tools_for(self, agent: str) -> list[ToolChoice]:
        """The tools an agent may call (every tool when the agent is not known)."""
        allowed = self.agent_tools.get(agent)
        return self.tools if allowed is None else [t for t in self.tools if t.name in allowed]


def pickers(ws: Workspace, sop: Sop | None = None) -> Pickers:
    """The canvas's choices in workspace ``ws``; ``sop`` (the SOP being edited, when it compiles) adds its own
    slots and the results of its tool steps."""
    rows = ws.files.gar
    actions = {
        "ask": [r.action for r in rows if r.has("ask_user_input")],
        "tool": [r.action for r in rows if r.has("api_call") or r.has("external_knowledge")],
        "message": [r.action for r in rows if r.has("message_to_user") and not r.has("ask_user_input")],
    }
    tools = [_tool(name, obj) for name, obj in sorted(ws.tools.items())]
    agents = sorted(ws.files.config.agents)
    agent_tools = {name: list(a.tools) for name, a in ws.files.config.agents.items()}
    own = sop.id if sop is not None else ""
    sops = [(s.id, s.title) for s in ws.sops if s.id != own]
    articles = _articles(ws)
    slots = _slots(ws, sop)
    values: dict[str, list[str]] = {s.name: list(s.values.options or s.options) for s in slots}
    if sop is not None:
        for node in sop.nodes.values():
            if not node.tool:
                continue
            names = {node.result_key} if sop.format == "json" else {_result_name(node)}
            frame = getattr(ws.tools.get(node.tool), "frame", None)
            columns = [str(c) for c in getattr(frame, "columns", [])]
            for name in sorted(names):
                values.setdefault(name, [])
                for col in columns:
                    seen = [str(v) for v in frame[col].dropna().unique()[:MAX_VALUES]] if frame is not None else []
                    values.setdefault(f"{name}.{col}", seen)
    return Pickers(actions, {r.action: r for r in rows}, tools, slots, agents, agent_tools, sops, articles, values)


def canvas_for(ws: Workspace, source: str, rel: str) -> Canvas:
    """The canvas of an SOP file's source, its text steps matched against the workspace's GAR."""
    fmt: Format = "json" if rel.endswith(".json") else "text"
    return open_canvas(source, fmt, rel, GarIndex(ws.files.gar, ws.embedder))


def _result_name(node: Node) -> str:
    """What a text SOP's conditions call a tool step's result: the thing its tool is named after
    (``orders.lookup`` -> ``order``) when the step's words allow it, else ``result``."""
    names = node.result_names()
    lead = T.singular(node.tool.split(".")[0].replace("_", " ").split()[-1]) if node.tool else ""
    return lead if lead in names else "result"


def _tool(name: str, obj: object) -> ToolChoice:
    spec = getattr(obj, "spec", None)
    params = list(getattr(spec, "params", []) or [])
    return ToolChoice(name, str(getattr(spec, "description", "") or ""), [p.name for p in params],
                      [p.name for p in params if p.optional])


def _slots(ws: Workspace, sop: Sop | None) -> list[SlotChoice]:
    out: dict[str, SlotChoice] = {}
    ordered = ([ws.types.get(sop.id, {})] if sop is not None else []) + [ws.types.get(s.id, {}) for s in ws.sops]
    for types in ordered:
        for name, st in types.items():
            if name not in out:
                out[name] = _choice(st, st.declared or st.kind, st.origin)
    for row in ws.files.gar:
        for p in row.params:
            if p.name not in out:
                expects = row.metadata if row.has("ask_user_input") else ""
                if p.type and not type_problem(p.type, None):
                    out[p.name] = _choice(declared_type(p.name, p.type, expects, ws.vocab), p.type,
                                          "declared in gar.csv")
                else:
                    st = infer_type(p.name, expects, ws.vocab)
                    out[p.name] = _choice(st, st.kind, "inferred from its name and question")
    return sorted(out.values(), key=lambda s: s.name)


def _choice(st: SlotType, kind: str, origin: str) -> SlotChoice:
    values = values_of(st)
    return SlotChoice(st.name, kind, origin, tuple(st.vocab[:MAX_VALUES]),
                      ValueChoice(values.mode, values.options[:MAX_VALUES], values.kind))


def _articles(ws: Workspace) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in ws.files.kb_files():
        rel = path.relative_to(ws.files.root).as_posix()
        title = Path(rel).stem.replace("_", " ").replace("-", " ").capitalize()
        try:
            first = next((ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("# ")), "")
        except (OSError, UnicodeDecodeError):
            first = ""
        out.append((rel, first[2:].strip() or title))
    return out


__all__ = ["KB_TOOL", "Pickers", "SlotChoice", "ToolChoice", "canvas_for", "pickers"]
