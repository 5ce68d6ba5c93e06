"""Each SOP's slot types: as declared (the SOP's ``slots:``, gar.csv params), else inferred from names and GAR/SOP
text; a caller also reads the slot types of the SOPs it calls."""

from __future__ import annotations

from datetime import date
from typing import Any

from core.sop import Sop, expr
from core.sop.load import called_by, calls_of
from core.workspace.files import WorkspaceFiles
from core.workspace.kinds import mark_person
from core.workspace.params import Param
from core.workspace.slots import IN_UNIT, SlotType, Vocabulary, declared_type, hints_per_slot, infer_type, type_problem


def slot_types(sops: list[Sop], vocab: Vocabulary, region: str = "", asks: dict[str, str] | None = None,
               declared: dict[str, tuple[str, str]] | None = None,
               columns: dict[str, list[str]] | None = None) -> dict[str, dict[str, SlotType]]:
    """Each SOP's slot types: as declared (the SOP's ``slots:``, then the gar.csv param the step uses, then
    any gar.csv param of that name: ``declared``), else inferred from names and GAR/SOP text.

    The ask that fills a slot defines it (its metadata says what a valid answer is). A slot that only
    a tool of the SOP uses is defined by a GAR ask row that fills it, when the GAR has one (``asks``:
    slot name -> that row's metadata), else typed from its name. Each type says where it comes from
    (``origin``), for lint and the studio.
    """
    asks = asks or {}
    declared = declared or {}
    out: dict[str, dict[str, SlotType]] = {}
    for sop in sops:
        types: dict[str, SlotType] = {}
        compared = compared_literals(sop)
        asked = questions_of(sop)

        def typed(param: Param, expects: str, gar_line: int, sop: Sop = sop) -> SlotType:
            if param.name in sop.slots and not type_problem(sop.slots[param.name], columns):
                spec, origin = sop.slots[param.name], f"declared in {sop.file}:{sop.slots_line}"
            elif param.type and not type_problem(param.type, columns):
                spec, origin = param.type, f"declared in gar.csv:{gar_line}"
            elif param.name in declared:
                spec, origin = declared[param.name][0], f"declared in {declared[param.name][1]}"
            else:
                st = infer_type(param.name, expects, vocab, questions=asked.get(param.name, ()),
                                compared=compared.get(param.name, ()))
                st.origin = f"inferred from {st.origin}"
                return st
            st = declared_type(param.name, spec, expects, vocab, columns)
            st.origin = origin
            return st

        for node in sop.nodes.values():
            hint = node.expects or node.text  # several values asked at once: each its own part of the hint
            own = hints_per_slot(hint, len(node.fills)) if len(node.fills) > 1 else None
            for i, p in enumerate(node.fills):
                if p.name not in types:
                    types[p.name] = typed(p, own[i] if own else hint, node.gar.line if node.gar else 0)
                    mark_person(types[p.name], p.name, own[i] if own else hint, asked.get(p.name, ()))
        for node in sop.nodes.values():
            for p in node.params:
                if p.name not in types:
                    types[p.name] = typed(p, asks.get(p.name, ""), node.gar.line if node.gar else 0)
        _asked_units(sop, types)
        for st in types.values():
            st.region = region if st.kind in ("phone", "date") else ""
        out[sop.id] = types
    _with_callees(sops, out)
    return out


def compared_literals(sop: Sop) -> dict[str, list[Any]]:
    """The literals the SOP's conditions compare each slot with (``remembers_pin == true`` -> {remembers_pin:
    [True]}), from conditions written as expressions; a date literal as a date."""
    out: dict[str, list[Any]] = {}
    for node in sop.nodes.values():
        for b in node.branches:
            if not b.condition or not (b.expr or expr.is_expression(b.condition)):
                continue
            try:
                tree = expr.parse(b.condition)
            except expr.ExprError:
                continue  # lint reports it
            for key, value in comparisons(tree):
                out.setdefault(key, []).append(value)
    return out


def comparisons(node: tuple) -> list[tuple[str, Any]]:
    """(key, literal) for each comparison of a context key with a literal in a parsed condition (a key read
    alone says nothing of its kind: any value is true)."""
    if node[0] == "cmp":
        sides = [c for c in node[2:] if isinstance(c, tuple)]
        keys = [expr.strip_context(c[1]) for c in sides if c[0] == "path"]
        values = [date.fromisoformat(c[1]) if c[0] == "date" else c[1] for c in sides if c[0] in ("lit", "date")
                  and c[1] is not None]
        return [(k, v) for k in keys for v in values]
    return [pair for child in node[1:] if isinstance(child, tuple) for pair in comparisons(child)]


def questions_of(sop: Sop) -> dict[str, list[str]]:
    """What the SOP's asks say to the customer, for each slot they fill."""
    out: dict[str, list[str]] = {}
    for node in sop.nodes.values():
        said = node.message or (node.text if node.asks and node.gar is None else "")
        if len(node.fills) == 1 and said.strip():  # a question asking for several values is about none alone
            out.setdefault(node.fills[0].name, []).append(said)
    return out


def _with_callees(sops: list[Sop], out: dict[str, dict[str, SlotType]]) -> None:
    """A caller also reads what the SOPs it calls ask for: values given up front are kept for them."""
    calls = calls_of(sops)
    for sop in sops:
        for callee in callees(sop.id, calls):
            for name, st in out.get(callee, {}).items():
                out[sop.id].setdefault(name, st)


def _asked_units(sop: Sop, types: dict[str, SlotType]) -> None:
    """A number asked in a unit ("What does your meter show, in kWh?") counts that unit: "14388 kwh" said
    unasked is its value."""
    for node in sop.nodes.values():
        for p in node.fills:
            st = types.get(p.name)
            unit = IN_UNIT.search(f"{node.expects} {node.message}") if st is not None and st.kind == "number" \
                and not st.unit else None
            if st is not None and unit:
                st.unit = unit.group(1).lower()


def callees(sop_id: str, calls: dict[str, list[str]]) -> list[str]:
    """The SOPs ``sop_id`` calls, directly or through the SOPs it calls, in order (never itself)."""
    return [sid for sid in called_by(sop_id, calls) if sid != sop_id and sid in calls]


def gar_types(files: WorkspaceFiles, columns: dict[str, list[str]] | None) -> dict[str, tuple[str, str]]:
    """Slot types gar.csv declares (``order_id:id``): name -> (type, where), the first usable one."""
    out: dict[str, tuple[str, str]] = {}
    for row in files.gar:
        for p in row.params:
            if p.type and not type_problem(p.type, columns):
                out.setdefault(p.name, (p.type, f"gar.csv:{row.line}"))
    return out


def gar_asks(files: WorkspaceFiles) -> dict[str, str]:
    """What a valid value of each slot a GAR ask row fills looks like (the row's metadata)."""
    out: dict[str, str] = {}
    for r in files.gar:
        if r.has("ask_user_input") and r.metadata:
            for p in r.params:
                out.setdefault(p.name, r.metadata)
    return out
