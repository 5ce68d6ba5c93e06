"""Arithmetic, percentages and dates in the one expression language of conditions and templates
(core/sop/expr*.py): ``amount * unit_price > 500``, ``utilization >= 75%``, ``contract_end < today``,
``today - opened_on > 60``, ``{amount * unit_price}`` in a message. A value that cannot be computed (a missing
key, a word times a number, a division by zero) makes the condition false with the reason, never an exception;
a condition that does not parse is a lint error with its column. Written on a small print shop of our own."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from core.engine.build import build_orchestrator, load_workspace
from core.language.render import as_text
from core.retrieval.embedding import CachedEmbedder
from core.sop.expr import ExprError, compares_with_boolean, is_expression, parse, paths
from core.sop.expr_eval import EvalError, check, evaluate
from core.sop.expr_templates import fill_expressions, render_expression, template_paths
from core.understanding import fill_template
from core.workspace.slots import written_date

TODAY = date(2026, 11, 26)


def holds(condition: str, **context: object) -> bool:
    return bool(evaluate(parse(condition), dict(context), TODAY))


# ---------------------------------------------------------------------------- arithmetic and percentages


@pytest.mark.parametrize(("condition", "expected"), [
    ("1 + 2 * 3 == 7", True),          # * before +
    ("(1 + 2) * 3 == 9", True),
    ("10 - 4 - 3 == 3", True),         # left to right
    ("12 / 4 / 3 == 1", True),
    ("-2 * -3 == 6", True),            # unary minus
    ("-(2 + 3) == -5", True),
    ("2 + 3 > 4 and 2 * 3 < 7", True),  # arithmetic binds tighter than comparisons and "and"
    ("not 2 * 3 > 5", False),
    ("0.1 + 0.2 == 0.3", True),        # float noise rounded away
    ("7 / 2 == 3.5", True),
])
def test_arithmetic_has_the_usual_precedence(condition: str, expected: bool) -> None:
    assert holds(condition) is expected


def test_arithmetic_over_context_values() -> None:
    assert holds("context.amount * context.unit_price > 500", amount=3, unit_price=200)
    assert not holds("context.amount * context.unit_price > 500", amount=2, unit_price=200)
    assert holds("balance - amount >= 0", balance="120", amount=120)  # a number written as text is a number
    assert holds("increase <= limit * 0.25", increase=250, limit=1000)
    assert not holds("increase <= limit * 0.25", increase=251, limit=1000)
    assert holds("order.total * 2 == 90", order={"total": 45})


def test_a_percentage_is_a_fraction() -> None:
    assert evaluate(parse("75%"), {}) == 0.75
    assert holds("utilization >= 75%", utilization=0.8)
    assert not holds("utilization >= 75%", utilization=0.7)
    assert holds("amount <= 25% * limit", amount=250, limit=1000)
    assert not holds("amount <= 25% * limit", amount=260, limit=1000)
    assert holds("used / limit >= 75%", used=900, limit=1000)


# ---------------------------------------------------------------------------- dates


def test_iso_dates_compare_with_today() -> None:
    assert holds("contract_end < today", contract_end="2026-11-25")
    assert not holds("contract_end < today", contract_end="2026-11-26")
    assert holds("contract_end == today", contract_end="2026-11-26")
    assert holds("due_date <= today + 30", due_date="2026-12-26")
    assert not holds("due_date <= today + 30", due_date="2026-12-27")
    assert holds("starts > today - 7", starts="2026-11-20")
    assert holds("contract_end < 2026-12-31", contract_end="2026-12-30")  # a date written in the condition
    assert holds("contract_end < '2026-12-31'", contract_end="2026-12-30")
    assert holds("contract_end > '2026-02-01'", contract_end="2026-10-01")  # as dates, not as text or numbers


def test_days_between_two_dates() -> None:
    assert evaluate(parse("today - opened_on"), {"opened_on": "2026-09-01"}, TODAY) == 86
    assert holds("today - opened_on > 60", opened_on="2026-09-01")
    assert not holds("today - opened_on > 60", opened_on="2026-10-01")
    assert evaluate(parse("returned_on - bought_on"), {"returned_on": "2026-03-01", "bought_on": "2026-02-01"}) == 28


def test_today_is_the_given_date_a_context_key_or_the_clock() -> None:
    tree = parse("today == '2026-11-26'")
    assert evaluate(tree, {}, TODAY) is True
    assert evaluate(tree, {}, "2026-11-26") is True
    assert evaluate(tree, {"today": "2026-01-01"}, TODAY) is False  # a context key wins, for tests
    assert evaluate(parse("today"), {}) == date.today()
    assert paths(parse("contract_end < today + 30")) == ["contract_end"]  # today is no key to ask for


# ---------------------------------------------------------------------------- what cannot be computed


@pytest.mark.parametrize(("condition", "context", "reason"), [
    ("amount * unit_price > 500", {"unit_price": 200}, "amount is missing"),
    ("amount * unit_price > 500", {"amount": "three", "unit_price": 200}, "amount is 'three', not a number"),
    ("budget / amount >= 100", {"budget": 500, "amount": 0}, "division by zero (amount is 0)"),
    ("total / (a - b) > 1", {"total": 5, "a": 2, "b": 2}, "division by zero ((a - b) is 0)"),
    ("today * 2 > 1", {}, "dates can only be compared, subtracted, or moved by a number of days"),
])
def test_a_value_that_cannot_be_computed_is_false_with_the_reason(condition: str, context: dict, reason: str) -> None:
    with pytest.raises(EvalError) as caught:
        evaluate(parse(condition), context, TODAY)
    assert reason in caught.value.reason
    assert check(condition, context, TODAY) == (False, caught.value.reason)


def test_existing_comparisons_are_unchanged() -> None:
    assert holds("missing > 5") is False  # a missing key compared is false, as before (no error)
    assert holds("missing == null") is True
    assert holds("status === 'Delivered'", status="delivered")
    assert holds("items.length > 1", items=[1, 2])
    assert holds("!flag && x != 'a' || false", flag=False, x="b")
    assert holds("a and b", a=True, b=False) is False
    assert holds("x > 2", x="10")  # numbers written as text still compare as numbers
    assert holds("a == b", a="On-Hold", b="on-hold ")
    assert compares_with_boolean(parse("context.wants == true"), "wants")
    assert not compares_with_boolean(parse("context.n * 2 > 1"), "n")


@pytest.mark.parametrize(("condition", "column"), [
    ("context.amount * * 2 > 5", 18),
    ("amount ** 2 > 5", 9),
    ("amount % 2 > 5", 8),
    ("amount * (price + 2 > 5", 24),
    ("amount + > 5", 10),
    ("status == on-hold", 11),  # a word with a dash, unquoted: not a subtraction of two keys
])
def test_a_condition_that_does_not_parse_says_where(condition: str, column: int) -> None:
    with pytest.raises(ExprError) as caught:
        parse(condition)
    assert caught.value.column == column, str(caught.value)


def test_a_json_condition_that_does_not_parse_is_a_lint_error_with_its_column(tmp_path: Path,
                                                                             embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws", condition="context.quantity * * context.unit_price > 500")
    source = (root / "sops" / "order.json").read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, start=1) if '"check": {' in text)
    errors = [str(p) for p in load_workspace(root, embedder).problems if p.severity == "error"]
    assert f"sops/order.json:{line}:20: error: decision 'check': unexpected '*' (column 20)" in errors, errors


# ---------------------------------------------------------------------------- templates


def test_a_template_placeholder_may_hold_an_expression() -> None:
    values = {"amount": 3, "unit_price": 250, "limit": 1000, "price": 3, "ticket": "RT-1"}
    assert render_expression("amount * unit_price", values) == "750"  # no trailing .0
    assert render_expression("context.limit * 0.25", values) == "250"
    assert render_expression("amount / 8", values) == "0.38"
    assert render_expression("amount * missing", values) is None
    filled = fill_expressions("{amount} at {unit_price}: {amount * unit_price}, a quarter of the limit is "
                              "{context.limit * 0.25}, ${price * 1.5} each, ticket {ticket}", values)
    assert filled == ("{amount} at {unit_price}: 750, a quarter of the limit is 250, $4.50 each, "
                      "ticket {ticket}")  # plain references are left to the template's own filling
    assert fill_expressions("{amount * nothing} {2024} {\"a\": 1}", values) == "{amount * nothing} {2024} {\"a\": 1}"
    computed: list[str] = []  # what a grounding check needs to know the reply states
    fill_expressions("{amount * unit_price} and {today + 1}", {**values, "today": "2026-11-26"}, computed=computed)
    assert computed == ["750", "2026-11-27"]
    assert template_paths("{amount * unit_price} for {ticket}, by {today + 30}") == ["amount", "unit_price"]


def test_an_expression_template_through_fill_template() -> None:
    """What the suggested hook in core/understanding/brains/rule.fill_template does: expressions first, then
    references."""
    values = {"amount": 3, "unit_price": 250, "today": "2026-11-26", "name": "Ana"}
    shown = lambda v: as_text(written_date(v))  # noqa: E731
    template = "{name}: {amount} units come to {amount * unit_price}; pay by {today + 30}."
    assert fill_template(fill_expressions(template, values, shown), values) == \
        "Ana: 3 units come to 750; pay by 26 December 2026."


def test_a_text_condition_with_arithmetic_is_an_expression() -> None:
    assert is_expression("total * 0.9 > budget")
    assert is_expression("amount * price")
    assert is_expression("balance - amount")
    for words in ("its active or on-hold", "in-progress or disapproved", "the discount is 10%", "paid / shipped",
                  "less than or equal to 72 hrs"):
        assert not is_expression(words), words


# ---------------------------------------------------------------------------- through the engine

STORE = """name: Inkwell Print Shop
currency: USD
region: US
agents:
  desk: {goals: "orders.*", tools: []}
