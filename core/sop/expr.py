"""A safe evaluator for JSON SOP conditions (never ``eval``).

Grammar: ``or``/``||``, ``and``/``&&``, ``not``/``!``, comparisons
(``== != === !== < <= > >=``), parentheses, dotted paths (``context.a.b``),
numbers, quoted strings, ``true false null None``. A missing key is null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The one template language of messages, toolParams and GAR metadata: ``{order_id}``, ``{context.order_id}``,
# ``{order.status}`` (a field of the result a tool step stored under ``order``). Group 1: the path.
TEMPLATE_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_][\w.]*)\s*\}")

TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>===|!==|==|!=|<=|>=|&&|\|\||[<>!()])"
    r"|(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*))"
)
KEYWORDS = {"and": "&&", "or": "||", "not": "!"}
LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None, "undefined": None}


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


def tokenize(text: str) -> list[Tok]:
    """Split a condition into tokens."""
    out: list[Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"unexpected character {text[pos:].strip()[:1]!r}", pos + 1)
        col = m.start(m.lastgroup or 0) + 1
        kind = m.lastgroup or ""
        val: Any = m.group(kind)
        if kind == "num":
            val = float(val) if "." in val else int(val)
        elif kind == "str":
            val = val[1:-1]
        elif kind == "name" and val.lower() in KEYWORDS:
            kind, val = "op", KEYWORDS[val.lower()]
        elif kind == "name" and val.lower() in LITERALS:
            kind, val = "lit", LITERALS[val.lower()]
        out.append(Tok(kind, val, col))
        pos = m.end()
    return out


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

    def parse(self) -> tuple:
        node = self.or_()
        tok = self.peek()
        if tok is not None:
            raise ExprError(f"unexpected {tok.value!r}", tok.col)
        return node

    def or_(self) -> tuple:
        node = self.and_()
        while (t := self.peek()) and t.kind == "op" and t.value == "||":
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> tuple:
        node = self.not_()
        while (t := self.peek()) and t.kind == "op" and t.value == "&&":
            self.take()
            node = ("and", node, self.not_())
        return node

    def not_(self) -> tuple:
        t = self.peek()
        if t and t.kind == "op" and t.value == "!":
            self.take()
            return ("not", self.not_())
        return self.cmp()

    def cmp(self) -> tuple:
        node = self.atom()
        t = self.peek()
        if t and t.kind == "op" and t.value in ("==", "!=", "===", "!==", "<", "<=", ">", ">="):
            self.take()
            node = ("cmp", t.value, node, self.atom())
        return node

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
    depth = nots = 0
    for t in toks:  # the parser recurses per bracket and per "not": bounded here, never by Python's stack
        if t.kind == "op":
            depth += 1 if t.value == "(" else -1 if t.value == ")" else 0
            nots += t.value == "!"
        if depth + nots > MAX_NESTING:
            raise ExprError(f"the condition nests more than {MAX_NESTING} levels deep", t.col)
    return _Parser(toks, text).parse()


OPERATOR = re.compile(r"===|!==|==|!=|<=|>=|&&|\|\||(?<=\s)[<>](?=\s|$)")


def is_expression(text: str) -> bool:
    """Whether a text SOP's condition is written as an expression (``order.status == "delivered"``,
    ``loan.renewals >= 3``) rather than in words ("if the order is delivered")."""
    return bool(OPERATOR.search(text))


def paths(node: tuple) -> list[str]:
    """The context keys a condition reads (without the ``context.`` prefix)."""
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
    if op == "lit":
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


def evaluate(node: tuple, context: dict[str, Any]) -> Any:
    """Evaluate a parsed condition against the context."""
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "path":
        return lookup(context, node[1])
    if op == "not":
        return not evaluate(node[1], context)
    if op == "and":
        return bool(evaluate(node[1], context)) and bool(evaluate(node[2], context))
    if op == "or":
        return bool(evaluate(node[1], context)) or bool(evaluate(node[2], context))
    return _compare(node[1], evaluate(node[2], context), evaluate(node[3], context))


def _compare(op: str, a: Any, b: Any) -> bool:
    if op in ("==", "==="):
        return _loose(a) == _loose(b)
    if op in ("!=", "!=="):
        return _loose(a) != _loose(b)
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
