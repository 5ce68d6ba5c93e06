"""Northwind Home's demo order and account backend (stand-ins for the shop's real services).

Each function is declared in store.yaml and called through the engine's tool gateway. An unknown
order, username or an email that does not match the account raises ``ToolError(..., "invalid_input")``
so the agent asks again for what was wrong.
"""

from __future__ import annotations

import csv
import hashlib
from functools import cache
from pathlib import Path

from core.errors import ToolError

DATA = Path(__file__).resolve().parent / "data"


@cache
def _table(name: str) -> dict[str, dict[str, str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    key = next(iter(rows[0])) if rows else ""
    return {row[key].strip().lower(): row for row in rows}


def _order(order_id: str) -> dict[str, str]:
    row = _table("orders.csv").get(str(order_id).strip().lower())
    if row is None:
        raise ToolError(f"invalid order number {order_id}", "invalid_input")
    return row


def _ref(prefix: str, *parts: str) -> str:
    return prefix + hashlib.sha1("|".join(parts).encode()).hexdigest()[:6].upper()


def cancel_order(order_id: str) -> dict[str, object]:
    """Cancel an order that has not shipped yet."""
    row = _order(order_id)
    if row["status"] != "processing":
        raise ToolError(f"order {row['order_id']} is {row['status']} and cannot be cancelled", "failure")
    return {"cancelled": True, "order_id": row["order_id"], "refund_amount": row["total"]}


def issue_refund(order_id: str, refund_reason: str) -> dict[str, object]:
    """Refund a delivered order to the original payment method."""
    row = _order(order_id)
    return {"refund_id": _ref("RF-", row["order_id"], refund_reason), "amount": row["total"]}


def update_address(order_id: str, new_address: str, phone: str) -> dict[str, object]:
    """Change the delivery address of an order that has not shipped."""
    row = _order(order_id)
    return {"updated": True, "order_id": row["order_id"], "address": new_address, "courier_phone": phone}


def send_reset(username: str, email: str) -> dict[str, object]:
    """Send a password reset link when the email is the one on the account."""
    row = _table("accounts.csv").get(str(username).strip().lower())
    if row is None:
        raise ToolError(f"invalid username {username}", "invalid_input")
    if row["email"].lower() != str(email).strip().lower():
        raise ToolError("invalid email: it is not the one on this account", "invalid_input")
    return {"sent": True, "email": row["email"]}


def create_return(order_id: str, return_item: str, return_method: str) -> dict[str, object]:
    """Open a return for one item of a delivered order."""
    row = _order(order_id)
    if row["status"] != "delivered":
        raise ToolError(f"order {row['order_id']} is not delivered yet", "failure")
    return {"rma": _ref("RMA-", row["order_id"], return_item), "method": return_method}
