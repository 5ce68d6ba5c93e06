"""A remembered default offered for a slot ("the same budget as last time?"): where the goal keeps the offer, and
whether a reply takes it (:mod:`core.engine.offers` makes the offers)."""

from __future__ import annotations

from typing import Any

from core.language import text as T

REMEMBERED = "_remembered"
"""Goal slot holding the remembered defaults offered: ``{slot: {"min": low|None, "max": high}}``, or ``None``
once declined (:mod:`core.engine.offers` makes the offers)."""


def takes_offer(text: str) -> bool | None:
    """True when a reply accepts an offered default ("yes", "same as before"), False when it declines it,
    None when neither."""
    if T.SAME.search(text):
        return True
    return T.yes_no(text)


def accepted_value(slots: dict[str, Any], name: str, text: str) -> float | None:
    """The remembered value a reply accepts for a slot ("yes", "same as before"), else None."""
    offer = (slots.get(REMEMBERED) or {}).get(name)
    if offer is None or takes_offer(text) is not True:
        return None
    high = float(offer["max"])
    return int(high) if high.is_integer() else high
