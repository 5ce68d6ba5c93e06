"""``python -m core import star``: a STAR task (flowchart + API schema) as workspace files of ours.

One task becomes, in the target workspace:

* ``sops/<task>.json``: the flowchart as a JSON node SOP. Asks keep the chart's node ids and
  questions and store the answer under a slot named after the API input it collects; queries
  call the task's tool with those slots; the chart's implicit branches become decision nodes
  (a query's result, a yes/no answer, a customer who cannot give what was asked);
* ``gar.csv`` rows: an ask for each API input, the query as an ``api_call`` with its params,
  every inform as a ``message_to_user`` (rows already there are kept; identical ones are not
  repeated);
* ``store.yaml``: an agent for the task's domain (``<domain>.*`` goals, the task's tool) and the
  tool, a Python function backed by the task's mock-DB spec (``star/<api>.py`` + ``.json``).

:func:`import_star_task` only computes the files (so the playground can stage, lint and commit
them through its checked save); :func:`write_import` writes them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.importers.star_flow import Ask, Flow, Query, read_flow
from core.importers.star_format import StarApi, StarTask, load_task
from core.importers.star_store import merge_store_yaml
from core.language import text as T
from core.shared.errors import Location, UserInputError
from core.workspace.gar_file import GAR_COLUMNS, normalise_action

STAR_PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")
CAPABILITY = re.compile(r"\bonly able to (.+?)[.!]*$", re.I | re.S)
TOOL_FILE = '''"""Mock of a STAR API, written by `python -m core import star` (the .json beside it holds the spec)."""

from pathlib import Path

from core.importers.star_api import MockApi

query = MockApi(Path(__file__).with_suffix(".json"))
'''


@dataclass
class ImportResult:
    """The workspace files an import would write, and what it understood of the chart.

    ``files`` maps workspace-relative POSIX paths to their complete new content (existing
    ``gar.csv`` and ``store.yaml`` are merged, not replaced). ``labels`` maps each SOP node that
    stands for a chart step to the chart's label for it (a tool node to ``"query"``).
    """

    task: str
    sop_id: str
    agent: str
    tool: str
    api: str
    files: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without file contents)."""
        return {"task": self.task, "sop_id": self.sop_id, "agent": self.agent, "tool": self.tool, "api": self.api,
                "files": sorted(self.files), "notes": self.notes}


def import_star_task(task_dir: str | Path, workspace: str | Path, *, api_file: str | Path | None = None,
                     task: StarTask | None = None) -> ImportResult:
    """The files importing a STAR task folder into a workspace would write (nothing is written).

    Args:
        task_dir: the task's folder (``tasks/<task>`` of a STAR checkout, holding ``<task>.json``).
        workspace: the target workspace; its ``gar.csv`` and ``store.yaml`` are merged when present.
        api_file: the task's API schema; by default found beside the flowchart or in ``../../apis/``.
        task: an already loaded task (then ``task_dir`` only names it).

    Raises:
        UserInputError: when a STAR file is missing or malformed, or the task has no API schema.
    """
    star = task or load_task(task_dir, api_file)
    if star.api is None:
        raise UserInputError("no API schema found for this task (looked for api.json beside it and "
                             f"apis/{star.name}.json); pass it with --api", Location(str(star.folder)))
    flow = read_flow(star)
    name, api = file_name(star.name), file_name(star.api.name)  # names from the folder: never code or paths
    agent = _slug(star.api.db or name.split("_")[0])
    rest = name[len(agent) + 1:] if name.startswith(f"{agent}_") else name
    sop_id, tool = f"{agent}.{rest}", f"{api}.query"
    root = Path(workspace)
    sop = build_sop(flow, sop_id, agent, tool)
    gar_text, gar_notes = merge_gar(_read(root / "gar.csv"), gar_rows(flow, tool))
    store_text, store_notes = merge_store_yaml(_read(root / "store.yaml"), agent, tool, _tool_decl(star.api, api))
    files = {f"sops/{name}.json": json.dumps(sop, indent=2, ensure_ascii=False) + "\n",
             "gar.csv": gar_text, "store.yaml": store_text,
             f"star/{api}.py": TOOL_FILE,
             f"star/{api}.json": json.dumps(star.api.to_json(), indent=2, ensure_ascii=False) + "\n"}
    labels = {a: a for a in flow.asks} | {m: m for m in flow.messages} | {q: "query" for q in flow.queries}
    if flow.nothing_found:
        labels[flow.nothing_found] = flow.nothing_found
    replaced = [f"{rel} already exists and is replaced" for rel in files
                if rel not in ("gar.csv", "store.yaml") and (root / rel).is_file() and _read(root / rel) != files[rel]]
    return ImportResult(name, sop_id, agent, tool, api, files, labels,
                        flow.notes + gar_notes + store_notes + replaced)


