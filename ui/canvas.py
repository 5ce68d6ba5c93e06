"""The SOP studio's canvas: an SOP as steps and arrows, a palette to add steps after the selected one, a side
form filled from the workspace (GAR actions, tools and their parameters, slots and their kinds, SOPs to call,
knowledge-base articles, a condition builder with a live check), lint problems on the steps.

Every change is an edit of the SOP's own source, kept as the same draft the text editor edits; saving is the
studio's one save (the same checks, the same held save when conversation tests would break).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import date
from typing import Any

import streamlit as st
from streamlit_flow import streamlit_flow
from streamlit_flow.elements import StreamlitFlowEdge, StreamlitFlowNode
from streamlit_flow.layouts import LayeredLayout
from streamlit_flow.state import StreamlitFlowState

from core.playground import SopCheck
from core.playground.pickers import Pickers, canvas_for, pickers
from core.playground.service import Playground
from core.shared.problems import Problem
from core.sop.canvas.conditions import build_condition, check_condition
from core.sop.canvas.edits import add_step, connect, declare_after, delete_step, update_step
from core.sop.canvas.model import KINDS, OPERATORS, Canvas, CanvasError, CanvasNode, Edit, Kind
from core.workspace.slots import SLOT_TYPES
from ui import procedure as procedure_ui
from ui import trial as trial_ui

LABELS: dict[str, str] = {"ask": "Ask", "tool": "Tool call", "message": "Message", "decision": "Decision",
                          "call": "Call SOP", "handoff": "Hand off", "end": "End"}
NODE_GAP, LAYER_GAP = 40.0, 60.0  # between steps side by side, and between layers
UNREACHED = "no arrow from the start leads here: connect a step to it, or delete it"
COLOURS = {"ask": "#dcebff", "tool": "#ffe5cc", "message": "#dff5e3", "decision": "#fff4cc", "call": "#efe3ff",
           "handoff": "#ffdede", "end": "#e8e8e8"}


def editor(pg: Playground, rel: str, source: str, check: SopCheck, on_edit: Callable[[], None]) -> None:
    """The procedure's settings and the trigger trial box, then the canvas of ``rel`` (its draft ``source``) beside the side form of the
    selected step."""
    top_left, top_right = st.columns([3, 2], gap="medium")
    with top_left:
        procedure_ui.settings(pg, rel, source, on_edit)
    with top_right:
        trial_ui.trial_box(pg, rel, source)
    canvas = canvas_for(pg.workspace, source, rel)
    if not canvas.nodes:
        st.warning("The canvas shows the SOP once it compiles: fix the errors below in the text view.",
                   icon=":material/warning:")
        return
    marks = canvas.node_problems(check.problems)
    sel_key = f"canvas_sel_{rel}"
    if st.session_state.get(sel_key) not in canvas.nodes:
        st.session_state[sel_key] = canvas.start
    flash = st.session_state.pop(f"canvas_flash_{rel}", "")
    left, right = st.columns([3, 2], gap="medium")
    with left:
        if flash:
            st.error(flash, icon=":material/block:")
        event = _flow(canvas, marks, rel)
        st.caption("Click a step to edit it or add the next one; drag from a step's lower edge to another step to "
                   "lead it there. " + " · ".join(f"{LABELS[k]}" for k in KINDS))
    if event is not None:
        _on_event(pg, canvas, rel, event, on_edit)
    with right:
        _side(pg, canvas, pickers(pg.workspace, check.sop), marks, rel, st.session_state[sel_key], check, on_edit)


# ---------------------------------------------------------------------------------------------- the flow
def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def _flow(canvas: Canvas, marks: dict[str, list[Problem]], rel: str) -> StreamlitFlowState | None:
    """Draw the canvas; the component's new state when the author did something on it, else None."""
    key = f"canvas_flow_{rel}"
    selected = st.session_state.get(f"canvas_sel_{rel}")
    sig = _digest(canvas.source + repr(sorted((k, [p.message for p in v]) for k, v in marks.items())))
    if st.session_state.get(f"{key}_sig") != sig or key not in st.session_state:
        loose = set(canvas.unreached())
        nodes = [_node(n, i, marks.get(n.id, []), n.id == canvas.start, n.id == selected, n.id in loose)
                 for i, n in enumerate(canvas.nodes.values())]
        edges = [StreamlitFlowEdge(e.id, e.source, e.target, edge_type="smoothstep", label=e.label,
                                   label_show_bg=bool(e.label), marker_end={"type": "arrowclosed"},
                                   style={"strokeWidth": 1.6}) for e in canvas.edges]
        st.session_state[key] = StreamlitFlowState(nodes, edges)
        st.session_state[f"{key}_sig"] = sig
    state: StreamlitFlowState = st.session_state[key]
    new = streamlit_flow(f"canvas_{rel}", state, height=640, fit_view=True, allow_new_edges=True,
                         get_node_on_click=True, get_edge_on_click=True, hide_watermark=True, min_zoom=0.2,
                         layout=LayeredLayout("down", node_node_spacing=NODE_GAP, node_layer_spacing=LAYER_GAP))
    seen = st.session_state.get(f"{key}_seen", 0)
    if new is state or new.timestamp <= max(state.timestamp, seen):
        return None
    st.session_state[f"{key}_seen"] = new.timestamp
    return new


