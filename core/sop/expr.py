"""A safe evaluator for SOP conditions and template expressions (never ``eval``).

Grammar, loosest first: ``or``/``||``, ``and``/``&&``, ``not``/``!``, one comparison
(``== != === !== < <= > >=``), ``+ -``, ``* /``, unary ``-``/``+``, then atoms: parentheses, dotted paths
(``context.a.b``, ``items.length``), numbers (``75%`` is 0.75), quoted strings, ISO dates (``2026-11-26``),
``true false null None`` and ``today``. A missing key is null.

Dates: ``today`` is the date the turn runs (a ``today`` key of the context, else the ``today`` given to
:func:`evaluate`, else the clock's date); a ``YYYY-MM-DD`` string compares as a date, ``date ± n`` is ``n`` days
later or earlier, ``date - date`` the days between them. Arithmetic on a missing key, on a value that is not a
number (or date), or a division by zero raises :class:`EvalError`: the caller takes that as false and says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

# The one template language of messages, toolParams and GAR metadata: ``{order_id}``, ``{context.order_id}``,
# ``{order.status}`` (a field of the result a tool step stored under ``order``). Group 1: the path.
TEMPLATE_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_][\w.]*)\s*\}")
# A placeholder holding an expression (``{amount * unit_price}``, ``{today + 30}``); group 1: the expression.
# Which of them are expressions rather than plain references is for :func:`fill_expressions` to judge.
EXPRESSION_REF = re.compile(r"\{([^{}\n]+)\}")

TOKEN = re.compile(
    r"\s*(?:(?P<date>\d{4}-\d{2}-\d{2}(?![\w.]))|(?P<num>\d+(?:\.\d+)?%?)|(?P<str>'[^']*'|\"[^\"]*\")"
    r"|(?P<op>===|!==|==|!=|<=|>=|&&|\|\||[<>!()*/+-])"
    r"|(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*))"
)
KEYWORDS = {"and": "&&", "or": "||", "not": "!"}
LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None, "undefined": None}
COMPARISONS = ("==", "!=", "===", "!==", "<", "<=", ">", ">=")
TODAY = "today"  # the date the turn runs; a context key of that name overrides it
ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")  # what date slots hold (core.workspace.slots.ISO_DATE)
ISO_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ]\d{2}:\d{2}")  # a timestamp's day, for order and arithmetic
CURRENCY_BEFORE = re.compile(r"[$€£¥฿₹]\s*$")  # an amount written right after a currency sign: two decimals


class ExprError(ValueError):
    """A condition cannot be parsed; ``column`` is 1-based."""

    def __init__(self, message: str, column: int) -> None:
        self.column = column
        super().__init__(f"{message} (column {column})")


class EvalError(ValueError):
    """A parsed expression cannot be evaluated on these values (arithmetic on a missing key or on a value
    that is not a number, a division by zero); ``reason`` says which, for the trace."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class Tok:
    kind: str
    value: Any
    col: int


MAX_NESTING = 32  # brackets and "not"s in one condition
MAX_TOKENS = 400  # a chain of operators nests the tree one level each: bounded, never by Python's stack


