"""The delivery back office of the engine note: cancel an order, refund it."""

from __future__ import annotations

from typing import Any


def cancel_order(orderId: str, reason: str) -> dict[str, Any]:  # noqa: N803 - the note's own parameter names
    return {"orderId": orderId, "cancelled": True, "reason": reason}


def refund_order(orderId: str, amount: float) -> dict[str, Any]:  # noqa: N803
    return {"orderId": orderId, "refunded": float(amount), "refundId": f"RF-{orderId}"}