def _node(node: CanvasNode, order: int, problems: list[Problem], start: bool, selected: bool,
          loose: bool) -> StreamlitFlowNode:
    """A step as drawn: its kind, its label, its problems; ``loose``: no arrow from the start reaches it.
    Placed in a column until the layered layout places it (sized to the step as shown)."""
    shown = [p for p in problems if p.severity in ("error", "warning")]
    if loose and not any("unreachable" in p.message for p in shown):
        shown.append(Problem("", node.line, "warning", UNREACHED))
    worst = "error" if any(p.severity == "error" for p in shown) else "warning" if shown else ""
    border = {"error": "#d1242f", "warning": "#d4a72c"}.get(worst, "#1f6feb" if selected else "#8a94a6")
    label = node.label.replace("<", "&lt;")
    lines = [f"**{LABELS[node.kind]}**" + (" · start" if start else ""), label if node.kind != "end" else ""]
    lines += [f"{'⛔' if p.severity == 'error' else '⚠️'} {p.message[:140]}".replace("<", "&lt;") for p in shown][:3]
    return StreamlitFlowNode(node.id, (0.0, order * 160.0), {"content": "\n\n".join(x for x in lines if x)},
                             node_type="output" if node.kind == "end" else "default", selectable=True,
                             connectable=node.kind != "end",
                             style={"background": COLOURS[node.kind],
                                    "border": f"{3 if selected else 2}px solid {border}",
                                    "borderRadius": "10px" if node.kind != "decision" else "2px",
                                    "width": "230px", "fontSize": "12px", "padding": "6px", "color": "#1f2328"})


def _on_event(pg: Playground, canvas: Canvas, rel: str, new: StreamlitFlowState, on_edit: Callable[[], None]) -> None:
    """An arrow drawn on the canvas is a connection; a click selects the step (or the arrow's step)."""
    known = {e.id for e in canvas.edges}
    drawn = [e for e in new.edges if e.id not in known and e.source in canvas.nodes and e.target in canvas.nodes]
    if drawn:
        e = drawn[-1]
        branch = st.session_state.get(f"canvas_branch_{rel}_{e.source}", 0) \
            if canvas.nodes[e.source].kind == "decision" else None
        _apply(pg, canvas, rel, lambda: connect(canvas, e.source, e.target, branch), on_edit, redraw=True)
        return
    picked = new.selected_id
    if picked and picked in canvas.nodes and picked != st.session_state.get(f"canvas_sel_{rel}"):
        st.session_state[f"canvas_sel_{rel}"] = picked
        st.rerun()
    edge = next((e for e in canvas.edges if e.id == picked), None)
    if edge is not None:
        st.session_state[f"canvas_sel_{rel}"] = edge.source
        if edge.branch is not None:
            st.session_state[f"canvas_branch_{rel}_{edge.source}"] = edge.branch
        st.rerun()


