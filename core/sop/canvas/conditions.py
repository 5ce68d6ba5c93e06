"""Conditions on the canvas: the expression builder (a value, an operator, a value to compare with) and the
live check of a condition as the compiler reads it."""

from __future__ import annotations

import re
from typing import Any

from core.sop import expr
from core.sop.canvas.model import OPERATORS, CanvasError, ConditionCheck, Format


def build_condition(left: str, op: str, value: str, fmt: Format) -> str:
    """A condition from the expression builder: a value, an operator, a value to compare with
    (``order.status``, ``==``, ``delivered`` -> ``context.order.status == 'delivered'`` in JSON)."""
    if op not in OPERATORS:
        raise CanvasError(f"the operator must be one of {', '.join(OPERATORS)}, got {op!r}")
    path = left.strip()
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", path):
        raise CanvasError(f"{left!r} is not a value name (letters, digits and _, parts joined by '.')")
    if fmt == "json" and not path.startswith("context."):
        path = f"context.{path}"
    raw = value.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?%?|true|false|null|today|\d{4}-\d{2}-\d{2}", raw, re.I) or (
            raw[:1] in "'\"" and raw[-1:] == raw[:1] and len(raw) > 1):
        shown = raw.lower() if raw.lower() in ("true", "false", "null", "today") else raw
    else:
        shown = f'"{raw}"' if "'" in raw else f"'{raw}'"
    return f"{path} {op} {shown}"


def check_condition(text: str, fmt: Format) -> ConditionCheck:
    """Whether a condition compiles. A text SOP may word a condition (``if the order is delivered``):
    decided from what the step before returned; an expression must parse (errors with their column)."""
    cond = _strip_if(text.strip().rstrip(":").strip())
    if not cond:
        return ConditionCheck(False, "write a condition", 1)
    if fmt == "text" and not expr.is_expression(cond):
        return ConditionCheck(True, "in words: decided from what the step before returned")
    try:
        expr.parse(cond)
    except expr.ExprError as exc:
        return ConditionCheck(False, str(exc), exc.column)
    return ConditionCheck(True, "the expression parses")


def _require_condition(fields: dict[str, Any], fmt: Format) -> str:
    cond = str(fields.get("condition") or "").strip()
    check = check_condition(cond, fmt)
    if not check.ok:
        raise CanvasError(f"condition {cond!r}: {check.message}")
    return _strip_if(cond.rstrip(":").strip())


def _strip_if(cond: str) -> str:
    return re.sub(r"^(if|elif|else if|when|in case)\s+", "", cond.strip(), flags=re.I).strip()
