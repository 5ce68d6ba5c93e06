"""The library's circulation system (trusted code of this workspace: see the README's Security section)."""

from __future__ import annotations

from datetime import date, timedelta

from core.errors import ToolError

LOAN_DAYS = 21
MAX_RENEWALS = 3
CARDS: dict[str, dict[str, dict[str, object]]] = {
    "21234000012345": {
        "the night circus": {"title": "The Night Circus", "due_date": "2026-12-02", "renewals": 0, "holds": 0},
        "educated": {"title": "Educated", "due_date": "2026-12-05", "renewals": 1, "holds": 2},
        "dune": {"title": "Dune", "due_date": "2026-11-30", "renewals": 3, "holds": 0},
    },
    "21234000067890": {
        "becoming": {"title": "Becoming", "due_date": "2026-12-09", "renewals": 0, "holds": 0},
    },
}


def _card(card_number: str) -> dict[str, dict[str, object]]:
    loans = CARDS.get("".join(ch for ch in str(card_number) if ch.isdigit()))
    if loans is None:
        raise ToolError(f"there is no library card {card_number}", "invalid_input", public=True)
    return loans


def _loan(card_number: str, title: str) -> dict[str, object]:
    loans = _card(card_number)
    wanted = " ".join(str(title).lower().replace("the book", "").split())
    for key, loan in loans.items():
        if key in wanted or wanted in key:
            return loan
    raise ToolError(f"invalid title: {title} is not on loan on this card", "invalid_input", public=True)


def lookup(card_number: str, title: str) -> dict[str, object]:
    return dict(_loan(card_number, title))


def renew(card_number: str, title: str) -> dict[str, object]:
    loan = _loan(card_number, title)
    due = (date.today() + timedelta(days=LOAN_DAYS)).isoformat()
    return {"title": loan["title"], "due_date": due, "renewals": int(str(loan["renewals"])) + 1}


def block(card_number: str) -> dict[str, object]:
    _card(card_number)
    return {"blocked": True, "replacement_fee": 2}
