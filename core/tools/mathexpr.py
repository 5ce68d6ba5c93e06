"""Safe arithmetic for the calculator tool: parse with ``ast``, walk, never ``eval``.

Accepted: numbers, ``+ - * / // % **``, unary ``+``/``-`` and parentheses, plus the
way customers write money: thousands separators (``1,500``), ``k``/``m`` suffixes
(``35k``, ``1.5k``, ``2m``), currency symbols before a number (``฿ $ € £``) and
``baht``/``thb``/``บาท`` after one. Everything else raises
``ToolError(kind="invalid_input")`` with a message naming the problem.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from decimal import Decimal

from core.shared.errors import ToolError

Number = int | float

MAX_LENGTH = 500
MAX_EXPONENT = 100
MAX_MAGNITUDE = 1e18
_LIMIT = "1e18"
SIGNIFICANT_DIGITS = 15

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_SYMBOLS: dict[type[ast.AST], str] = {
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
    ast.RShift: ">>", ast.MatMult: "@", ast.Invert: "~", ast.Not: "not",
}
_FORBIDDEN: dict[type[ast.AST], str] = {
    ast.Name: "names",
    ast.Attribute: "attributes",
    ast.Call: "function calls",
    ast.Subscript: "subscripts",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.Lambda: "lambdas",
    ast.Tuple: "tuples",
    ast.List: "lists",
}
_TYPOGRAPHY = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-"})
_CURRENCY = re.compile(r"[฿$€£]\s*(?=[\d.])")
_UNIT = re.compile(r"(?<=[\dkKmM])\s*(?:baht|thb|บาท)(?![^\W\d_])", re.IGNORECASE)
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d,])")
_SUFFIX = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)\s*([kKmM])(?![^\W\d_])")
_MULTIPLIERS = {"k": 1_000, "m": 1_000_000}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely.

    Args:
        expression: E.g. ``"35k * 1.07"``, ``"฿1,500 + 250"``, ``"(2m - 5%3) / 4 baht"``.

    Returns:
        The result; a float with a whole value is returned as an int, and floats are
        rounded to 15 significant digits to hide binary noise (``0.1 + 0.2`` -> ``0.3``).

    Raises:
        ToolError: ``kind="invalid_input"`` for anything that is not plain bounded
            arithmetic (names, calls, strings, division by zero, huge numbers, ...).
    """
    if not isinstance(expression, str):
        raise _invalid(f"expression must be a string, got {type(expression).__name__}")
    if len(expression) > MAX_LENGTH:
        raise _invalid(f"expression too long: {len(expression)} characters (limit {MAX_LENGTH})")
    text = normalize(expression)
    if not text:
        raise _invalid("expression is empty")
    return _tidy(_eval(_parse(text)))


def normalize(expression: str) -> str:
    """Rewrite money notation into plain Python arithmetic (``"฿35k"`` -> ``"35000"``)."""
    text = expression.strip().translate(_TYPOGRAPHY)
    text = _CURRENCY.sub("", text)
    text = _UNIT.sub("", text)
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    return _SUFFIX.sub(_expand_suffix, text).strip()


def _expand_suffix(match: re.Match[str]) -> str:
    """``1.5k`` -> ``1500`` exactly (Decimal, so ``1.1k`` is not 1100.0000000000002)."""
    value = Decimal(match.group(1)) * _MULTIPLIERS[match.group(2).lower()]
    return str(int(value)) if value == value.to_integral_value() else str(value)


def _parse(text: str) -> ast.expr:
    quote = next((c for c in text if c in "'\"\\"), None)
    if quote is not None:  # refused before parsing: no escape-sequence warnings, no f-strings
        raise _invalid(f"strings are not allowed: found {quote!r}")
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise _invalid(f"not a valid arithmetic expression{where}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise _invalid("expression is too deeply nested or malformed") from None


def _eval(node: ast.AST) -> Number:
    """Evaluate one node of the tree, refusing anything but bounded arithmetic."""
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _bounded(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(node.op, _eval(node.left), _eval(node.right))
    raise _invalid(_refusal(node))


def _constant(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "strings" if isinstance(value, str | bytes) else f"{type(value).__name__} values"
        raise _invalid(f"{kind} are not allowed: {value!r}")
    return _bounded(value)


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
        raise _invalid("division by zero")
    if isinstance(op, ast.Pow):
        _check_power(left, right)
    try:
        return _bounded(_BINARY[type(op)](left, right))
    except ZeroDivisionError:
        raise _invalid("division by zero") from None
    except OverflowError:
        raise _invalid(f"result too large (limit {_LIMIT})") from None


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse powers that are huge, complex, or undefined before computing them."""
    if abs(exponent) > MAX_EXPONENT:
        raise _invalid(f"exponent too large: {exponent} (limit {MAX_EXPONENT})")
    if base == 0 and exponent < 0:
        raise _invalid("division by zero (zero to a negative power)")
    if base < 0 and not float(exponent).is_integer():
        raise _invalid(f"fractional power of a negative number: ({base}) ** {exponent}")
    if base != 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise _invalid(f"result too large: {base} ** {exponent} exceeds {_LIMIT}")


def _bounded(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise _invalid(f"result is not a finite number: {value}")
    if abs(value) > MAX_MAGNITUDE:
        raise _invalid(f"number too large: {_short(value)} exceeds {_LIMIT}")
    return value


def _short(value: Number) -> str:
    """A readable rendering of a possibly enormous number."""
    if isinstance(value, int):
        digits = len(str(abs(value)))
        return str(value) if digits <= 20 else f"a {digits}-digit number"
    return f"{value:g}"


def _tidy(value: Number) -> Number:
    """Round away float noise and return whole floats as ints."""
    if isinstance(value, int):
        return value
    value = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return int(value) if value.is_integer() else value


def _refusal(node: ast.AST) -> str:
    """The message explaining why a node is not allowed."""
    source = _source(node)
    if isinstance(node, ast.Tuple):
        return "unexpected ',': use commas only as thousands separators, e.g. 1,500"
    for kind, label in _FORBIDDEN.items():
        if isinstance(node, kind):
            return f"{label} are not allowed: {source!r}"
    op = getattr(node, "op", None)
    if op is not None and type(op) in _SYMBOLS:
        return f"operator {_SYMBOLS[type(op)]!r} is not allowed"
    return f"{type(node).__name__} is not allowed: {source!r}"


def _source(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.unparse(node)
    except Exception:  # unparse is best-effort; the message must still be produced
        return type(node).__name__


def _invalid(message: str) -> ToolError:
    return ToolError(message, kind="invalid_input")
