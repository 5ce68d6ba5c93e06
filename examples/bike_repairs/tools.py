"""The workshop's back office (trusted code of this workspace: see the README's Security section)."""

from __future__ import annotations

import hashlib

from core.errors import ToolError

TICKETS = {
    "RT-2041": {"ticket_id": "RT-2041", "status": "waiting for parts", "estimate_eur": 85},
    "RT-2042": {"ticket_id": "RT-2042", "status": "ready for pickup", "estimate_eur": 40},
}


def lookup(ticket_id: str) -> dict[str, object]:
    ticket = TICKETS.get(str(ticket_id).upper())
    if ticket is None:
        raise ToolError(f"there is no repair ticket {ticket_id}", "invalid_input", public=True)
    return ticket


def book(customer_name: str, problem: str, day: str, phone: str) -> dict[str, object]:
    number = int(hashlib.sha256(f"{customer_name}{day}".encode()).hexdigest()[:6], 16) % 9000 + 1000
    return {"ticket_id": f"RT-{number}", "day": day}
