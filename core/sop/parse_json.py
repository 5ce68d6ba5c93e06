"""Compile a JSON node SOP (the engine note's schema) into a graph."""

from __future__ import annotations

import difflib
import functools
import json
import re
import sys
from typing import Any

from core.shared.problems import Problem
from core.sop import expr, expr_templates
from core.sop.fields import text, text_list, text_map, whole_number
from core.sop.graph import Branch, Node, Sop, reachable
from core.workspace.params import Param

PLACEHOLDER = expr_templates.TEMPLATE_REF
WHOLE_REF = re.compile(r"^\{\s*(?:context\.)?([A-Za-z_][\w.]*)\s*(\?)?\s*\}$")  # "{context.order_id}": the value itself
NODE_KEYS = {"id", "type", "description", "tool", "toolParams", "messageTemplate", "nextNodes",
             "condition", "resultKey", "call"}
ASK_WORDS = re.compile(r"^\s*(ask|request|collect|get)\b", re.I)
CONFIRM_WORDS = re.compile(r"^\s*confirm\b", re.I)  # asks when its message asks (or it has none), else tells
TELL_WORDS = re.compile(r"^\s*(tell|inform|say|notify|show|offer)\b", re.I)  # a message, even one ending in "?"


def _line(source: str, key: str) -> int:
    """The line where ``"key":`` first appears (0 when it does not): one pass over the file for all keys,
    so finding the lines of many nodes stays linear in the file's size."""
    return _key_lines(source).get(key, 0)


KEY = re.compile(r'"((?:[^"\\\n]|\\.)*)"\s*:')


