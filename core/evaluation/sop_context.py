"""What the synthetic-session generator (:mod:`core.evaluation.generator`) knows about one SOP: the input
spec of every question, the conditions its branches read, the placeholders its messages show, and which slots
an opening message fills."""

from __future__ import annotations

import re
from typing import Any

from core.engine.build import Workspace
from core.evaluation import conditions as C
from core.evaluation.data import DataIndex
from core.evaluation.input_spec import InputSpec, read_spec, spec_from_declared
from core.sop.graph import Node, Sop

PLAIN_WORDS = frozenset("""
a an the i me my we our you your it is are be to of in on at for with about and or but so this that
hi hello hey good morning there please help need want like can could would will just can you
""".split())
"""Greetings, pronouns and asking words: an opening made only of these and the SOP's title describes nothing."""

ROOT_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_]\w*)")  # the slot a template reference starts with


class SopContext:
    """What the generator knows about one SOP: input specs, branch readings, placeholders."""

    def __init__(self, sop: Sop, ws: Workspace, data: DataIndex, kb_titles: list[str]) -> None:
        self.sop = sop
        self.data = data
        self.kb_titles = kb_titles
        models = sorted({re.sub(r"\s*\(.*?\)", "", n).strip() for n in _item_names(ws)})
        categories = list(ws.vocab.categories)
        texts = [t.rstrip("?.!") for t in sop.triggers if not t.strip().endswith("?")]
        # what a valid answer is: the type the author declared, else the one lint and the studio show as
        # inferred when it is a definite kind (a date, a phone number, one of listed values); free text is
        # phrased by the generator's own reading of the step
        declared = {name: st.declared or _declaration(st) for name, st in ws.types.get(sop.id, {}).items()
                    if st.declared or st.kind in DEFINITE_KINDS}
        values: dict[str, list[str]] = {}
        if ws.catalog is not None and any(d.lower().startswith("column") for d in declared.values()):
            inv = ws.files.config.inventory
            values = ws.catalog.column_values(inv.columns if inv else None)
        values["category"] = categories

        def spec(n: Node) -> InputSpec:
            slot = n.fills[0].name if n.fills else ""
            if slot in declared:  # the author said what a valid answer is
                return spec_from_declared(n, slot, declared[slot], models, values)
            return read_spec(n, categories, models, texts)

        self.specs = {n.id: spec(n) for n in sop.nodes.values() if n.asks}
        self.conds = {n.id: [None if b.condition is None or b.expr else C.read_condition(b.condition)
                             for b in n.branches] for n in sop.nodes.values() if n.kind == "decision"}
        slots = set(sop.slot_names())
        self.placeholders = {n.id: sorted(set(ROOT_REF.findall(n.message)) - slots) for n in sop.nodes.values()}
        self.brands = [b.lower() for b in ws.vocab.brands]
        self.changing = {name for name, tool in ws.tools.items() if tool.spec.side_effects}  # never re-sent

    def spec(self, node: Node) -> InputSpec:
        return self.specs[node.id]

    def _describes(self, low: str) -> bool:
        title = {w[:5] for w in re.findall(r"[a-z]+", self.sop.title.lower())}
        shared: dict[str, int] = {}  # words most trigger examples use: how customers ask, not what happened
        for trigger in self.sop.triggers:
            for w in {w[:5] for w in re.findall(r"[a-z]+", trigger.lower())}:
                shared[w] = shared.get(w, 0) + 1
        title |= {w for w, n in shared.items() if n >= max(2, len(self.sop.triggers) / 2)}
        extra = [w for w in re.findall(r"[a-z][a-z']*", low)
                 if w not in PLAIN_WORDS and "'" not in w and w[:5] not in title]
        polite = re.match(r"\s*(can|could|would|will) you\b", low)  # a request put as a question
        return len(extra) >= 2 or (bool(extra) and "?" in low and not polite)

    def volunteered(self, text: str) -> dict[str, Any]:
        """Slots an opening message fills, by the generator's reading (see the module's rules)."""
        found: dict[str, Any] = {}
        low = text.lower()
        for nid, spec in self.specs.items():
            for p in self.sop.nodes[nid].fills:
                value = self._value_in(spec, text, low)
                if value is not None:
                    found.setdefault(p.name, value)
        return found

    def _value_in(self, spec: InputSpec, text: str, low: str) -> Any:
        if spec.kind == "text":
            return text if self._describes(low) else None
        if spec.kind == "money":
            m = re.search(r"(?<![\w-])(\d[\d,]*(?:\.\d+)?)\s*(k)?\b", low)
            return float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1) if m else None
        if spec.kind == "option":
            return next((v for v in spec.vocab if re.search(rf"\b{re.escape(v.lower())}\b", low)), None)
        if spec.kind == "category":
            return next((v for v in spec.vocab if re.search(rf"\b{re.escape(v.lower())}(e?s)?\b", low)), None)
        if spec.kind == "model":
            return next((b for b in self.brands if re.search(rf"\b{re.escape(b)}\b", low)), None)
        if spec.kind == "email":
            m = re.search(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", text)
            return m.group(0) if m else None
        if spec.kind == "id" and spec.prefix:
            m = re.search(rf"\b{re.escape(spec.prefix)}[A-Z0-9]+\b", text)
            return m.group(0).upper() if m else None
        return None


DEFINITE_KINDS = frozenset({"date", "phone", "email", "money", "number", "option", "boolean", "digits", "id"})


def _declaration(st: Any) -> str:
    """A slot type the workspace inferred (lint's info line shows it to the author), written as its
    declaration would be: every listed value, an id's example, a code's length."""
    if st.kind == "option":
        return f"one_of({', '.join(st.vocab)})"
    if st.kind == "id":
        return f"id({st.example})" if st.example else "id"
    if st.kind == "digits":
        return f"code({st.digits})" if st.digits else "code"
    return "yes_no" if st.kind == "boolean" else str(st.kind)


def _item_names(ws: Workspace) -> list[str]:
    if ws.catalog is None or "name" not in ws.catalog.frame:
        return []
    return [str(v) for v in ws.catalog.frame["name"].dropna()]