def _apply(pg: Playground, canvas: Canvas, rel: str, edit: Callable[[], Edit], on_edit: Callable[[], None], *,
           redraw: bool = False) -> None:
    """Make an edit: the new source becomes the draft (both views show it), the new step is selected. An edit
    that changes nothing (a step applied as it was, an arrow drawn where one goes) leaves the draft and the
    page's other widgets alone: a click made meanwhile (another SOP picked) is not lost."""
    try:
        done = edit()
    except CanvasError as exc:
        if not redraw:
            st.error(str(exc), icon=":material/block:")
            return
        st.session_state[f"canvas_flash_{rel}"] = str(exc)
        st.session_state.pop(f"canvas_flow_{rel}_sig", None)  # draw the SOP again without the refused arrow
        st.rerun()
        return
    changed = done.source != canvas.source  # the text the canvas was drawn from (the draft, else the file)
    if changed:
        pg.studio.keep_draft(rel, done.source)
    if redraw:  # the arrow drawn is now the SOP's own (or was already): draw the SOP as it is
        st.session_state.pop(f"canvas_flow_{rel}_sig", None)
    if done.selected:
        st.session_state[f"canvas_sel_{rel}"] = done.selected
    if changed:
        on_edit()
    st.rerun()


# ---------------------------------------------------------------------------------------------- side form
def _side(pg: Playground, canvas: Canvas, picks: Pickers, marks: dict[str, list[Problem]], rel: str, node_id: str,
          check: SopCheck, on_edit: Callable[[], None]) -> None:
    node = canvas.nodes[node_id]
    agent = _agent(pg, check)
    k = f"{rel}|{node.id}|{_digest(canvas.source)}"
    where = f" · line {node.line}" if node.line else ""
    st.markdown(f"**{LABELS[node.kind]}** `{node.id}`{where}")
    if node.kind != "end":
        st.caption(node.label)
    for p in marks.get(node.id, []):
        (st.error if p.severity == "error" else st.warning)(p.message, icon=":material/error:")
    if node.id in canvas.unreached() and not any("unreachable" in p.message for p in marks.get(node.id, [])):
        st.warning(UNREACHED, icon=":material/link_off:")
    if node.details:
        st.caption(" · ".join(f"{name}: {value}" for name, value in node.details.items()))
    branch: int | None = None
    if node.kind == "decision":
        outs = canvas.out(node.id)
        branch = st.radio("Branch", [e.branch for e in outs], key=f"canvas_branch_{rel}_{node.id}",
                          format_func=lambda b: f"{_branch_label(canvas, node.id, b)}", horizontal=True,
                          help="The branch new steps go on, arrows drawn from this decision set, and 'Goes to' "
                               "changes.")
    if node.kind != "end":
        with st.container(border=True):
            st.markdown("**Add a step after this one**")
            kind = st.segmented_control("Kind of step", KINDS, format_func=lambda x: LABELS[x], key=f"kind_{k}",
                                        label_visibility="collapsed")
            if kind:
                fields = _fields(pg, canvas, picks, None, kind, f"new_{k}_{kind}", agent)
                if st.button("Add step", type="primary", icon=":material/add:", key=f"add_{k}_{kind}"):
                    _apply(pg, canvas, rel, lambda: _typed(canvas, fields, lambda f: add_step(canvas, node.id, kind, f,
                                                                                      branch)), on_edit)
    if node.kind != "end" and not node.implicit:
        with st.expander("Edit this step", expanded=node.kind == "decision"):
            fields = _fields(pg, canvas, picks, node, node.kind, f"edit_{k}_{branch}", agent, branch)
            c1, c2 = st.columns(2)
            if c1.button("Apply", key=f"apply_{k}", icon=":material/check:"):
                _apply(pg, canvas, rel,
                       lambda: _typed(canvas, fields, lambda f: update_step(canvas, node.id, f, branch)), on_edit)
            if c2.button("Delete step", key=f"del_{k}", icon=":material/delete:"):
                st.session_state.pop(f"canvas_sel_{rel}", None)
                _apply(pg, canvas, rel, lambda: delete_step(canvas, node.id), on_edit)
    elif node.kind == "end" and not node.implicit and st.button("Delete step", key=f"del_{k}",
                                                                 icon=":material/delete:"):
        _apply(pg, canvas, rel, lambda: delete_step(canvas, node.id), on_edit)
    now = canvas.target(node.id, branch)
    if now is not None:
        ids = list(canvas.nodes)
        goes = st.selectbox("Goes to", ids, index=ids.index(now), key=f"goes_{k}_{branch}",
                            format_func=lambda i: f"{canvas.nodes[i].label[:60]} ({i})")
        if goes != now:
            _apply(pg, canvas, rel, lambda: connect(canvas, node.id, goes, branch), on_edit)