@functools.lru_cache(maxsize=8)
def _key_lines(source: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    line, seen = 1, 0
    for m in KEY.finditer(source):
        line += source.count("\n", seen, m.start())
        seen = m.start()
        lines.setdefault(m.group(1), line)
    return lines


def parse_json_sop(source: str, file: str, default_id: str) -> tuple[Sop | None, list[Problem]]:
    """Compile a JSON SOP; returns the SOP (None when it cannot be built) and problems."""
    try:  # a byte-order mark some editors write is not part of the JSON
        data = json.loads(source.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        return None, [Problem(file, exc.lineno, "error", f"JSON syntax: {exc.msg}", exc.colno)]
    except ValueError as exc:  # a number too long to read (Python's limit on integer digits)
        line, column = _long_number(source)
        return None, [Problem(file, line, "error", f"a number here is too long to read ({exc})", column)]
    if not isinstance(data, dict):
        return None, [Problem(file, 1, "error", "a JSON SOP must be an object with startNode and nodes")]
    problems: list[Problem] = []
    raw_nodes = data.get("nodes")
    if "nodes" not in data:
        near = difflib.get_close_matches("nodes", [str(k) for k in data], n=1, cutoff=0.6)
        return None, [Problem(file, _near_key_line(source, data, "nodes") or _last_line(source), "error",
                              "the SOP has no 'nodes'" + (f" (is {near[0]!r} meant to be it?)" if near else ""))]
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        return None, [Problem(file, _line(source, "nodes") or 1, "error", "'nodes' must be a non-empty object")]
    nodes: dict[str, Node] = {}
    for nid, raw in raw_nodes.items():
        node = _node(str(nid), raw, source, file, problems)
        if node:
            nodes[node.id] = node
    start_line = _line(source, "startNode") or _near_key_line(source, data, "startNode") or 1
    start = text(data.get("startNode"), "startNode", file, start_line, problems)
    if start not in nodes:
        problems.append(Problem(file, start_line, "error", f"startNode {start!r} is not a node" if "startNode" in data
                                else "the SOP has no startNode (the id of its first node)"))
        return None, problems
    _check_targets(nodes, source, file, problems)
    _asks_before_decisions(nodes)
    _infer_fills(nodes)
    field_refs = _check_refs(nodes, file, problems)
    def line(key: str) -> int:
        return _line(source, key) or 1

    sop = Sop(id=text(data.get("id"), "id", file, line("id"), problems) or default_id,
              title=text(data.get("name"), "name", file, line("name"), problems) or default_id,
              agent=text(data.get("agent"), "agent", file, line("agent"), problems),
              priority=whole_number(data.get("priority"), 1, "priority", file, line("priority"), problems),
              triggers=text_list(data.get("triggers"), "triggers", file, line("triggers"), problems),
              description=text(data.get("description"), "description", file, line("description"), problems),
              file=file, format="json", start=start, nodes=nodes, source=source,
              slots=text_map(data.get("slots"), "slots", file, line("slots"), problems), slots_line=line("slots"),
              field_refs=field_refs)
    _check_reachability(sop, source, file, problems)
    return sop, problems


def _long_number(source: str) -> tuple[int, int]:
    """Line and column of the first run of digits too long for Python to read as an integer."""
    found = re.search(r"\d{%d,}" % (sys.get_int_max_str_digits() or 4300), source)
    if found is None:
        return 1, 0
    before = source[:found.start()]
    return before.count("\n") + 1, found.start() - (before.rfind("\n") + 1) + 1


def _near_key_line(source: str, data: dict[str, Any], key: str) -> int:
    """The line of a top-level key spelt nearly like ``key`` ("startnode", "nods"), 0 when none is."""
    near = difflib.get_close_matches(key, [str(k) for k in data if k != key], n=1, cutoff=0.6)
    return _line(source, near[0]) if near else 0


def _last_line(source: str) -> int:
    """The number of the file's last line with text (where something missing would have been written)."""
    return source.rstrip().count("\n") + 1


def _node(nid: str, raw: Any, source: str, file: str, problems: list[Problem]) -> Node | None:
    line = _line(source, nid)
    if not isinstance(raw, dict):
        problems.append(Problem(file, line, "error", f"node {nid!r} must be an object"))
        return None
    for key in raw:
        if key not in NODE_KEYS:
            problems.append(Problem(file, line, "warning", f"node {nid!r}: unknown key {key!r}"))
    kind = raw.get("type")
    if kind not in ("action", "decision", "end", "handoff"):
        problems.append(Problem(file, line, "error", f"node {nid!r}: type must be action, decision, handoff or "
                                                      f"end, got {kind!r}"))
        return None
    nxt = text_list(raw.get("nextNodes"), f"node {nid!r}: nextNodes", file, line, problems)
    desc = text(raw.get("description"), f"node {nid!r}: description", file, line, problems)
    template = text(raw.get("messageTemplate"), f"node {nid!r}: messageTemplate", file, line, problems)
    if kind == "handoff":  # the team takes it from here: the store's hand-off tool is called, the goal ends
        if nxt:
            problems.append(Problem(file, line, "warning", f"handoff {nid!r}: nextNodes are never taken (the "
                                                            "procedure ends with the hand-off)"))
        return Node(nid, "action", desc or "hand off to a person", line, message=template,
                    kinds=frozenset({"handoff"}))
    node = Node(nid, kind, desc, line, message=template, result_key=str(raw.get("resultKey") or nid))
    if kind == "decision":
        return _decision(node, raw, nxt, file, problems)
    if kind == "end":
        return node
    if len(nxt) > 1:
        problems.append(Problem(file, line, "warning", f"action {nid!r} has several nextNodes; the first is used"))
    node.next = nxt[0] if nxt else None
    if not nxt:
        problems.append(Problem(file, line, "error", f"action {nid!r} has no nextNodes (add an end node)"))
    _action_kinds(node, raw, template, desc)
    return node


def _decision(node: Node, raw: dict[str, Any], nxt: list[str], file: str, problems: list[Problem]) -> Node | None:
    cond = text(raw.get("condition"), f"decision {node.id!r}: condition", file, node.line, problems)
    if len(nxt) != 2 or not cond:
        problems.append(Problem(file, node.line, "error",
                                f"decision {node.id!r} needs a condition and exactly two nextNodes"))
        return None
    try:
        expr.parse(cond)
    except expr.ExprError as exc:
        problems.append(Problem(file, node.line, "error", f"decision {node.id!r}: {exc}", exc.column))
        return None
    node.branches = [Branch(cond, nxt[0], expr=True), Branch(None, nxt[1], expr=True)]
    return node


def _action_kinds(node: Node, raw: dict[str, Any], template: str, desc: str) -> None:
    if raw.get("call"):  # {"call": "identity.verify"}: run that SOP, then come back to nextNodes
        node.call = str(raw["call"]).strip()
        node.kinds = frozenset({"call"})
        return
    tool = str(raw.get("tool") or "")
    kinds: set[str] = set()
    if tool:
        kinds.add("api_call")
        node.tool = tool
        _tool_params(node, raw.get("toolParams") or {})
        if template:
            kinds.add("message_to_user")
    # "Confirm the stay" with a statement tells; with a question (or no message) it asks
    elif (template.rstrip().endswith("?") and not TELL_WORDS.match(desc)) or ASK_WORDS.match(desc) \
            or (CONFIRM_WORDS.match(desc) and (not template or "?" in template)):
        kinds.add("ask_user_input")
        node.message = template
        node.expects = expected_answer(desc, template)
        if raw.get("resultKey"):  # an ask's resultKey: the context key its answer is stored under
            key = str(raw["resultKey"]).strip()  # "city?": an optional answer, not asked for when unknown
            node.fills = [Param(key.rstrip("?"), key.endswith("?"))]
    else:
        kinds.add("message_to_user")
        node.message = template or desc
    node.kinds = frozenset(kinds)


def _tool_params(node: Node, raw: Any) -> None:
    """``toolParams``: a ``context.*`` value is a required slot; with a ``?`` suffix it is optional
    (left out of the call while unknown, as ``?`` in gar.csv params); anything else is a constant."""
    node.arg_map, node.params = {}, []
    for key, value in (raw.items() if isinstance(raw, dict) else []):
        src = str(value).strip()
        whole = WHOLE_REF.match(src)
        if whole:  # "{context.order_id}" and "{order_id}" are the value itself, as "context.order_id" is
            src = f"context.{whole.group(1)}" + ("?" if whole.group(2) else "")
        optional = src.startswith("context.") and src.endswith("?")
        src = src[:-1] if optional else src
        node.arg_map[str(key)] = src
        if src.startswith("context."):
            node.params.append(Param(expr.strip_context(src), optional))
        else:  # "Refund for {order_id}": a text with values in it, each one needed
            node.params += [Param(ref) for ref in PLACEHOLDER.findall(src) if ref not in {p.name for p in node.params}]


ASKED_FOR = re.compile(r"^\s*(?:ask|request|collect|get|confirm)\s+(?:the\s+)?(?:customer|user|seller|buyer|them)?\s*"
                       r"(?:for|to provide|to give|to share|to enter|about|whether|if)?\s*", re.I)
EXAMPLE = re.compile(r"\b(?:like|e\.g\.|for example|such as)\s+([A-Z][\w-]*\d[\w-]*)")


def expected_answer(desc: str, template: str) -> str:
    """What a valid answer is, for a JSON ask: "your order id like ORD-10021" from the node's
    description ("Ask the customer for their order id") and the example its question gives."""
    phrase = ASKED_FOR.sub("", desc).strip().rstrip(".")
    phrase = re.sub(r"^(their|his|her|the)\b", "your", phrase, flags=re.I) or desc
    example = EXAMPLE.search(template)
    return f"{phrase} like {example.group(1)}" if example else phrase


CONTEXT_REF = re.compile(r"\{context\.([\w.]+)\}")


def node_refs(node: Node, *, bare: bool = True) -> list[str]:
    """Context keys a node reads (tool params, templates, conditions); ``bare=False``: in its message only
    the ``{context.x}`` form (what an ask before it is taken to fill)."""
    keys = [p.name for p in node.params]
    keys += (PLACEHOLDER if bare else CONTEXT_REF).findall(node.message)
    for b in node.branches:
        if b.condition and b.expr:
            keys += expr.paths(expr.parse(b.condition))
    return [k for i, k in enumerate(keys) if k not in keys[:i]]


def _asks_before_decisions(nodes: dict[str, Node]) -> None:
    """The engine note's form: a message that asks something ("Would you like me to cancel it?") followed by a
    decision on a key nothing else sets (``context.customerWantsCancellation == true``) is the question that
    key answers. It becomes an ask filling the key; a key compared with true or false is a yes or a no."""
    tool_keys = {n.result_key for n in nodes.values() if n.tool}
    filled = {p.name for n in nodes.values() for p in n.fills}
    for node in nodes.values():
        nxt = nodes.get(node.next or "")
        if node.kind != "action" or node.tool or node.asks or nxt is None or nxt.kind != "decision":
            continue
        conditions = [b.condition for b in nxt.branches if b.condition and b.expr]
        keys = [k for c in conditions for k in expr.paths(expr.parse(c))
                if k.split(".")[0] not in tool_keys and k not in filled]
        if not keys:
            continue
        yes_no = any(expr.compares_with_boolean(expr.parse(c), keys[0]) for c in conditions)
        if not (yes_no or "?" in node.message):
            continue
        node.kinds = frozenset({"ask_user_input"})
        node.fills = [Param(keys[0])]
        node.expects = "yes or no" if yes_no else expected_answer(node.text, node.message)


def _infer_fills(nodes: dict[str, Node]) -> None:
    """An ask fills the keys read downstream that no tool sets."""
    tool_keys = {n.result_key for n in nodes.values() if n.tool}
    for node in nodes.values():
        if not node.asks or node.fills:  # fills already set by the ask's resultKey
            continue
        fills: list[str] = []
        seen: set[str] = set()
        todo = [t for t in node.targets()]
        while todo:
            nid = todo.pop(0)
            if nid in seen or nid not in nodes:
                continue
            seen.add(nid)
            nxt = nodes[nid]
            for key in node_refs(nxt, bare=False):
                if key.split(".")[0] not in tool_keys and key not in fills:
                    fills.append(key)
            if fills:
                break
            if not nxt.asks:
                todo.extend(nxt.targets())
        node.fills = [Param(k) for k in fills]
    _one_ask_per_key(nodes)
    _closing_questions(nodes)


def _closing_questions(nodes: dict[str, Node]) -> None:
    """A question that fills nothing and leads only to the end ("Thanks! Is there anything else I can help
    you with?") closes the goal: it is said, and the goal ends; what the customer says next is a new message
    to the session, not an answer the goal waits for."""
    for node in nodes.values():
        targets = node.targets()
        if node.asks and not node.fills and not node.tool and targets \
                and all(nodes.get(t) is not None and nodes[t].kind == "end" for t in targets):
            node.kinds = frozenset({"message_to_user"})


def _one_ask_per_key(nodes: dict[str, Node]) -> None:
    """A key an ask alone fills is not also filled by a later ask whose next message merely repeats it
    ("Order {order_id} has ...: what is the reason?" asks for the reason, not the order again)."""
    asks = [n for n in nodes.values() if n.asks]
    sole = {n.fills[0].name for n in asks if len(n.fills) == 1}
    for node in asks:
        if len(node.fills) > 1:
            kept = [p for p in node.fills if p.name not in sole]
            if kept and len(kept) < len(node.fills):
                node.fills = kept


def _check_refs(nodes: dict[str, Node], file: str, problems: list[Problem]) -> list[tuple[str, Problem]]:
    """A value a node reads (toolParams, messageTemplate, condition) must be something a step asks for or
    a tool step's result (``resultKey``, or the node id): else the goal would wait for it forever. A key read
    after a tool step may be a field of that tool's result (the engine note's ``context.minutesLate``): those
    problems are returned with their key, for the workspace to decide once it knows the tools."""
    known = {n.result_key for n in nodes.values() if n.tool} | {p.name.split(".")[0] for n in nodes.values()
                                                                  for p in n.fills}
    after_tool = {t for n in nodes.values() if n.tool or n.call for t in reachable(nodes, n.targets())}
    pending: list[tuple[str, Problem]] = []
    for node in nodes.values():
        optional = {p.name for p in node.params if p.optional}  # left out of the call while unknown
        needed = {p.name for p in node.params} | {r for b in node.branches if b.condition and b.expr
                                                  for r in expr.paths(expr.parse(b.condition))}
        for ref in node_refs(node):
            if ref.split(".")[0] in known or ref in optional:
                continue
            blocking = ref in needed  # a tool input or a condition waits for it; a message shows it unfilled
            problem = Problem(file, node.line, "error" if blocking else "warning",
                              f"node {node.id!r} reads {{{ref}}}, but no step asks for {ref.split('.')[0]!r} "
                              "and no tool step's result is called that (an ask node's resultKey, or a tool "
                              "node's resultKey or id)" + ("" if blocking else ": the message would show it "
                                                           "unfilled"))
            if node.id in after_tool:
                pending.append((ref.split(".")[0], problem))
            else:
                problems.append(problem)
    return pending


def _check_targets(nodes: dict[str, Node], source: str, file: str, problems: list[Problem]) -> None:
    for node in nodes.values():
        for t in node.targets():
            if t not in nodes:
                problems.append(Problem(file, node.line, "error", f"node {node.id!r} goes to unknown node {t!r}"))
    for node in nodes.values():
        node.branches = [b for b in node.branches if b.target in nodes]
        if node.next and node.next not in nodes:
            node.next = None


def _check_reachability(sop: Sop, source: str, file: str, problems: list[Problem]) -> None:
    reach = sop.reachable()
    for nid, node in sop.nodes.items():
        if nid not in reach:
            problems.append(Problem(file, node.line, "warning", f"node {nid!r} is unreachable from startNode"))
    if not any(sop.nodes[n].kind == "end" or sop.nodes[n].hands_off for n in reach):
        steps = sorted((sop.nodes[n] for n in reach), key=lambda n: (n.line, n.id))
        names = ", ".join(repr(n.id) for n in steps[:6]) + (" ..." if len(steps) > 6 else "")
        problems.append(Problem(file, _line(source, "startNode") or (steps[0].line if steps else 1), "error",
                                f"no end node is reachable from startNode (missing end): from it the flow reaches "
                                f"only {names}"))
