"""The demo seller backend: status APIs over the CSV files in data/ (a stand-in for real services).

Each function is declared in store.yaml and called through the engine's tool gateway. Lookups of an
unknown id raise ``ToolError(..., "invalid_input")`` so the agent goes back to the step that asked
for the id; everything else returns a small parsed response, as the paper's API tool does.
"""

from __future__ import annotations

import csv
import hashlib
import re
from functools import cache
from pathlib import Path

from core.errors import ToolError

DATA = Path(__file__).resolve().parent / "data"
DEMO_OTP = "123456"  # the demo backend sends no real messages: every OTP it "sends" is this code
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")


@cache
def _table(name: str) -> dict[str, dict[str, str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    key = next(iter(rows[0])) if rows else ""
    return {row[key].strip().upper(): row for row in rows}


def _row(table: str, key: str, what: str) -> dict[str, str]:
    row = _table(table).get(str(key).strip().upper())
    if row is None:
        raise ToolError(f"invalid {what} {key}", "invalid_input")
    return row


def user_status(seller_id: str) -> dict[str, str]:
    """The seller account's status: onboarding, active or on-hold."""
    return {"status": _row("sellers.csv", seller_id, "seller id")["status"]}


def listing_status(listing_id: str) -> dict[str, str]:
    """A listing's status: active, inactive or blocked."""
    row = _row("listings.csv", listing_id, "listing id")
    return {"listing_id": row["listing_id"], "title": row["title"], "status": row["status"]}


def block_reason(listing_id: str) -> dict[str, str]:
    """Why a blocked listing is blocked."""
    row = _row("listings.csv", listing_id, "listing id")
    if row["status"] != "blocked":
        raise ToolError(f"listing {row['listing_id']} is not blocked", "failure")
    return {"block_reason": row["block_reason"]}


def reactivation_check(listing_id: str) -> dict[str, bool]:
    """Whether a blocked listing can be reactivated."""
    row = _row("listings.csv", listing_id, "listing id")
    return {"can_reactivate": row["can_reactivate"].strip().lower() == "yes"}


def reason_code(listing_id: str) -> dict[str, str]:
    """The reason code of a block that cannot be lifted, and what the seller can do."""
    row = _row("listings.csv", listing_id, "listing id")
    return {"reason_code": row["reason_code"], "reason": row["reason"], "next_step": row["next_step"]}


def create_ticket(reference_id: str, topic: str = "") -> dict[str, str]:
    """Raise a ticket for a listing or a brand request (the same reference gets the same ticket)."""
    digest = hashlib.sha256(f"{reference_id}|{topic}".encode()).hexdigest()[:6].upper()
    return {"ticket_id": f"TKT-{digest}", "reference_id": reference_id}


def send_otp(destination: str) -> dict[str, str]:
    """Send a one-time password to an email address or phone number."""
    dest = str(destination).strip()
    if EMAIL.fullmatch(dest):
        name, _, domain = dest.partition("@")
        return {"sent_to": f"{name[:2]}***@{domain}", "channel": "email", "demo_code": DEMO_OTP}
    digits = re.sub(r"\D", "", dest)
    if 10 <= len(digits) <= 13:
        return {"sent_to": f"******{digits[-4:]}", "channel": "sms", "demo_code": DEMO_OTP}
    raise ToolError(f"invalid destination {dest!r}: not an email address or phone number", "invalid_input")


def validate_otp(destination: str, otp: str) -> dict[str, bool]:
    """Check the OTP the seller received."""
    if str(otp).strip() != DEMO_OTP:
        raise ToolError("invalid otp: the code does not match the one we sent", "invalid_input")
    return {"valid": True}


def request_status(request_id: str) -> dict[str, object]:
    """A brand approval request: its status and how many hours ago it was submitted."""
    row = _row("brand_requests.csv", request_id, "request id")
    return {"request_id": row["request_id"], "brand": row["brand"], "status": row["status"],
            "hours_since_request": int(row["hours_since_request"])}