"""
GAR = "action,action_type,user_interaction_metadata,api,params\n"


def order_sop(condition: str) -> dict[str, object]:
    return {"id": "orders.place", "name": "Place a print order", "triggers": ["I want to place a print order"],
            "slots": {"quantity": "number", "unit_price": "money"}, "startNode": "ask_quantity", "nodes": {
                "ask_quantity": {"type": "action", "description": "Ask the customer how many prints they need",
                                 "messageTemplate": "How many prints do you need?", "resultKey": "quantity",
                                 "nextNodes": ["ask_price"]},
                "ask_price": {"type": "action", "description": "Ask the customer for the price per print",
                              "messageTemplate": "What price per print were you quoted?",
                              "resultKey": "unit_price", "nextNodes": ["check"]},
                "check": {"type": "decision", "description": "Is the order over 500?", "condition": condition,
                          "nextNodes": ["approval", "placed"]},
                "approval": {"type": "action", "description": "Tell the customer a manager must approve",
                             "messageTemplate": "Orders over 500 dollars need a manager's approval: "
                                                "I have passed yours on.", "nextNodes": ["end"]},
                "placed": {"type": "action", "description": "Tell the customer the order is placed",
                           "messageTemplate": "Your order is placed.", "nextNodes": ["end"]},
                "end": {"type": "end"}}}


def shop(root: Path, condition: str = "context.quantity * context.unit_price > 500") -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "sops" / "order.json").write_text(json.dumps(order_sop(condition), indent=1), encoding="utf-8")
    return root


@pytest.mark.parametrize(("quantity", "price", "said"), [("3", "200", "manager's approval"),
                                                         ("2", "200", "Your order is placed.")])
def test_a_json_decision_on_a_product(tmp_path: Path, embedder: CachedEmbedder, quantity: str, price: str,
                                      said: str) -> None:
    root = shop(tmp_path / "ws")
    loaded = load_workspace(root, embedder)
    assert not [str(p) for p in loaded.problems if p.severity == "error"]
    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    assert "How many prints" in orch.handle_message("c1", "I want to place a print order")
    assert "price per print" in orch.handle_message("c1", quantity)
    assert said in orch.handle_message("c1", price)


def test_a_json_decision_that_cannot_be_computed_takes_else_and_says_why(tmp_path: Path,
                                                                        embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws", condition="context.unit_price / (context.quantity - 3) > 5")
    loaded = load_workspace(root, embedder)
    assert not [str(p) for p in loaded.problems if p.severity == "error"]
    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    orch.handle_message("c1", "I want to place a print order")
    orch.handle_message("c1", "3")
    assert "Your order is placed." in orch.handle_message("c1", "200")  # the else branch
    decisions = (orch.last_trace("c1") or {}).get("decisions", [])
    assert any("could not evaluate" in d and "division by zero" in d and d.endswith(": else") for d in decisions), \
        decisions


QUOTE_GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the order total,ask_user_input,the order total in dollars,,total:money
ask customer for their budget,ask_user_input,your budget in dollars,,budget:money
tell customer the order is over budget,message_to_user,"Even with the loyalty discount the order is over your budget.",,
tell customer the order fits the budget,message_to_user,"With the loyalty discount the order fits your budget.",,
"""
QUOTE_SOP = """---
id: orders.quote
title: Check a quote against the budget
triggers:
  - does my order fit my budget
  - check my quote against my budget
---
ask customer for the order total
ask customer for their budget
if total * 0.9 > budget:
    tell customer the order is over budget
else:
    tell customer the order fits the budget
"""


@pytest.mark.parametrize(("budget", "said"), [("850", "is over your budget"), ("950", "fits your budget")])
def test_a_text_sop_condition_with_arithmetic(tmp_path: Path, embedder: CachedEmbedder, budget: str,
                                              said: str) -> None:
    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text(QUOTE_GAR, encoding="utf-8")
    (root / "sops" / "quote.sop").write_text(QUOTE_SOP, encoding="utf-8")
    loaded = load_workspace(root, embedder)
    assert not [str(p) for p in loaded.problems if p.severity == "error"]
    sop = next(s for s in loaded.sops if s.id == "orders.quote")
    assert [b.expr for n in sop.nodes.values() for b in n.branches if b.condition] == [True]
    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    assert "total" in orch.handle_message("c1", "does my order fit my budget?")
    assert "budget" in orch.handle_message("c1", "1000")
    assert said in orch.handle_message("c1", budget)