def _typed(canvas: Canvas, fields: dict[str, Any], make: Callable[[dict[str, Any]], Edit]) -> Edit:
    """An edit, then the kind of answer its ask's slot was given declared in the SOP."""
    spec = str(fields.get("slot_type") or "")
    edit = make({k: v for k, v in fields.items() if k != "slot_type"})
    slot = str(fields.get("result_key") or "")
    return declare_after(canvas, edit, slot, spec) if spec and slot else edit


def _branch_label(canvas: Canvas, node_id: str, branch: int | None) -> str:
    edge = next((e for e in canvas.out(node_id) if e.branch == branch), None)
    label = edge.label if edge else str(branch)
    return label if len(label) <= 40 else label[:39] + "…"


def _agent(pg: Playground, check: SopCheck) -> str:
    sop = check.sop
    if sop is None:
        return ""
    found = pg.workspace.files.config.agent_for(sop.id, sop.agent)
    return found.name if found else ""


def _fields(pg: Playground, canvas: Canvas, picks: Pickers, node: CanvasNode | None, kind: Kind, key: str,
            agent: str, branch: int | None = None) -> dict[str, Any]:
    """The side form's inputs for a step of ``kind`` (``node``: the step edited, None for a new one)."""
    have = node.fields if node is not None else {}
    if kind == "end":
        return {}
    if kind == "decision":
        current = ""
        if canvas.format == "text" and node is not None:
            rows = have.get("branches", [])
            current = str(rows[branch or 0]["condition"] or "") if (branch or 0) < len(rows) else ""
        else:
            current = str(have.get("condition") or "")
        return {"condition": _condition(canvas, picks, current, key)}
    if kind == "call":
        sops = dict(picks.sops)
        options = list(sops) + ([have["call"]] if have.get("call") and have["call"] not in sops else [])
        if not options:
            st.info("This workspace has no other SOP to call yet.")
            return {}
        call = st.selectbox("SOP to run", options, key=f"{key}_call",
                            index=options.index(have["call"]) if have.get("call") in options else 0,
                            format_func=lambda s: f"{sops.get(s, s)} ({s})")
        return {"call": call, **_description(canvas, have, key)}
    if kind == "handoff":  # the conversation goes to the team (the store's hand-off tool); the procedure ends
        if canvas.format == "text":
            words = st.text_input("The step", value=str(have.get("action") or "hand off to a person"),
                                  key=f"{key}_handoff", help="Start it with 'hand off' or 'escalate', or write "
                                  "'transfer … to a person' (a team, an agent, a supervisor).")
            return {"action": words}
        message = st.text_input("Message before the team's reply (optional)", value=str(have.get("message") or ""),
                                key=f"{key}_msg", placeholder="Please keep your order number to hand.")
        return {"message": message, **_description(canvas, have, key)}
    if canvas.format == "text":
        return {"action": _action(picks, kind, have.get("action", ""), key)}
    if kind == "ask":
        slot = _slot(picks, str(have.get("result_key") or ""), key)
        declared = canvas.sop.slots.get(slot, "") if canvas.sop is not None else ""
        kinds = list(SLOT_TYPES) + ([declared] if declared and declared not in SLOT_TYPES else [])
        read = next((f" ({s.kind})" for s in picks.slots if s.name == slot), "")
        spec = st.selectbox("Kind of answer", kinds, index=kinds.index(declared) if declared else None,
                            key=f"{key}_type", placeholder=f"as read from its name and question{read}",
                            help="Declared in the SOP's slots; lint says how an undeclared slot is read.")
        message = st.text_input("Question to the customer", value=str(have.get("message") or ""),
                                key=f"{key}_msg", placeholder="What is your order number? It looks like NW-12345.")
        out = {"result_key": slot, "message": message, **_description(canvas, have, key)}
        return out | ({"slot_type": spec} if spec and spec != declared else {})
    if kind == "tool":
        return _tool(picks, have, key, agent) | _description(canvas, have, key)
    message = st.text_area("Message to the customer", value=str(have.get("message") or ""), key=f"{key}_msg",
                           height=80, help="Placeholders: {context.order_id}, {order.status} (a tool result's field).")
    return {"message": message, **_description(canvas, have, key)}


