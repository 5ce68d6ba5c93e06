"""The payments back office (trusted code of this workspace: see the README's Security section).

Each conversation has its own pending payment request, kept in this module's memory under the session id
the engine passes to every function that declares a ``session_id`` parameter: a request prepared in one
chat is pending only in that chat, and another conversation (another customer, or the same customer in a
new chat) never sees it. ``customer_id`` is passed the same way (``None`` for a customer not signed in).
"""

from __future__ import annotations

import hashlib
import threading

from core.errors import ToolError

PENDING: dict[str, dict[str, object]] = {}  # session id -> the payment request pending in that conversation
SENT: dict[str, list[dict[str, object]]] = {}  # session id -> the payments sent from that conversation
_LOCK = threading.Lock()  # tools run in threads of their own


def _amount(amount: object) -> float | int:
    try:
        value = float(str(amount).replace(",", ""))
    except ValueError:
        raise ToolError(f"invalid amount: {amount}", "invalid_input", public=True) from None
    if value <= 0:
        raise ToolError("invalid amount: a payment must be more than 0 euros", "invalid_input", public=True)
    return int(value) if value.is_integer() else round(value, 2)


def create_request(contact: str, amount: object, session_id: str, customer_id: str | None = None) -> dict[str, object]:
    """Prepare a payment to ``contact``, pending in this conversation until it is confirmed."""
    number = hashlib.sha256(f"{session_id}|{contact}|{amount}".encode()).hexdigest()[:6].upper()
    request: dict[str, object] = {"request_id": f"PR-{number}", "contact": str(contact), "amount": _amount(amount),
                                  "status": "pending", "requested_by": customer_id or "guest"}
    with _LOCK:
        PENDING[session_id] = request
    return dict(request)


def pending_request(session_id: str) -> dict[str, object]:
    """The payment request pending in this conversation, or ``{"status": "none"}``."""
    with _LOCK:
        request = PENDING.get(session_id)
    return dict(request) if request is not None else {"status": "none"}


def send_request(session_id: str) -> dict[str, object]:
    """Send the payment request pending in this conversation (it is then no longer pending)."""
    with _LOCK:
        request = PENDING.pop(session_id, None)
        if request is None:
            raise ToolError("invalid request: there is no payment request pending in this conversation",
                            "invalid_input", public=True)
        sent = {**request, "status": "sent"}
        SENT.setdefault(session_id, []).append(sent)
    return dict(sent)
