"""A slot value a model proposes, checked the way the rules check theirs (:func:`check_value`): of the slot's
kind, among the offered choices, and, for ids, emails, codes, phone numbers and amounts, written by the
customer."""

from __future__ import annotations

import re
from typing import Any

from core.language import text as T
from core.understanding.brains.commands import InvalidProposal
from core.understanding.extract import DECLINE, extract, resolve_reference
from core.workspace.slots import IDENTIFYING_KINDS, SlotType, validate

NUMERIC_KINDS = {"money", "number"}


def check_value(st: SlotType, raw: str, message: str, candidates: list[dict[str, Any]] | None = None,
                expects: str = "") -> Any:
    """A proposed slot value in the slot's own form, if the customer's message supports it.

    Raises:
        InvalidProposal: the value is empty, of the wrong form (not "a 6-digit OTP"), not among the
            offered choices, or (ids, emails, codes, phone numbers, amounts) not in the message.
    """
    value = " ".join(str(raw).split())
    what = expects or st.kind
    candidates = candidates or []
    if not value:
        raise InvalidProposal(f"the value for {st.name!r} is empty")
    if st.kind == "boolean":
        yn = T.yes_no(value)
        if yn is None:
            raise InvalidProposal(f"{st.name!r} takes yes or no, not {value!r}")
        return yn
    if st.kind == "choice":
        return _check_choice(st, value, candidates)
    if st.kind == "text":
        return value[:500]
    got = extract(st, value, asked=True, candidates=candidates)
    if not validate(st, got):
        raise InvalidProposal(f"{value!r} is not a valid {st.name} ({what})")
    if st.kind in IDENTIFYING_KINDS and not _written(st, value, got, message):
        raise InvalidProposal(f"{got!r} does not appear in the customer's message; copy values, never invent them")
    if st.kind in NUMERIC_KINDS and round(float(got), 2) not in T.number_forms(message):
        raise InvalidProposal(f"{got!r} is not an amount the customer wrote")
    return got


def _check_choice(st: SlotType, value: str, candidates: list[dict[str, Any]]) -> Any:
    if DECLINE.match(value):
        return False
    picked = resolve_reference(value, candidates, pronouns=False) if candidates else None
    if picked is None:
        names = ", ".join(str(c.get("name") or c.get("sku")) for c in candidates) or "(nothing was offered)"
        raise InvalidProposal(f"{value!r} is not one of the offered items: {names}")
    return picked.get("name") or picked.get("sku")


def _alnum(text: str) -> str:
    return re.sub(r"[^0-9a-z@.]", "", text.lower())


def _written(st: SlotType, raw: str, got: Any, message: str) -> bool:
    """Whether the customer wrote this value: as the model copied it, or in the slot's form (a phone number
    in its national digits too: "415 555 0199" is written where the slot's form is "+1 415-555-0199")."""
    said = _alnum(message)
    forms = {_alnum(raw), _alnum(str(got))}
    if st.kind == "phone":
        forms.add(_national_digits(str(got)))
    return any(form and form in said for form in forms)


def _national_digits(number: str) -> str:
    """A phone number's national digits ("+1 415-555-0199" -> "4155550199"); "" when it is not international."""
    if not number.startswith("+"):
        return ""
    import phonenumbers

    try:
        return str(phonenumbers.parse(number, None).national_number)
    except phonenumbers.NumberParseException:
        return ""
