"""A safe evaluator for parsed SOP conditions and template expressions (trees of :func:`core.sop.expr.parse`).

Dates: ``today`` is the date the turn runs (a ``today`` key of the context, else the ``today`` given to
:func:`evaluate`, else the clock's date); a ``YYYY-MM-DD`` string compares as a date, ``date ± n`` is ``n`` days
later or earlier, ``date - date`` the days between them. Arithmetic on a missing key, on a value that is not a
number (or date), or a division by zero raises :class:`EvalError`: the caller takes that as false and says why.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from core.sop.expr import TODAY, ExprError, _as_date, _tidy, parse, strip_context


class EvalError(ValueError):
    """A parsed expression cannot be evaluated on these values (arithmetic on a missing key or on a value
    that is not a number, a division by zero); ``reason`` says which, for the trace."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def lookup(context: dict[str, Any], path: str) -> Any:
    """Resolve a dotted path; a missing key is None."""
    cur: Any = context
    for part in strip_context(path).split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and part == "length":
            cur = len(cur)
        else:
            return None
    return cur


def evaluate(node: tuple, context: dict[str, Any], today: date | str | None = None) -> Any:
    """Evaluate a parsed condition against the context. ``today`` is the date the turn runs (default: the
    clock's); a ``today`` key of the context wins over both.

    Raises:
        EvalError: arithmetic on a missing key or on a value that is not a number or a date, or a division
            by zero (never ``TypeError`` / ``ZeroDivisionError``).
    """
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "path":
        return lookup(context, node[1])
    if op == "date":
        return _as_date(node[1])
    if op == "today":
        return _today(context, today)
    if op == "not":
        return not evaluate(node[1], context, today)
    if op == "and":
        return bool(evaluate(node[1], context, today)) and bool(evaluate(node[2], context, today))
    if op == "or":
        return bool(evaluate(node[1], context, today)) or bool(evaluate(node[2], context, today))
    if op == "neg":
        return _tidy(-_number(node[1], evaluate(node[1], context, today)))
    if op == "arith":
        return _arith(node, evaluate(node[2], context, today), evaluate(node[3], context, today))
    return _compare(node[1], evaluate(node[2], context, today), evaluate(node[3], context, today))


def check(condition: str | tuple, context: dict[str, Any], today: date | str | None = None) -> tuple[bool, str]:
    """A condition's truth and, when it could not be evaluated, why (the truth is then false). Never raises
    for a condition that parses."""
    try:
        tree = parse(condition) if isinstance(condition, str) else condition
        return bool(evaluate(tree, context, today)), ""
    except (EvalError, ExprError) as exc:
        return False, str(exc)


def _today(context: dict[str, Any], today: date | str | None) -> date:
    given = _as_date(context.get(TODAY)) if isinstance(context, dict) else None
    return given or _as_date(today) or date.today()


def _describe(node: tuple) -> str:
    """A parsed expression written back, for the reason a value could not be computed."""
    op = node[0]
    if op == "path":
        return strip_context(node[1])
    if op == "lit":
        return "null" if node[1] is None else str(node[1]).lower() if isinstance(node[1], bool) else repr(node[1])
    if op == "date":
        return node[1]
    if op == "today":
        return TODAY
    if op == "neg":
        return f"-{_describe(node[1])}"
    if op == "arith":
        return f"({_describe(node[2])} {node[1]} {_describe(node[3])})"
    return "a condition"


def _number(node: tuple, value: Any) -> float | int:
    """An arithmetic operand as a number (a numeric string counts); else why not."""
    if value is None:
        raise EvalError(f"{_describe(node)} is missing")
    if isinstance(value, bool):
        raise EvalError(f"{_describe(node)} is {str(value).lower()}, not a number")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return _tidy(float(value))
        except ValueError:
            pass
    shown = render_value(value) if isinstance(value, str | date) else type(value).__name__
    raise EvalError(f"{_describe(node)} is {shown!r}, not a number")


def _arith(node: tuple, a: Any, b: Any) -> Any:
    op, left, right = node[1], node[2], node[3]
    da, db = _as_date(a), _as_date(b)
    if da is not None or db is not None:
        if op == "-" and da is not None and db is not None:
            return (da - db).days  # the days between two dates
        if op in ("+", "-") and da is not None and db is None:
            days = _number(right, b)
            return da + timedelta(days=days if op == "+" else -days)
        if op == "+" and db is not None and da is None:
            return db + timedelta(days=_number(left, a))
        raise EvalError(f"{_describe(left)} {op} {_describe(right)}: dates can only be compared, subtracted, "
                        "or moved by a number of days")
    x, y = _number(left, a), _number(right, b)
    if op == "+":
        return _tidy(x + y)
    if op == "-":
        return _tidy(x - y)
    if op == "*":
        return _tidy(x * y)
    if y == 0:
        raise EvalError(f"division by zero ({_describe(right)} is 0)" if right[0] != "lit" else "division by zero")
    return _tidy(x / y)


def _compare(op: str, a: Any, b: Any) -> bool:
    da, db = _as_date(a, timestamps=False), _as_date(b, timestamps=False)
    if op in ("==", "==="):
        return (da == db) if da is not None and db is not None else _loose(a) == _loose(b)
    if op in ("!=", "!=="):
        return (da != db) if da is not None and db is not None else _loose(a) != _loose(b)
    da, db = _as_date(a), _as_date(b)
    if da is not None or db is not None:  # dates order as dates; a date against anything else is false
        if da is None or db is None:
            return False
        return {"<": da < db, "<=": da <= db, ">": da > db, ">=": da >= db}[op]
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return {"<": fa < fb, "<=": fa <= fb, ">": fa > fb, ">=": fa >= fb}[op]


def _loose(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v.strip().lower()
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int | float):
        return float(v)
    return v


def render_value(value: Any, money: bool = False) -> str:
    """A computed value as a message writes it: a whole number without ``.0``, others to at most two
    decimals (exactly two after a currency sign), a date as ``YYYY-MM-DD``, true/false as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        value = value.date()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        if value.is_integer():
            return str(int(value))
        if money:
            return f"{value:,.2f}"
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return "" if value is None else str(value)
