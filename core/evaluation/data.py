"""The workspace's data tables, used to script realistic API results for synthetic sessions.

A declared tool's result is built from a row of the table that backs it (a table tool's own
table, or a CSV in the workspace with a column named like one of the tool's params), with the
fields the chosen branch decides set to satisfy it. Built-in list tools (inventory, knowledge
base) are read-only, so their real results are sampled.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.build import Workspace
from core.evaluation.conditions import LIST_FIELD, Constraint, FieldGuess, candidates, norm, pick_number
from core.shared.errors import WorkspaceError
from core.tools.declared import TableTool
from core.tools.inventory_files import read_table
from core.workspace.params import bind_params

YES_NO = {"yes", "no", "true", "false", "y", "n"}
LIST_TOOLS = ("inventory.query", "knowledge_base.search")
MAX_DOMAIN = 25
SKIP_DIRS = {".state", ".git", "__pycache__", "tests", "node_modules"}


@dataclass
class Table:
    """One data file: its columns and rows (all values as text)."""

    name: str
    columns: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)

    def domain(self, column: str) -> list[str]:
        """The distinct non-empty values of a column, in first-seen order."""
        return list(dict.fromkeys(r[column].strip() for r in self.rows if r.get(column, "").strip()))

    def numeric_columns(self) -> list[str]:
        return [c for c in self.columns if self.domain(c) and all(_is_number(v) for v in self.domain(c))]

    def yes_no_columns(self) -> list[str]:
        return [c for c in self.columns if self.domain(c) and {v.lower() for v in self.domain(c)} <= YES_NO]

    def value_columns(self) -> dict[str, list[str]]:
        numeric = set(self.numeric_columns())
        return {c: self.domain(c) for c in self.columns
                if c not in numeric and 0 < len(self.domain(c)) <= MAX_DOMAIN}


def _is_number(text: str) -> bool:
    return re.fullmatch(r"-?\d+(\.\d+)?", text.strip()) is not None


class DataIndex:
    """Every data table of a workspace (CSV/XLSX files outside the SOP, GAR and KB folders)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tables: list[Table] = []
        self._by_tool: dict[str, Table] = {}
        seen: set[Path] = set()
        for name, tool in sorted(ws.tools.items()):
            if isinstance(tool, TableTool):
                table = self._load(ws.files.root / tool.decl.table, tool.decl.sheet)
                if table is not None:
                    self._by_tool[name] = table
                    seen.add((ws.files.root / tool.decl.table).resolve())
        for path in sorted(ws.files.root.rglob("*.csv")):
            rel = path.relative_to(ws.files.root)
            if path.resolve() in seen or path.name == "gar.csv" or set(rel.parts) & SKIP_DIRS:
                continue
            self._load(path, "")

    def _load(self, path: Path, sheet: str) -> Table | None:
        try:
            frame = read_table(str(path.relative_to(self.ws.files.root)), self.ws.files.root, sheet)
        except (WorkspaceError, ValueError, OSError):
            return None
        frame = frame.fillna("")
        cols = [str(c).strip() for c in frame.columns]
        rows = [{c: str(v).strip() for c, v in zip(cols, rec, strict=True)} for rec in frame.itertuples(index=False)]
        table = Table(path.name, cols, rows)
        self.tables.append(table)
        return table

    def params_of(self, tool: str) -> list[str]:
        impl = self.ws.tools.get(tool)
        return [p.name for p in impl.spec.params] if impl is not None else []

    def table_for(self, tool: str) -> Table | None:
        """The table behind a tool: its own, else the first with a column named like one of its params."""
        if tool in self._by_tool:
            return self._by_tool[tool]
        names = {n.lower() for n in self.params_of(tool)}
        keyed = [t for t in self.tables if t.columns and t.columns[0].lower() in names]
        return next(iter(keyed), None) or next((t for t in self.tables if names & {c.lower() for c in t.columns}),
                                               None)

    def guess(self, tool: str) -> FieldGuess:
        """Which result fields a tool's branch conditions are about."""
        table = self.table_for(tool)
        if table is None:
            return FieldGuess([], [], {}, tool in LIST_TOOLS)
        return FieldGuess(table.numeric_columns(), table.yes_no_columns(), table.value_columns(), tool in LIST_TOOLS)

    def bound_args(self, tool: str, slots: dict[str, Any]) -> dict[str, Any]:
        """The tool args the engine is expected to pass, keyed by the tool's own params."""
        impl = self.ws.tools.get(tool)
        if impl is None:
            return dict(slots)
        mapping = bind_params(impl.spec.params, list(slots))
        return {param: slots[slot] for param, slot in mapping.items()}

    # ------------------------------------------------------------------ results

    def result(self, tool: str, constraints: dict[str, Constraint], args: dict[str, Any], wanted: set[str],
               rng: random.Random, context: dict[str, Any]) -> Any:
        """A successful result of ``tool`` that satisfies the constraints on its fields."""
        if tool in LIST_TOOLS:
            truth = constraints[LIST_FIELD].truth if LIST_FIELD in constraints else True
            return self._list_result(tool, truth is not False, rng, context)
        table = self.table_for(tool)
        row = self._row(table, constraints, rng) if table is not None else {}
        keep = {k for k in row if k in args or k in wanted or k in constraints or k.lower() in
                {a.lower() for a in args}}
        out: dict[str, Any] = {k: _typed(row[k]) for k in row if k in keep and row[k] != ""}
        out.update({k: v for k, v in args.items() if k in (table.columns if table else [])})
        for name, c in constraints.items():
            out[name] = self._value(c, table, out.get(name), rng)
        for name in sorted(wanted - set(out)):
            out[name] = f"{name.upper()}-{rng.randint(1000, 9999)}"
        return out or {"status": "ok"}

    def _row(self, table: Table, constraints: dict[str, Constraint], rng: random.Random) -> dict[str, str]:
        fitting = [r for r in table.rows if all(_fits(c, r.get(c.field)) for c in constraints.values()
                                                if c.field in r)]
        pool = fitting or table.rows
        return dict(rng.choice(pool)) if pool else {}

    @staticmethod
    def _value(c: Constraint, table: Table | None, current: Any, rng: random.Random) -> Any:
        if current is not None and _fits(c, current):
            return current
        if c.numeric:
            return pick_number(c, rng)
        if c.truth is not None:
            return c.truth if rng.random() < 0.5 else ("yes" if c.truth else "no")
        domain = table.domain(c.field) if table is not None and c.field in table.columns else []
        options = candidates(c, domain)
        if options:
            return rng.choice(options)
        return f"other {c.field.replace('_', ' ')}"

    def _list_result(self, tool: str, non_empty: bool, rng: random.Random, context: dict[str, Any]) -> Any:
        if not non_empty:
            return []
        impl = self.ws.tools.get(tool)
        if tool == "knowledge_base.search" and self.ws.kb is not None:
            query = " ".join(str(v) for v in context.values() if isinstance(v, str)) or "help"
            hits = self.ws.kb.search(query, 3)
            if hits:
                return hits
            chunk = rng.choice(self.ws.kb.chunks)
            return [{"title": chunk.title, "snippet": chunk.text, "ref": chunk.ref, "score": 0.5}]
        if impl is None:
            return [{"name": "item"}]
        args = {k: v for k, v in context.items() if k in {p.name for p in impl.spec.params}}
        found = impl.run({**args, "limit": 3})
        return found or impl.run({"limit": 3})


def _fits(c: Constraint, value: Any) -> bool:
    if value is None or value == "":
        return False
    if c.numeric:
        return _is_number(str(value)) and c.low <= float(value) <= c.high
    if c.truth is not None:
        low = str(value).strip().lower()
        return low in YES_NO and (low in ("yes", "true", "y")) == c.truth
    key = norm(value)
    return (c.allowed is None or key in c.allowed) and key not in c.banned


def _typed(text: str) -> Any:
    if _is_number(text):
        return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    return text
