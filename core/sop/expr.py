"""The SOP condition and template expression language, read: tokens, the parser to a small tuple tree, and
what a tree reads (never ``eval``). :mod:`core.sop.expr_eval` evaluates the trees; :mod:`core.sop.expr_templates`
fills the expressions written in templates.

Grammar, loosest first: ``or``/``||``, ``and``/``&&``, ``not``/``!``, one comparison
(``== != === !== < <= > >=``), ``+ -``, ``* /``, unary ``-``/``+``, then atoms: parentheses, dotted paths
(``context.a.b``, ``items.length``), numbers (``75%`` is 0.75), quoted strings, ISO dates (``2026-11-26``),
``true false null None`` and ``today``. A missing key is null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

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


class ExprError(ValueError):
    """A condition cannot be parsed; ``column`` is 1-based."""

    def __init__(self, message: str, column: int) -> None:
        self.column = column
        super().__init__(f"{message} (column {column})")


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


def _tidy(x: float | int) -> float | int:
    """Arithmetic's float noise rounded away (0.1 + 0.2 is 0.3); a whole float stays a float."""
    try:
        return round(x, 9) if isinstance(x, float) else x
    except (OverflowError, ValueError):
        return x