def tokenize(text: str) -> list[Tok]:
    """Split a condition into tokens."""
    out: list[Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            bad = len(text[pos:]) - len(text[pos:].lstrip())
            raise ExprError(f"unexpected character {text[pos:].strip()[:1]!r}", pos + bad + 1)
        col = m.start(m.lastgroup or 0) + 1
        kind = m.lastgroup or ""
        val: Any = m.group(kind)
        if kind == "date":
            if _as_date(val) is None:
                raise ExprError(f"{val!r} is not a date", col)
        elif kind == "num":
            pct = val.endswith("%")
            val = val.rstrip("%")
            val = float(val) if "." in val else int(val)
            if pct:
                val = _tidy(val / 100)
        elif kind == "str":
            val = val[1:-1]
        elif kind == "name" and val.lower() in KEYWORDS:
            kind, val = "op", KEYWORDS[val.lower()]
        elif kind == "name" and val.lower() in LITERALS:
            kind, val = "lit", LITERALS[val.lower()]
        elif kind == "name" and val.lower() == TODAY:
            kind = "today"
        elif kind == "op" and val == "-" and m.start(kind) == pos:
            _refuse_dashed_word(out, text, m.end())
        out.append(Tok(kind, val, col))
        pos = m.end()
    return out


def _refuse_dashed_word(out: list[Tok], text: str, after: int) -> None:
    """``on-hold`` unquoted (a name, a dash with no space, a letter) is a word, not ``on - hold``: an error
    that says how to write either."""
    if not out or out[-1].kind not in ("name", "today") or not re.match(r"[A-Za-z_]", text[after:after + 1]):
        return
    rest = re.match(r"[\w-]*", text[after:])
    word = f"{out[-1].value}-{rest.group(0) if rest else ''}"
    raise ExprError(f"{word!r} reads as a subtraction: quote a word with a dash, or put spaces around '-'",
                    out[-1].col)


class _Parser:
    def __init__(self, toks: list[Tok], text: str) -> None:
        self.toks = toks
        self.i = 0
        self.text = text

    def peek(self) -> Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> Tok:
        tok = self.peek()
        if tok is None:
            raise ExprError("unexpected end of condition", len(self.text) + 1)
        self.i += 1
        return tok

    def at(self, *ops: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "op" and t.value in ops

    def parse(self) -> tuple:
        node = self.or_()
        tok = self.peek()
        if tok is not None:
            raise ExprError(f"unexpected {tok.value!r}", tok.col)
        return node

    def or_(self) -> tuple:
        node = self.and_()
        while self.at("||"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> tuple:
        node = self.not_()
        while self.at("&&"):
            self.take()
            node = ("and", node, self.not_())
        return node

    def not_(self) -> tuple:
        if self.at("!"):
            self.take()
            return ("not", self.not_())
        return self.cmp()

    def cmp(self) -> tuple:
        node = self.sum_()
        if self.at(*COMPARISONS):
            op = self.take().value
            node = ("cmp", op, node, self.sum_())
        return node

    def sum_(self) -> tuple:
        node = self.term()
        while self.at("+", "-"):
            op = self.take().value
            node = ("arith", op, node, self.term())
        return node

    def term(self) -> tuple:
        node = self.unary()
        while self.at("*", "/"):
            op = self.take().value
            node = ("arith", op, node, self.unary())
        return node

    def unary(self) -> tuple:
        negative = False
        while self.at("-", "+"):  # a loop, not recursion: "- - - 5" cannot exhaust the stack
            negative ^= self.take().value == "-"
        node = self.atom()
        if not negative:
            return node
        if node[0] == "lit" and isinstance(node[1], int | float) and not isinstance(node[1], bool):
            return ("lit", -node[1])  # "-5" is a number, as a literal
        return ("neg", node)

    def atom(self) -> tuple:
        t = self.take()
        if t.kind == "op" and t.value == "(":
            node = self.or_()
            close = self.take()
            if close.value != ")":
                raise ExprError("expected ')'", close.col)
            return node
        if t.kind in ("num", "str", "lit"):
            return ("lit", t.value)
        if t.kind == "date":
            return ("date", t.value)
        if t.kind == "today":
            return ("today",)
        if t.kind == "name":
            return ("path", t.value)
        raise ExprError(f"unexpected {t.value!r}", t.col)


def parse(text: str) -> tuple:
    """Parse a condition into a small tuple AST.

    Raises:
        ExprError: with the column of the problem.
    """
    toks = tokenize(text)
    if not toks:
        raise ExprError("empty condition", 1)
    if len(toks) > MAX_TOKENS:
        raise ExprError(f"the condition is longer than {MAX_TOKENS} words and signs", toks[MAX_TOKENS].col)
    depth = nots = 0
    for t in toks:  # the parser recurses per bracket and per "not": bounded here, never by Python's stack
        if t.kind == "op":
            depth += 1 if t.value == "(" else -1 if t.value == ")" else 0
            nots += t.value == "!"
        if depth + nots > MAX_NESTING:
            raise ExprError(f"the condition nests more than {MAX_NESTING} levels deep", t.col)
    return _Parser(toks, text).parse()


OPERATOR = re.compile(r"===|!==|==|!=|<=|>=|&&|\|\||(?<=\s)[<>](?=\s|$)")
# arithmetic in a text SOP's condition: "amount * price", "total - paid", "75%" (spaced + and -, so "on-hold"
# stays words; "/" is left to words too: "paid / shipped")
ARITHMETIC = re.compile(r"[\w)%]\s*\*\s*[\w(.-]|\s[-+]\s|\d%")


def is_expression(text: str) -> bool:
    """Whether a text SOP's condition is written as an expression (``order.status == "delivered"``,
    ``loan.renewals >= 3``, ``amount * price``) rather than in words ("if the order is delivered")."""
    if OPERATOR.search(text):
        return True
    if not ARITHMETIC.search(text):
        return False
    try:  # arithmetic that also reads as a whole expression; words with a dash or a star stay words
        parse(text)
    except ExprError:
        return False
    return True


def paths(node: tuple) -> list[str]:
    """The context keys a condition reads (without the ``context.`` prefix; ``today`` is not one)."""
    if node[0] == "path":
        return [strip_context(node[1])]
    out: list[str] = []
    for child in node[1:]:
        if isinstance(child, tuple):
            out += paths(child)
    return out


def compares_with_boolean(node: tuple, key: str) -> bool:
    """Whether a condition reads ``key`` as a yes or a no: ``key == true``, ``key !== false``, ``!key`` or the
    key alone."""
    op = node[0]
    if op == "path":
        return strip_context(node[1]) == key
    if op in ("not", "and", "or"):
        return any(compares_with_boolean(child, key) for child in node[1:] if isinstance(child, tuple))
    if op != "cmp":  # a literal, a date, today, arithmetic
        return False
    sides = [c for c in node[2:] if isinstance(c, tuple)]
    has_key = any(c[0] == "path" and strip_context(c[1]) == key for c in sides)
    return has_key and any(c[0] == "lit" and isinstance(c[1], bool) for c in sides)


def strip_context(path: str) -> str:
    """``context.a.b`` -> ``a.b``."""
    return path[len("context."):] if path.startswith("context.") else path


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


def _as_date(value: Any, *, timestamps: bool = True) -> date | None:
    """A date, a ``YYYY-MM-DD`` string (or, with ``timestamps``, a timestamp's day) as a date; else None."""
    if isinstance(value, datetime):
        return value.date() if timestamps else None
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    m = ISO_DATE.fullmatch(text) or (ISO_DATETIME.match(text) if timestamps else None)
    if m is None:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


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


def _tidy(x: float | int) -> float | int:
    """Arithmetic's float noise rounded away (0.1 + 0.2 is 0.3); a whole float stays a float."""
    try:
        return round(x, 9) if isinstance(x, float) else x
    except (OverflowError, ValueError):
        return x


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


# ---------------------------------------------------------------------------- expressions in templates


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


def is_expression_ref(placeholder: str) -> bool:
    """Whether a ``{...}`` placeholder holds an expression (``{amount * unit_price}``, ``{today}``) rather
    than a plain reference (``{order_id}``, ``{context.order.status}``) or no expression at all."""
    inner = placeholder.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    ref = TEMPLATE_REF.fullmatch("{" + inner + "}")
    if ref is not None and ref.group(1).lower() != TODAY:
        return False
    try:
        tree = parse(inner)
    except ExprError:
        return False
    return tree[0] not in ("lit", "path")  # "{2024}" or "{'x'}" is text, not a value to fill


def render_expression(text: str, context: dict[str, Any], today: date | str | None = None,
                      money: bool = False) -> str | None:
    """The value of an expression placeholder's text (``amount * unit_price`` -> ``"750"``), or None when it
    does not parse or cannot be evaluated on these values (the placeholder then stays as written)."""
    try:
        value = evaluate(parse(text), context, today)
    except (ExprError, EvalError, RecursionError):
        return None
    if value is None:
        return None
    return render_value(value, money)


def fill_expressions(template: str, context: dict[str, Any], shown: Callable[[str], str] = str,
                     today: date | str | None = None, computed: list[str] | None = None) -> str:
    """Fill the placeholders of ``template`` that hold expressions (``{amount * unit_price}``,
    ``{context.limit * 0.25}``, ``{today + 30}``); plain references (``{order_id}``) are left for the
    template's own filling, and an expression that cannot be evaluated stays as written. ``shown`` turns a
    rendered value into the message's text (e.g. a date as people write it); ``computed``, when given,
    receives each value filled in (the figures a reply states that no source holds, for a grounding check)."""

    def sub(m: re.Match[str]) -> str:
        if not is_expression_ref(m.group(0)):
            return m.group(0)
        money = bool(CURRENCY_BEFORE.search(template[: m.start()]))
        value = render_expression(m.group(1), context, today, money)
        if value is None:
            return m.group(0)
        if computed is not None:
            computed.append(value)
        return shown(value)

    return EXPRESSION_REF.sub(sub, template)


def template_paths(template: str) -> list[str]:
    """The context keys the expression placeholders of a template read (``{amount * unit_price}`` ->
    ``amount``, ``unit_price``); plain references are ``TEMPLATE_REF``'s."""
    keys: list[str] = []
    for m in EXPRESSION_REF.finditer(template):
        if is_expression_ref(m.group(0)):
            keys += [k for k in paths(parse(m.group(1))) if k not in keys]
    return keys