def write_import(result: ImportResult, workspace: str | Path) -> list[Path]:
    """Write an import's files into the workspace (folders created as needed); returns the paths."""
    root = Path(workspace)
    written = []
    for rel, content in result.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8-sig") if path.is_file() else None


def file_name(text: str) -> str:
    """A name from an imported folder or API file as a safe file stem and identifier: letters, digits and
    underscores only ("../../x", quotes or newlines never reach a path, generated code or YAML)."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "star"


def _slug(text: str) -> str:
    return "_".join(T.words(text.replace("-", " "))) or "star"


# ---------------------------------------------------------------------------- the SOP


def build_sop(flow: Flow, sop_id: str, agent: str, tool: str) -> dict[str, Any]:
    """The chart as a JSON node SOP (ARCHITECTURE.md §4)."""
    task = flow.task
    title = _title(task.name)
    nodes: dict[str, dict[str, Any]] = {}
    for ask in flow.asks.values():
        nodes[ask.id] = _ask_node(flow, ask, _after_ask(flow, ask, nodes))
    for q in flow.queries.values():
        nodes[q.id] = _query_node(flow, q, tool, _after_query(flow, q, nodes))
    for m in [*flow.messages, *([flow.nothing_found] if flow.nothing_found else [])]:
        verb = "Offer more help" if m in flow.offers else "Tell the customer"
        nodes[m] = {"id": m, "type": "action", "description": f"{verb}: {_flat(task.replies.get(m, m))}",
                    "messageTemplate": _template(flow, m), "nextNodes": [flow.next_of(m) or "end"]}
    nodes["end"] = {"id": "end", "type": "end", "description": "Done"}
    capability = _capability(task)
    about = re.sub(r"^help you(?: with)? ", "", capability, flags=re.I) or title
    return {"id": sop_id, "name": title, "description": about[:1].upper() + about[1:],
            "version": "1.0", "agent": agent, "priority": 1, "triggers": _triggers([task.name, task.alias], capability),
            "startNode": flow.start if flow.start in nodes else "end", "nodes": _ordered(nodes, flow.start)}


def _ordered(nodes: dict[str, dict[str, Any]], start: str) -> dict[str, dict[str, Any]]:
    """Nodes in reading order: depth first from the start, unreachable ones last."""
    order: list[str] = []
    todo = [start]
    while todo:
        nid = todo.pop(0)
        if nid in order or nid not in nodes:
            continue
        order.append(nid)
        todo = list(nodes[nid].get("nextNodes", [])) + todo
    return {n: nodes[n] for n in order + [n for n in nodes if n not in order]}


def _ask_node(flow: Flow, ask: Ask, nxt: str) -> dict[str, Any]:
    return {"id": ask.id, "type": "action", "description": _ask_description(ask),
            "messageTemplate": _template(flow, ask.id), "resultKey": ask.slot + ("?" if ask.optional else ""),
            "nextNodes": [nxt]}


def _ask_description(ask: Ask) -> str:
    """What a valid answer is, in words the engine types slots from (options, numbers, yes/no)."""
    if ask.yes_no or ask.field is None:
        return f"Ask the customer whether to {ask.slot.replace('_', ' ')} (yes or no)" if ask.yes_no else \
            f"Ask the customer for their {ask.slot.replace('_', ' ')}"
    f = ask.field
    label = f.label.lower()
    if f.categories:
        options = ", ".join(f.categories[:-1]) + (" or " if len(f.categories) > 1 else "") + f.categories[-1]
        return f"Ask the customer for the {label}, one of {options}"
    if f.type.lower() in ("integer", "int", "number"):
        span = f" from {f.minimum} to {f.maximum}" if f.minimum is not None and f.maximum is not None else ""
        counted = re.search(r"\bhow many \w+", ask.question, re.I)  # "for how many people" says what it counts
        unit = f" ({counted.group(0).lower()})" if counted else ""
        return f"Ask the customer for the {label}, a number{span}{unit}"
    if f.type.lower() == "longstring":
        return f"Ask the customer to describe the {label} in their own words"
    return f"Ask the customer for their {label}"


def _after_ask(flow: Flow, ask: Ask, nodes: dict[str, dict[str, Any]]) -> str:
    nxt = flow.next_of(ask.id) or "end"
    if ask.id in flow.answers:
        by = {o.kind: flow.next_of(o.id) or "end" for o in flow.answers[ask.id]}
        return _decision(nodes, f"if_{ask.slot}", f"Did the customer say yes to {ask.id}?",
                         f"context.{ask.slot} === true", by.get("yes", "end"), by.get("no", "end"))
    if ask.id in flow.unable:
        other = flow.next_of(flow.unable[ask.id].id) or "end"
        return _decision(nodes, f"if_{ask.slot}_given", f"Could the customer give their {ask.slot.replace('_', ' ')}?",
                         f"context.{ask.slot} != null", nxt, other)
    return nxt


def _after_query(flow: Flow, q: Query, nodes: dict[str, dict[str, Any]]) -> str:
    nxt = flow.next_of(q.id) or "end"
    outcomes = flow.results.get(q.id, [])
    if outcomes:
        by = {o.kind: flow.next_of(o.id) or "end" for o in outcomes}
        nxt = _decision(nodes, f"if_{q.id}_succeeded", f"Did {q.id} succeed?", f"context.{q.id}.success === true",
                        by.get("positive", "end"), by.get("negative", "end"))
    if flow.nothing_found:
        nxt = _decision(nodes, f"if_{q.id}_found", f"Did {q.id} find anything?", f"context.{q.id}.found === true",
                        nxt, flow.nothing_found)
    return nxt


def _decision(nodes: dict[str, dict[str, Any]], nid: str, desc: str, cond: str, yes: str, no: str) -> str:
    nodes[nid] = {"id": nid, "type": "decision", "description": desc, "condition": cond, "nextNodes": [yes, no]}
    return nid


def _query_node(flow: Flow, q: Query, tool: str, nxt: str) -> dict[str, Any]:
    """The query with every API input from its slot: those the chart asks for (required ones as it
    requires them), and the others as optional values the customer may give unasked ("a premium
    bike"), the slots of the GAR's ask rows."""
    api = flow.task.api
    assert api is not None
    asked = {a.field.name for a in flow.asks.values() if a.field is not None}
    slots = input_slots(flow)
    params: dict[str, str] = {}
    for f in api.inputs:
        if f.name in q.constants:
            params[f.name] = q.constants[f.name]
        else:
            params[f.name] = f"context.{slots[f.name]}" + ("" if f.name in api.required and f.name in asked else "?")
    return {"id": q.id, "type": "action", "description": f"Query {api.name}" + "".join(
        f" ({k} {v})" for k, v in q.constants.items()), "tool": tool, "toolParams": params, "resultKey": q.id,
        "nextNodes": [nxt]}


def _template(flow: Flow, node: str) -> str:
    """The chart's reply with ``{name:fmt}`` placeholders pointing at a query result field or a slot."""
    api = flow.task.api
    source = _upstream_query(flow, node)
    slots = {a.slot: a for a in flow.asks.values()}

    def sub(m: re.Match[str]) -> str:
        want = set(_words(m.group(1)))
        if api is not None and source is not None:
            best = max(api.outputs, key=lambda f: len(want & set(_words(f.name))), default=None)
            if best is not None and want & set(_words(best.name)):
                return f"{{context.{source}.{best.name}}}"
        slot = max(slots, key=lambda s: len(want & set(_words(s))), default=None)
        if slot is not None and want & set(_words(slot)):
            return f"{{context.{slot}}}"
        return "{" + m.group(1) + "}"

    return STAR_PLACEHOLDER.sub(sub, flow.task.replies.get(node, node.replace("_", " ")))


def _words(name: str) -> list[str]:
    from core.importers.star_format import split_camel

    return [T.singular(w) for w in T.words(split_camel(name))]


def _upstream_query(flow: Flow, node: str) -> str | None:
    """The last query from which a node can be reached (whose result its message may quote)."""
    found = None
    for q in flow.queries:
        seen, todo = set(), [q]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo += [flow.task.graph[n]] if n in flow.task.graph else []
            todo += [o.id for o in flow.results.get(n, [])]
        if node in seen and node != q:
            found = q
    return found


def _flat(text: str) -> str:
    return " ".join(text.split())


def _title(name: str) -> str:
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _capability(task: StarTask) -> str:
    """What the wizard says it can do ("I am only able to retrieve your bank balance"), if a reply says."""
    for reply in task.replies.values():
        m = CAPABILITY.search(reply.strip())
        if m:
            return " ".join(m.group(1).split())
    return ""


def _first_person(phrase: str) -> str:
    return re.sub(r"\byour\b", "my", re.sub(r"\byou\b", "me", phrase, flags=re.I), flags=re.I)


def _triggers(names: list[str], capability: str) -> list[str]:
    """Example requests: the task's names and what the chart says it does, in the customer's words
    ("help you with restaurant reservations" -> "I need help with restaurant reservations")."""
    out = []
    for human in (n.replace("_", " ") for n in names if n):
        out += [human, f"I need help with {human}"]
    cap = _first_person(capability)
    about = re.match(r"^help me with (.+)$", cap, re.I)
    if about:
        out += [about.group(1), f"I need help with {about.group(1)}"]
    elif cap:
        out += [cap, f"can you {cap}", f"please {cap}"]
    return list(dict.fromkeys(out))


# ---------------------------------------------------------------------------- GAR rows


def input_slots(flow: Flow) -> dict[str, str]:
    """The slot that holds each API input: the chart's ask for it, else one named after the input."""
    api = flow.task.api
    assert api is not None
    by_field = {a.field.name: a.slot for a in flow.asks.values() if a.field is not None}
    return {f.name: by_field.get(f.name) or _slug(f.label) for f in api.inputs}


def gar_rows(flow: Flow, tool: str) -> list[dict[str, str]]:
    """An ask per API input, the query per query node, an inform per message."""
    api = flow.task.api
    assert api is not None
    rows: list[dict[str, str]] = []
    by_field = {a.field.name: a for a in flow.asks.values() if a.field is not None}
    slot_of = input_slots(flow)
    for f in api.inputs:
        ask = by_field.get(f.name) or Ask(f.name, slot_of[f.name], f)
        rows.append(_row(f"ask user for {f.label.lower()}", "ask_user_input", _expects(ask), "", slot_of[f.name]))
    for ask in flow.asks.values():
        if ask.yes_no:
            rows.append(_row(f"ask user to {ask.slot.replace('_', ' ')}", "ask_user_input", "yes or no", "",
                             ask.slot))
    params = "|".join(slot_of[f.name] + ("" if f.name in api.required else "?") for f in api.inputs)
    for q in flow.queries.values():
        variant = "".join(f" {v.lower()}" for v in q.constants.values())
        rows.append(_row(f"query {api.name.replace('_', ' ')}{variant}", "api_call", "", tool, params))
    for m in [*flow.messages, *([flow.nothing_found] if flow.nothing_found else [])]:
        text = re.sub(r"\{context\.(?:\w+\.)?(\w+)\}", r"{\1}", _template(flow, m))
        rows.append(_row(m.replace("_", " "), "message_to_user", _flat(text), "", ""))
    return rows


def _expects(ask: Ask) -> str:
    """What a valid answer is, for the GAR row: the ask's description without "Ask the customer for"."""
    desc = _ask_description(ask)
    return re.sub(r"^Ask the customer (for |to )", "", desc).replace("their ", "your ")


def _row(action: str, kind: str, meta: str, api: str, params: str) -> dict[str, str]:
    return {"action": action, "action_type": kind, "user_interaction_metadata": meta, "api": api, "params": params}


def merge_gar(original: str | None, rows: list[dict[str, str]]) -> tuple[str, list[str]]:
    """The GAR with the new rows appended: identical rows are not repeated, a different row under a
    name already taken gets a numbered name. The original text is kept as it is."""
    notes: list[str] = []
    existing: dict[str, dict[str, str]] = {}
    if original and original.strip():
        for rec in csv.DictReader(io.StringIO(original)):
            action = (rec.get("action") or "").strip()
            if action:
                existing[normalise_action(action)] = {k: (rec.get(k) or "").strip() for k in GAR_COLUMNS}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(GAR_COLUMNS), lineterminator="\n")
    if not existing and not (original or "").strip():
        writer.writeheader()
    for row in rows:
        key = normalise_action(row["action"])
        n = 1
        while key in existing and existing[key] != row:
            n += 1
            row = {**row, "action": f"{row['action']} {n}"}
            key = normalise_action(row["action"])
        if key in existing:
            continue
        if n > 1:
            notes.append(f"gar.csv already has another {row['action'].rsplit(' ', 1)[0]!r}: added as {row['action']!r}")
        existing[key] = row
        writer.writerow(row)
    head = original or ""
    if head and not head.endswith("\n"):
        head += "\n"
    return head + out.getvalue(), notes


# ---------------------------------------------------------------------------- store.yaml


def _tool_decl(api: StarApi, file: str) -> dict[str, Any]:
    return {"description": f"{_title(file)} (mock of the STAR API, backed by its DB spec)",
            "params": [f.name + ("" if f.name in api.required else "?") for f in api.inputs],
            "python": f"star/{file}.py:query", "side_effects": False}