def _description(canvas: Canvas, have: dict[str, Any], key: str) -> dict[str, Any]:
    if canvas.format != "json":
        return {}
    text = st.text_input("Description (optional)", value=str(have.get("description") or ""), key=f"{key}_desc")
    return {"description": text} if text or "description" in have else {}


def _action(picks: Pickers, kind: Kind, current: str, key: str) -> str:
    options = list(picks.actions.get(kind, []))
    if current and current not in options:
        options.insert(0, current)
    if not options:
        st.info(f"The GAR has no action for a {LABELS[kind].lower()} step yet: add one on the GAR tab.")
        return ""
    action = st.selectbox("Action (from the GAR)", options, index=options.index(current) if current in options else 0,
                          key=f"{key}_action")
    row = picks.gar.get(action or "")
    if row is not None:
        slot_kinds = {s.name: s.kind for s in picks.slots}
        bits = []
        if row.has("ask_user_input"):
            bits.append("fills " + ", ".join(f"{p.name} ({p.type or slot_kinds.get(p.name, 'text')})"
                                             for p in row.params))
        if row.api:
            bits.append(f"calls {row.api}(" + ", ".join(p.name for p in row.params) + ")")
        if row.metadata:
            bits.append(("expects: " if row.has("ask_user_input") else "says: ") + row.metadata)
        st.caption(" · ".join(bits))
    return str(action or "")


def _slot(picks: Pickers, current: str, key: str) -> str:
    kinds = {s.name: s.kind for s in picks.slots}
    options = list(kinds) + ([current] if current and current not in kinds else [])
    picked = st.selectbox("Slot the answer fills", options, index=options.index(current) if current in options
                          else None, key=f"{key}_slot", accept_new_options=True, placeholder="pick or type a new one",
                          format_func=lambda s: f"{s} · {kinds[s]}" if s in kinds else str(s))
    return str(picked or "")


