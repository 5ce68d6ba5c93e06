"""Lumen Mobile's demo line backend (stand-ins for the operator's real services).

Each function is declared in store.yaml and called through the engine's tool gateway. An unknown
number raises ``ToolError(..., "invalid_input")`` so the agent asks for it again.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

from core.errors import ToolError

DATA = Path(__file__).resolve().parent / "data"
PLANS = ("Basic", "Plus", "Unlimited")


@cache
def _lines() -> dict[str, dict[str, str]]:
    with (DATA / "lines.csv").open(encoding="utf-8", newline="") as fh:
        return {row["phone"]: row for row in csv.DictReader(fh)}


def _line(phone: str) -> dict[str, str]:
    row = _lines().get("".join(str(phone).split()))  # "+353 85 123 4567" as the engine writes it
    if row is None:
        raise ToolError(f"invalid phone number {phone}: no line of ours has it", "invalid_input")
    return row


def lookup_line(phone: str) -> dict[str, object]:
    """The line's status and plan."""
    row = _line(phone)
    return {"phone": row["phone"], "status": row["status"], "suspended": row["status"] == "suspended",
            "plan": row["plan"]}


def block_sim(phone: str) -> dict[str, object]:
    """Block the line's SIM."""
    return {"blocked": True, "phone": _line(phone)["phone"]}


def order_sim(phone: str, delivery_address: str) -> dict[str, object]:
    """Send a replacement SIM."""
    return {"ordered": True, "phone": _line(phone)["phone"], "address": delivery_address}


def change_plan(phone: str, new_plan: str) -> dict[str, object]:
    """Move the line to another plan."""
    row = _line(phone)
    if new_plan not in PLANS:
        raise ToolError(f"invalid plan {new_plan}", "invalid_input")
    return {"changed": True, "phone": row["phone"], "from": row["plan"], "to": new_plan}


def activate_roaming(phone: str, destination_country: str, travel_date: str) -> dict[str, object]:
    """Switch roaming on from a date."""
    return {"roaming": True, "phone": _line(phone)["phone"], "country": destination_country, "from": travel_date}
