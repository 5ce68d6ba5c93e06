"""Expressions in templates: the placeholders of messages, toolParams and GAR metadata (``{order_id}``), those
holding an expression (``{amount * unit_price}``, ``{today + 30}``) filled with its value, and the keys they read."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Any

from core.sop.expr import TODAY, ExprError, parse, paths
from core.sop.expr_eval import EvalError, evaluate, render_value

# The one template language of messages, toolParams and GAR metadata: ``{order_id}``, ``{context.order_id}``,
# ``{order.status}`` (a field of the result a tool step stored under ``order``). Group 1: the path.
TEMPLATE_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_][\w.]*)\s*\}")
# A placeholder holding an expression (``{amount * unit_price}``, ``{today + 30}``); group 1: the expression.
# Which of them are expressions rather than plain references is for :func:`fill_expressions` to judge.
EXPRESSION_REF = re.compile(r"\{([^{}\n]+)\}")
CURRENCY_BEFORE = re.compile(r"[$€£¥฿₹]\s*$")  # an amount written right after a currency sign: two decimals


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
