"""A slot's params: ``a|b:type|c?`` as written in gar.csv and store.yaml, and which slot fills each of a
tool's params."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Param:
    """A slot named in gar.csv ``params``; ``?`` marks it optional, ``:type`` declares its type
    (``order_id:id``, ``note:free_text?``; core/workspace/slots.py ``SLOT_TYPES``)."""

    name: str
    optional: bool = False
    type: str = ""


def parse_params(text: str) -> list[Param]:
    """Parse ``a|b:type|c?`` into params (``c:type?`` and ``c?:type`` are both optional and typed)."""
    out = []
    for part in (text or "").split("|"):
        name, _, typ = part.partition(":")
        optional = name.strip().endswith("?") or typ.strip().endswith("?") or (not typ and part.strip().endswith("?"))
        name = name.strip().rstrip("?").strip()
        if name:
            out.append(Param(name, optional, typ.strip().rstrip("?").strip()))
    return out


def _name_tokens(name: str) -> set[str]:
    """Words of a slot or param name: snake_case, kebab-case and camelCase alike (``FullName`` ~ ``full_name``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    return {t for t in re.split(r"[\W_]+", spaced.lower()) if t}


def bind_params(params: list[Param], names: list[str]) -> dict[str, str]:
    """Which slot fills each of a tool's params (tool param -> slot name), paper §2.4.

    SOP slots may carry generic or step-specific names (``old_email``, ``old_email_otp``) while
    the API has its own (``destination``, ``otp``). A slot with the param's exact name wins;
    then the slot sharing the most name words with the param; then the remaining slots fill
    the remaining params in order, required params first. Slots left over are not bound.
    """
    bound = {p.name: p.name for p in params if p.name in names}
    free = [n for n in names if n not in bound.values()]
    todo = [p for p in params if p.name not in bound]
    todo.sort(key=lambda p: p.optional)
    for p in list(todo):
        scored = [(len(_name_tokens(p.name) & _name_tokens(n)), -i, n) for i, n in enumerate(free)]
        best = max(scored, default=(0, 0, ""))
        if best[0] > 0:
            bound[p.name] = best[2]
            free.remove(best[2])
            todo.remove(p)
    for p in todo:
        if free:
            bound[p.name] = free.pop(0)
    return bound
