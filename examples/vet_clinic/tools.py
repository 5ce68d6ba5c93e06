"""The clinic's back office (trusted code of this workspace)."""

from __future__ import annotations

import hashlib
import re

from core.errors import ToolError

MEMBERS = {
    "ana_ruiz_2281": {"email": "ana@example.com", "phone": "4155550142", "pet": "Bruno"},
    "tom_berg_5512": {"email": "tom@berg.io", "phone": "4155550199", "pet": "Misha"},
}


def verify(member_id: str, email: str, phone: str) -> dict[str, object]:
    member = MEMBERS.get(str(member_id).lower())
    digits = re.sub(r"\D", "", str(phone))[-10:]
    if member is None or member["email"] != str(email).lower() or member["phone"] != digits:
        raise ToolError("those details don't match a member", "invalid_input", public=True)
    return {"member_id": member_id, "verified": True}


def _ref(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:6].upper()


def order_food(member_id: str, pet_name: str, bags: int) -> dict[str, object]:
    return {"order_ref": f"FD-{_ref(member_id, pet_name, bags)}", "bags": bags}


def prepay(member_id: str, amount: float, card_last4: str) -> dict[str, object]:
    return {"receipt": f"PP-{_ref(member_id, amount, card_last4)}", "charged": amount}