def _tool(picks: Pickers, have: dict[str, Any], key: str, agent: str) -> dict[str, Any]:
    tools = picks.tools_for(agent)
    names = [t.name for t in tools]
    current = str(have.get("tool") or "")
    if current and current not in names:
        names.insert(0, current)
    if not names:
        st.info("The SOP's agent may call no tool: add tools to it in store.yaml.")
        return {}
    name = st.selectbox("Tool", names, index=names.index(current) if current in names else None, key=f"{key}_tool",
                        placeholder="pick a tool", help="The tools this SOP's agent may call.")
    if not name:
        return {"tool": ""}
    choice = picks.tool(name)
    if choice is not None and choice.description:
        st.caption(choice.description)
    params: dict[str, str] = {}
    given = have.get("params") if isinstance(have.get("params"), dict) and current == name else {}
    known = set(picks.values)
    articles = dict(picks.articles)
    for p in choice.params if choice else []:
        if p == "query" and articles:
            article = st.selectbox("Knowledge-base article", [""] + list(articles), key=f"{key}_kb",
                                   format_func=lambda a: articles.get(a, "(search with the customer's words)"))
            if article:
                params[p] = articles[article]
                continue
        default = str((given or {}).get(p, f"context.{p}" if p in known else ""))
        value = st.text_input(f"{p}" + (" (optional)" if choice and p in choice.optional else ""), value=default,
                              key=f"{key}_p_{p}", help="context.<slot> takes a value the flow has; anything else "
                                                       "is sent as written.")
        if value.strip():
            params[p] = value.strip()
    params |= {k: str(v) for k, v in (given or {}).items() if choice is None or k not in choice.params}
    result = st.text_input("Result stored as (optional)", value=str(have.get("result_key") or ""),
                           key=f"{key}_rk", help="Conditions and messages read the result under this name "
                                                 "(default: the step's id).")
    message = st.text_input("Message after the call (optional)", value=str(have.get("message") or ""),
                            key=f"{key}_msg")
    return {"tool": name, "params": params, "result_key": result, "message": message}


def _compare_with(picks: Pickers, left: str, key: str) -> str | None:
    """The value to compare ``left`` with, offered as its kind allows: true or false for a yes/no slot, the
    options of a choice, a number or a date field, else a value it is known to take or one typed."""
    choice = picks.compare_with(left)
    if choice.kind:
        st.caption(f"`{left}` is {choice.kind}" + (": true is a customer's yes" if choice.options == ("true", "false")
                                                   else ""))
    where = f"{key}_right_{choice.mode}_{left}"
    if choice.mode == "pick":
        return st.selectbox("Compare with", choice.options, index=None, key=where, placeholder="pick a value")
    if choice.mode == "number":
        number = st.number_input("Compare with", value=None, key=where, placeholder="a number", step=1.0)
        return None if number is None else (str(int(number)) if float(number).is_integer() else str(number))
    if choice.mode == "date":
        day = st.date_input("Compare with", value=None, key=where, format="YYYY-MM-DD")
        return day.isoformat() if isinstance(day, date) else None
    return st.selectbox("Compare with", choice.options, index=None, key=where, accept_new_options=True,
                        placeholder="pick or type a value")


def _condition(canvas: Canvas, picks: Pickers, current: str, key: str) -> str:
    """The condition field, a small builder (value, operator, value to compare with) and the live check."""
    text_key = f"{key}_cond"
    if text_key not in st.session_state:
        st.session_state[text_key] = current
    names = sorted(picks.values)
    with st.popover("Build a condition", icon=":material/tune:"):
        left = st.selectbox("Value", names, index=None, key=f"{key}_left", placeholder="pick a slot or result",
                            format_func=lambda n: f"{n} · {picks.compare_with(n).kind}" if picks.compare_with(n).kind
                            else n)
        op = st.selectbox("Operator", OPERATORS, key=f"{key}_op")
        right = _compare_with(picks, left or "", key)

        def use() -> None:
            try:
                st.session_state[text_key] = build_condition(left or "", op or "==", str(right or ""), canvas.format)
            except CanvasError as exc:
                st.session_state[f"{key}_built_error"] = str(exc)

        st.button("Use this condition", key=f"{key}_use", on_click=use, disabled=not (left and right is not None))
        if st.session_state.get(f"{key}_built_error"):
            st.error(st.session_state.pop(f"{key}_built_error"))
    text = st.text_input("Condition", key=text_key, placeholder="context.order.status == 'delivered'"
                         if canvas.format == "json" else "order.status == \"delivered\"  or in words",
                         help="Press Enter to check it.")
    checked = check_condition(text, canvas.format)
    if checked.ok:
        st.caption(f":material/check_circle: {checked.message}")
    elif text.strip():
        pointer = " " * max(checked.column - 1, 0) + "^"
        st.error(f"{checked.message}\n\n```\n{text}\n{pointer}\n```", icon=":material/error:")
    return text
