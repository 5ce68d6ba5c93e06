"""Remembered values offered as a question's default ("Still around ฿30,000–฿40,000?")."""

from __future__ import annotations

from typing import Any

import pytest

from core.engine.offers import forget_offers, offer_question, remembered_range
from core.state.memory import PreferenceSummary
from core.understanding.answers import REMEMBERED, accepted_value, takes_offer

RANGE = PreferenceSummary(budget_min=30000, budget_max=40000)


@pytest.mark.parametrize(
    ("kind", "about", "prefs", "expected"),
    [
        ("money", "budget a budget, e.g. 1500", RANGE, (30000, 40000)),
        ("money", "max_spend how much you want to spend", PreferenceSummary(budget_max=900), (None, 900)),
        ("money", "refund_amount the amount to refund", RANGE, None),  # a sum of money, not a budget
        ("number", "budget a number", RANGE, None),
        ("money", "budget a budget", PreferenceSummary(budget_min=30000), None),  # no upper bound known
        ("money", "budget a budget", PreferenceSummary(), None),
    ],
)
def test_what_is_offered(kind: str, about: str, prefs: PreferenceSummary, expected: Any) -> None:
    assert remembered_range(kind, about, prefs) == expected


def test_offer_accept_and_decline() -> None:
    slots: dict[str, Any] = {}
    assert offer_question(slots, "budget", (30000, 40000), "THB") == "Still around ฿30,000–฿40,000?"
    assert slots[REMEMBERED] == {"budget": {"min": 30000, "max": 40000}}  # the figures' source, for grounding
    assert offer_question({}, "budget", (None, 1500.5), "USD") == "Still up to $1,500.50?"
    for reply in ("yes", "sure", "same as before", "that's still right", "keep it the same"):
        assert accepted_value(slots, "budget", reply) == 40000
    for reply in ("25k", "keep it short", "what do you have?", "no"):
        assert accepted_value(slots, "budget", reply) is None
    for reply in ("maybe", "no, less this time"):  # what an agent does with a reply to the offer
        if takes_offer(reply) is False:
            forget_offers(slots, ["budget"])
        if reply == "maybe":
            assert slots[REMEMBERED]["budget"] is not None  # not a "no"
    assert slots[REMEMBERED]["budget"] is None
    assert offer_question(slots, "budget", (30000, 40000), "THB") == ""  # not offered again
    assert accepted_value(slots, "budget", "yes") is None
