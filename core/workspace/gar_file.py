"""gar.csv, the Global Action Repository, read and checked: its rows, each problem with its line, and the
params of the rows that call declared tools."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from core.shared.errors import WorkspaceError
from core.shared.problems import Problem
from core.workspace.config import ToolDecl
from core.workspace.params import Param, bind_params, parse_params
from core.workspace.paths import read_text_file

GAR_COLUMNS = ("action", "action_type", "user_interaction_metadata", "api", "params")
ACTION_TYPES = {"api_call", "ask_user_input", "message_to_user", "external_knowledge"}


@dataclass
class GarRow:
    """One row of the Global Action Repository."""

    action: str
    types: frozenset[str]
    metadata: str
    api: str
    params: list[Param]
    line: int

    def has(self, kind: str) -> bool:
        """Whether the row's action_type includes ``kind``."""
        return kind in self.types


def load_gar(path: Path) -> tuple[list[GarRow], list[Problem]]:
    """Parse gar.csv; problems name the line."""
    file = path.name
    if not path.exists():
        return [], [Problem(file, 0, "error", "gar.csv is missing")]
    try:
        text = read_text_file(path, name=file)
    except WorkspaceError as exc:
        return [], [Problem(file, exc.location.line if exc.location else 0, "error", exc.message)]
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return [], [Problem(file, 1, "error", f"cannot read the header row: {exc}")]
    if header is None:
        return [], [Problem(file, 1, "error", "gar.csv is empty")]
    header = [h.strip() for h in header]
    missing = [c for c in GAR_COLUMNS if c not in header]
    if missing:
        return [], [Problem(file, 1, "error", f"missing column(s): {', '.join(missing)}"
                            f" (expected {', '.join(GAR_COLUMNS)})")]
    problems: list[Problem] = []
    rows: list[GarRow] = []
    seen: dict[str, int] = {}
    while True:
        lineno = reader.line_num + 1  # where the row starts (a quoted cell may span lines)
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a cell over the csv module's limit: that row, not the file
            problems.append(Problem(file, lineno, "error", f"cannot read this row: {exc}"))
            continue
        if not any(c.strip() for c in cells):
            continue
        rec = dict(zip(header, (c.strip() for c in cells), strict=False))
        row = _gar_row(rec, lineno, file, problems)
        if row is None:
            continue
        key = normalise_action(row.action)
        if key in seen:
            problems.append(Problem(file, lineno, "error",
                                    f"duplicate action {row.action!r} (first on line {seen[key]})"))
            continue
        seen[key] = lineno
        rows.append(row)
    return rows, problems


def _gar_row(rec: dict[str, str], lineno: int, file: str, problems: list[Problem]) -> GarRow | None:
    action = rec.get("action", "")
    if not action:
        problems.append(Problem(file, lineno, "error", "empty action"))
        return None
    types = frozenset(t.strip() for t in rec.get("action_type", "").split("|") if t.strip())
    bad = types - ACTION_TYPES
    if bad or not types:
        problems.append(Problem(file, lineno, "error",
                                f"action {action!r}: unknown action_type {sorted(bad) or '(empty)'}"
                                f"; use {', '.join(sorted(ACTION_TYPES))}"))
        return None
    api = rec.get("api", "")
    if "api_call" in types and not api:
        problems.append(Problem(file, lineno, "error", f"action {action!r} is an api_call but names no api"))
    params = parse_params(rec.get("params", ""))
    from core.workspace.slots import type_problem

    for p in params:
        why = type_problem(p.type) if p.type else ""
        if why:
            problems.append(Problem(file, lineno, "error", f"action {action!r}: slot {p.name!r}: {why}"))
    if "ask_user_input" in types and not params:
        problems.append(Problem(file, lineno, "error",
                                f"action {action!r} asks the user but names no slot in params"))
    return GarRow(action, types, rec.get("user_interaction_metadata", ""), api, params, lineno)


def normalise_action(text: str) -> str:
    """Lower-case, single-spaced action text for exact matching."""
    return " ".join(re.sub(r"[^\w\s-]", " ", text.lower()).split())


def check_gar_params(rows: list[GarRow], tools: dict[str, ToolDecl]) -> list[Problem]:
    """Every declared tool's required params get a slot from the GAR row that calls it."""
    problems: list[Problem] = []
    for row in rows:
        decl = tools.get(row.api)
        if decl is None or "api_call" not in row.types:
            continue
        names = [p.name for p in row.params]
        bound = bind_params(decl.params, names)
        unbound = [p.name for p in decl.params if not p.optional and p.name not in bound]
        if unbound:
            problems.append(Problem("gar.csv", row.line, "error",
                                    f"action {row.action!r}: no param fills {row.api}'s {', '.join(unbound)}"
                                    f" (params: {', '.join(names) or 'none'})"))
        extra = [n for n in names if n not in bound.values()]
        if extra and "ask_user_input" not in row.types:
            problems.append(Problem("gar.csv", row.line, "error",
                                    f"action {row.action!r}: {row.api} has no param for {', '.join(extra)}"
                                    f" (it takes {', '.join(p.name for p in decl.params) or 'nothing'})"))
    return problems
