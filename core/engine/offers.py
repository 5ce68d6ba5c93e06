"""Remembered values offered as the default answer to a question: "Still around ฿30,000–฿40,000?".

When an SOP asks for a money slot that is a spending limit (a budget) and the customer's
preference summary knows their budget range, the question offers it, and a "yes" / "sure" /
"same as before" fills the slot from memory. It is driven by the slot's type and the summary,
never by a particular workspace's wording. The offer is kept in the goal's slots under :data:`REMEMBERED` (so the
grounding check sees where the figures came from, and a re-asked question keeps its offer);
a declined offer is kept as ``None`` and not made again in that goal. Reading a reply to an offer lives in
:mod:`core.understanding.remembered` (``takes_offer``, ``accepted_value``).
"""

from __future__ import annotations

import re
from typing import Any

from core.language import text as T
from core.state.memory.base import PreferenceSummary
from core.understanding import REMEMBERED

SPENDING = re.compile(r"\b(budget|spend|spending|afford|price range|max(imum)? price)\b", re.I)


def remembered_range(kind: str, about: str, prefs: PreferenceSummary) -> tuple[float | None, float] | None:
    """The remembered ``(low, high)`` for a slot, or None.

    Only a money slot that is a spending limit has one: the customer's budget, whose upper bound
    is the slot's value (a budget slot holds the most the customer will spend). ``about`` is the
    slot's name and what a valid answer is; "budget" / "spend" there is what tells a budget from
    another sum of money (a refund amount must never be offered the customer's budget).
    """
    if kind != "money" or prefs.budget_max is None or not SPENDING.search(about.replace("_", " ")):
        return None
    return prefs.budget_min, prefs.budget_max


def offer_question(slots: dict[str, Any], name: str, rng: tuple[float | None, float], currency: str) -> str:
    """Record the offer in the goal's slots and return its sentence; "" when it was declined before."""
    offers = slots.setdefault(REMEMBERED, {})
    if name in offers and offers[name] is None:
        return ""
    low, high = rng
    offers[name] = {"min": low, "max": high}
    if low is not None and low < high:
        return f"Still around {T.format_money(low, currency)}–{T.format_money(high, currency)}?"
    return f"Still up to {T.format_money(high, currency)}?"


def forget_offers(slots: dict[str, Any], names: list[str]) -> None:
    """The remembered defaults of these slots are not offered again in this goal: the customer said no to
    them (:func:`core.understanding.remembered.takes_offer` is False for the reply)."""
    offers = slots.get(REMEMBERED) or {}
    for name in names:
        if offers.get(name) is not None:
            offers[name] = None
