"""How an answer's values sit in a message and in the flow, for the answer reader (core.understanding.answers):
which of several questions listing the same options takes which mention, which slot of one question takes
which words, the questions ahead an answer may also fill, whether an opening message describes more than its
request, an offered item picked without its name, and a number given on its own."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T
from core.shared.models import Goal
from core.sop.expr_eval import lookup
from core.sop.graph import Node, Sop
from core.understanding.commerce import left_after_ruling_out, picked_offer
from core.understanding.mentions import option_mentions
from core.workspace.slots import EXAMPLES_LEAD, SlotType


def lone_number(text: str) -> str | None:
    """The number a message gives on its own ("it could be 6612", "6612 or perhaps 7720": the first of
    alternatives of one length), not one inside a date or an id."""
    found = re.findall(r"(?<![\w/.:-])\d+(?![\w/:%-]|\.\d)", text)
    return found[0] if found and len({len(f) for f in found}) == 1 else None


AHEAD_KINDS = frozenset({"number", "digits", "option", "email", "phone", "id", "money", "date", "time"})
TOPIC_NOISE = frozenset({"number", "no", "id", "name", "value", "answer", "code", "type", "right", "please", "could",
                         "provide", "tell", "give", "share", "enter", "well", "also", "now"})


def topic_words(node: Node) -> set[str]:
    """The words an ask is about: its slots' names, what a valid answer is, its question."""
    hint = EXAMPLES_LEAD.split(node.expects, maxsplit=1)[0]  # "e.g. 55120934, 1011 AB": an example is no topic
    text = " ".join([*(p.name.replace("_", " ") for p in node.fills), hint, node.message or node.text])
    return {T.singular(w) for w in T.tokens(text.replace("'s", "")) if w.isalpha() and len(w) > 1} - TOPIC_NOISE


def asked_in_order(sop: Sop) -> list[str]:
    """The slots an SOP's questions ask for, in the order its flow reaches them (level by level from the start)."""
    return list(dict.fromkeys(p.name for nid in sop.walk(depth_first=False)
                              if (n := sop.nodes[nid]).asks for p in n.fills))


def asks_ahead(sop: Sop, node: Node, limit: int = 3) -> list[Node]:
    """The next questions after a step, along the flow's main line (first branches), up to a tool call."""
    out: list[Node] = []
    seen: set[str] = set()
    nid = node.next
    while nid and nid not in seen and len(out) < limit:
        seen.add(nid)
        nxt = sop.nodes.get(nid)
        if nxt is None or nxt.kind == "end" or "api_call" in nxt.kinds:
            break
        if nxt.asks:
            out.append(nxt)
        nid = nxt.branches[0].target if nxt.kind == "decision" and nxt.branches else nxt.next
    return out


def describes_more(text: str, sop: Sop) -> bool:
    """Whether an opening message describes something beyond asking for the SOP ("someone took $500
    from my account", "when are you open?", not "I need to report a fraud on my account")."""
    greeting = T.GREETING.match(text.strip())
    text = text.strip()[greeting.end():] if greeting else text  # "good morning, ..." describes nothing yet
    named = {T.stem(w) for w in T.tokens(sop.title)} | request_words(sop)
    rest = [w for w in T.tokens(text) if T.stem(w) not in named and w not in T.GENERAL_WORDS
            and w not in REQUEST_WORDS and w not in _asking_words() and "'" not in w]  # "I'd like to submit a report"
    return len(rest) >= DESCRIPTION_WORDS or (bool(rest) and T.is_question(text) and not T.is_request(text))


DESCRIPTION_WORDS = 2


@cache
def _asking_words() -> frozenset[str]:
    """Words that ask or say something is wrong without describing it, in every language of the store: polite
    particles, function and request words, and ``vague_trouble`` ("problem", "มีปัญหา")."""
    keys = ("particles", "function_words", "request", "request_verbs", "vague_trouble")
    return frozenset(w.lower() for key in keys for p in LEX.phrases(key) for w in p.split()
                     if not re.search(r"[()|?*+\\\[\]{}'’.]", w))  # plain words, not patterns


def request_words(sop: Sop) -> set[str]:
    """The word stems most of an SOP's trigger examples share (at least two, and half of them): how
    customers ask for the SOP ("bike" in a repair shop's), not what they describe ("brakes", "broken")."""
    counts: dict[str, int] = {}
    for trigger in sop.triggers:
        for stem in {T.stem(w) for w in T.tokens(trigger)}:
            counts[stem] = counts.get(stem, 0) + 1
    return {stem for stem, n in counts.items() if n >= max(2, len(sop.triggers) / 2)}
REQUEST_WORDS = frozenset("submit file make create raise lodge do like".split())


def offer_picked(text: str, items: list[dict[str, Any]]) -> str | bool | None:
    """An offered item picked without its name: by price or by a brand only it has ("เอาอันที่ถูกกว่า",
    "เอา Samsung"), or as the one left when the others are ruled out ("not the Razer" with two offered)."""
    val = picked_offer(text, items)
    if val is None:
        left = left_after_ruling_out(text, items)
        val = (left[0].get("name") or left[0].get("sku")) if len(left) == 1 < len(items) else None
    return val


def unknown(goal: Goal, name: str) -> bool:
    return lookup(goal.slots, name) in (None, "")


def own_mentions(values: dict[str, Any], types: dict[str, SlotType], sop: Sop, text: str, *,
                  drop_unplaced: bool = False) -> dict[str, Any]:
    """Questions that list the same options ("arrival day", "departure day") each take the mention in
    their own place, in the order the SOP asks them ("from the 2nd until the 5th": arrival 2nd,
    departure 5th), not all the first one. ``drop_unplaced``: a slot whose place has no mention loses
    its value (the message did not give it)."""
    out = dict(values)
    for name in values:
        st = types.get(name)
        if st is None or st.kind != "option":
            continue
        group = [n for n in sop.slot_names() if (o := types.get(n)) is not None and o.kind == "option"
                 and o.vocab == st.vocab]
        said = option_mentions(text, st.vocab)
        if len(group) < 2 or len(said) < 2:
            continue
        place = group.index(name)
        if place < len(said):
            out[name] = said[place]
        elif drop_unplaced:
            out.pop(name)
    return out


GENERIC_KINDS = frozenset({"text", "name"})  # kinds that would take any words, a typed value's too


def own_words(values: dict[str, Any], types: dict[str, SlotType]) -> dict[str, Any]:
    """One question asking several values ("your name and email"): each slot from its own words. A value
    a typed slot took (an email, a phone, a date) is not also the name or the text of another slot."""
    typed = [str(v).lower() for k, v in values.items() if k in types and types[k].kind not in GENERIC_KINDS
             and isinstance(v, str)]
    return {k: v for k, v in values.items() if not (k in types and types[k].kind in GENERIC_KINDS
                                                    and isinstance(v, str) and typed
                                                    and any(t in v.lower() for t in typed))}
