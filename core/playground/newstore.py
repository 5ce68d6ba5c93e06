"""A store started from scratch: its settings, its own inventory and knowledge base, and starter SOPs picked from
a gallery (or none); nothing of the demo or of any other store.

The starters are written for no store in particular: their triggers, questions and messages name no product,
and each says what it needs (the knowledge base, an inventory). The new folder is built beside the others,
loaded and linted there, and appears whole or not at all.
"""

from __future__ import annotations

import csv
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.playground.uploads import (
    UploadError,
    check_mapping,
    inventory_change,
    kb_change,
    read_inventory,
    suggest_mapping,
)
from core.playground.workspaces import _slug, user_workspaces_dir
from core.shared.errors import UserInputError
from core.workspace.gar_file import GAR_COLUMNS

AGENT = "desk"


@dataclass(frozen=True)
class Starter:
    """A starter SOP of the gallery."""

    key: str
    title: str
    about: str  # one sentence for the gallery
    needs: str  # "" | "kb" | "inventory"
    tools: tuple[str, ...]
    sop: str
    gar: tuple[tuple[str, str, str, str, str], ...]  # action, action_type, metadata, api, params


STARTERS = {s.key: s for s in (
    Starter("answer_question", "Answer a question", "Answers questions from the knowledge base's documents.", "kb",
            ("knowledge_base.search",), """---
id: desk.answer_question
title: Answer a question
agent: desk
triggers:
  - I have a question
  - when are you open
  - how does it work
  - what is your policy on this
---
ask user what the question is about
search the knowledge base
if an answer is found:
    share the answer with the user
    terminate the flow
else:
    tell user no answer was found
    terminate the flow
""", (("ask user what the question is about", "ask_user_input", "a short description of the question", "",
       "topic"),
      ("search the knowledge base", "api_call|external_knowledge", "", "knowledge_base.search", "topic"),
      ("share the answer with the user", "message_to_user", "Here is what I found.", "", ""),
      ("tell user no answer was found", "message_to_user",
       "I couldn't find that in our help articles. A member of the team will follow up.", "", ""))),
    Starter("find_product", "Find a product", "Recommends items from the inventory by category and budget, and "
            "takes the customer's pick.", "inventory", ("inventory.query",), """---
id: desk.find_product
title: Find a product
agent: desk
triggers:
  - can you recommend something
  - I'm looking for a product
  - what do you have under 100
  - help me choose one
---
ask user for product category
ask user for budget
search inventory for matching items
if items found:
    recommend items to user
    ask user to choose one of the recommended items
    if user chose an item:
        confirm the chosen item
        terminate the flow
    else:
        say goodbye politely
        terminate the flow
else:
    tell user nothing matched
    terminate the flow
""", (("ask user for product category", "ask_user_input", "a product category", "", "category"),
      ("ask user for budget", "ask_user_input", "a budget, e.g. 100", "", "budget"),
      ("search inventory for matching items", "api_call", "", "inventory.query", "category|budget|brand?"),
      ("recommend items to user", "message_to_user", "Recommend the best 1-3 matching items with their prices.", "",
       ""),
      ("ask user to choose one of the recommended items", "ask_user_input", "one of the recommended items, or no", "",
       "chosen_item"),
      ("confirm the chosen item", "message_to_user", "Great choice! {chosen_item} is ready for you to order.", "", ""),
      ("say goodbye politely", "message_to_user", "No problem. Let me know if you need anything else.", "", ""),
      ("tell user nothing matched", "message_to_user",
       "Sorry, nothing in stock matches that right now. You could try another budget or category.", "", ""))),
    Starter("call_back", "Request a call back", "Takes the customer's name, phone number and a good time to call.",
            "", (), """---
id: desk.call_back
title: Request a call back
agent: desk
triggers:
  - can someone call me back
  - I'd like a call back
  - please phone me
---
ask user for their name
ask user for their phone number
ask user when to call
tell user the call is booked
terminate the flow
""", (("ask user for their name", "ask_user_input", "your name", "", "customer_name"),
      ("ask user for their phone number", "ask_user_input", "a phone number", "", "phone"),
      ("ask user when to call", "ask_user_input", "a day and time, e.g. tomorrow at 10am", "", "call_time:text"),
      ("tell user the call is booked", "message_to_user",
       "Thanks {customer_name}, we will call you on {phone} ({call_time}).", "", ""))),
)}


