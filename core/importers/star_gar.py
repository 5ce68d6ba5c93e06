"""A STAR task's rows of the workspace's ``gar.csv`` (:mod:`core.importers.star`): an ask per API input, the
query, an inform per message; merged into the rows already there."""

from __future__ import annotations

import csv
import io
import re

from core.importers.star_flow import Ask, Flow
from core.importers.star_sop import ask_description, flat, input_slots, template
from core.workspace.gar_file import GAR_COLUMNS, normalise_action


def gar_rows(flow: Flow, tool: str) -> list[dict[str, str]]:
    """An ask per API input, the query per query node, an inform per message."""
    api = flow.task.api
    assert api is not None
    rows: list[dict[str, str]] = []
    by_field = {a.field.name: a for a in flow.asks.values() if a.field is not None}
    slot_of = input_slots(flow)
    for f in api.inputs:
        ask = by_field.get(f.name) or Ask(f.name, slot_of[f.name], f)
        rows.append(_row(f"ask user for {f.label.lower()}", "ask_user_input", _expects(ask), "", slot_of[f.name]))
    for ask in flow.asks.values():
        if ask.yes_no:
            rows.append(_row(f"ask user to {ask.slot.replace('_', ' ')}", "ask_user_input", "yes or no", "",
                             ask.slot))
    params = "|".join(slot_of[f.name] + ("" if f.name in api.required else "?") for f in api.inputs)
    for q in flow.queries.values():
        variant = "".join(f" {v.lower()}" for v in q.constants.values())
        rows.append(_row(f"query {api.name.replace('_', ' ')}{variant}", "api_call", "", tool, params))
    for m in [*flow.messages, *([flow.nothing_found] if flow.nothing_found else [])]:
        text = re.sub(r"\{context\.(?:\w+\.)?(\w+)\}", r"{\1}", template(flow, m))
        rows.append(_row(m.replace("_", " "), "message_to_user", flat(text), "", ""))
    return rows


def _expects(ask: Ask) -> str:
    """What a valid answer is, for the GAR row: the ask's description without "Ask the customer for"."""
    desc = ask_description(ask)
    return re.sub(r"^Ask the customer (for |to )", "", desc).replace("their ", "your ")


def _row(action: str, kind: str, meta: str, api: str, params: str) -> dict[str, str]:
    return {"action": action, "action_type": kind, "user_interaction_metadata": meta, "api": api, "params": params}


def merge_gar(original: str | None, rows: list[dict[str, str]]) -> tuple[str, list[str]]:
    """The GAR with the new rows appended: identical rows are not repeated, a different row under a
    name already taken gets a numbered name. The original text is kept as it is."""
    notes: list[str] = []
    existing: dict[str, dict[str, str]] = {}
    if original and original.strip():
        for rec in csv.DictReader(io.StringIO(original)):
            action = (rec.get("action") or "").strip()
            if action:
                existing[normalise_action(action)] = {k: (rec.get(k) or "").strip() for k in GAR_COLUMNS}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(GAR_COLUMNS), lineterminator="\n")
    if not existing and not (original or "").strip():
        writer.writeheader()
    for row in rows:
        key = normalise_action(row["action"])
        n = 1
        while key in existing and existing[key] != row:
            n += 1
            row = {**row, "action": f"{row['action']} {n}"}
            key = normalise_action(row["action"])
        if key in existing:
            continue
        if n > 1:
            notes.append(f"gar.csv already has another {row['action'].rsplit(' ', 1)[0]!r}: added as {row['action']!r}")
        existing[key] = row
        writer.writerow(row)
    head = original or ""
    if head and not head.endswith("\n"):
        head += "\n"
    return head + out.getvalue(), notes