@dataclass
class NewStore:
    """What the new-store wizard asks."""

    name: str
    currency: str = "USD"
    region: str = ""
    languages: list[str] = field(default_factory=list)
    greeting: str = ""
    description: str = ""
    starters: list[str] = field(default_factory=list)
    inventory: tuple[str, bytes] | None = None  # an uploaded file: name, content
    kb: list[tuple[str, bytes]] = field(default_factory=list)


def create_store(spec: NewStore, settings: dict[str, Any]) -> Path:
    """Create the store in the user's workspaces folder and return its folder. ``settings``: the store's
    settings as checked by the playground (name, currency, region, description, greeting, languages).

    Raises:
        UserInputError: a name already used, an unknown starter, a starter whose need is not given (an
            inventory, knowledge-base documents), a file the uploads refuse, or a store that would not load
            without errors (the first ones named); nothing is created then.
    """
    from core.engine.build import load_workspace
    from core.shared.problems import errors

    slug = _slug(settings["name"])
    if not slug:
        raise UserInputError("give the new store a name (letters or digits)")
    dest = user_workspaces_dir() / slug
    if dest.exists():
        raise UserInputError(f"a workspace folder named {slug!r} already exists in {dest.parent}")
    unknown = [k for k in spec.starters if k not in STARTERS]
    if unknown:
        raise UserInputError(f"unknown starter SOP(s): {', '.join(unknown)} (known: {', '.join(STARTERS)})")
    starters = [STARTERS[k] for k in spec.starters]
    for s in starters:
        if s.needs == "inventory" and spec.inventory is None:
            raise UserInputError(f"the starter “{s.title}” searches the inventory: upload an inventory file too, "
                                 "or leave the starter out")
        if s.needs == "kb" and not spec.kb:
            raise UserInputError(f"the starter “{s.title}” answers from the knowledge base: add at least one "
                                 "document too, or leave the starter out")
    tools = sorted({t for s in starters for t in s.tools} | {"math.evaluate"})
    config = {k: v for k, v in settings.items() if v not in ("", [], None)}
    config["agents"] = {AGENT: {"goals": f"{AGENT}.*", "tools": tools}}
    files: dict[str, bytes] = {"store.yaml": yaml.safe_dump(config, sort_keys=False, allow_unicode=True).encode(),
                               "gar.csv": _gar([row for s in starters for row in s.gar]).encode()}
    for s in starters:
        files[f"sops/{s.key}.sop"] = s.sop.encode()
    for name, data in spec.kb:
        files.update({k: v for k, v in kb_change(name, data).files.items() if v is not None})
    if spec.inventory is not None:
        files.update(_inventory(spec.inventory, files["store.yaml"].decode()))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{slug}-", dir=dest.parent) as tmp:
        build = Path(tmp) / slug
        for rel, data in files.items():
            (build / rel).parent.mkdir(parents=True, exist_ok=True)
            (build / rel).write_bytes(data)
        (build / "sops").mkdir(exist_ok=True)
        found = errors(load_workspace(build, kb_index="lazy").problems)
        if found:
            raise UserInputError("the new store would not load: " + "; ".join(str(p) for p in found[:3]))
        build.rename(dest)
    return dest


def _gar(rows: list[tuple[str, str, str, str, str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GAR_COLUMNS)
    writer.writerows(rows)
    return buf.getvalue()


def _inventory(upload: tuple[str, bytes], store_yaml: str) -> dict[str, bytes]:
    """The inventory file and store.yaml with its ``inventory`` block, the columns mapped from their headers."""
    name, data = upload
    frame = read_inventory(name, data)
    columns = [str(c) for c in frame.columns]
    mapping = suggest_mapping(columns)
    attributes = [c for c in columns if c not in mapping.values()]
    problems = [p for p in check_mapping(name, frame, mapping, attributes) if p.severity == "error"]
    if problems:
        raise UploadError(f"{name}: " + "; ".join(p.message for p in problems[:3])
                          + " (map its columns on the Store page after creating the store without it)")
    change = inventory_change(store_yaml, None, name, data, mapping, attributes)
    return {k: v for k, v in change.files.items() if v is not None}

