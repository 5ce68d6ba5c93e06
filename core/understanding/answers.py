"""What a customer's message gives the SOP in hand: the values for its pending question, values said
before they are asked, corrections of values it holds, and what the customer says they cannot give.

Everything here reads; nothing changes a goal (the agent acts on an :class:`AnswerReading`, the rule
reader on the values). For each message the values are found once ("Username: jdoe41" by its label, a
phone by its shape, a name by how it is introduced) and then given to slots: the pending ask's first, by
label, kind, the shape of the slot's example and position in a list answer; then the later asks of the
running SOP; then other SOPs. Language knowledge comes from the language files through :mod:`core.language.text`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import SESSION_SLOTS, Node, Sop
from core.understanding.answer_shape import (
    AHEAD_KINDS,
    asked_in_order,
    asks_ahead,
    describes_more,
    lone_number,
    offer_picked,
    own_mentions,
    own_words,
    topic_words,
    unknown,
)
from core.understanding.brains.base import Brain, proposed_values
from core.understanding.candidates.learned import SlotWords
from core.understanding.candidates.learned import act as learned_act
from core.understanding.candidates.learned import spans as learned_spans
from core.understanding.commerce import offered
from core.understanding.extract import dates_said, extract, labelled_value
from core.understanding.mentions import (
    address_side,
    asked_verb,
    at_handle,
    correction_value,
    cut_at_labels,
    framed_tail,
    handle_value,
    holds_current,
    holds_target,
    labelled_text,
    named_object,
    route_value,
    stated_answer,
    street_addresses,
    worded_like,
)
from core.understanding.remembered import accepted_value, takes_offer
from core.understanding.values import (
    Labelled,
    blank,
    labelled_values,
    introduced_handle,
    name_given,
    name_part,
    passing_name,
    stated_default,
    value_span,
)
from core.workspace.slots import EXAMPLES_LEAD, GENERIC_NAME_WORDS, SlotType, validate


def pending_first(named: dict[str, Any], node: Node, types: dict[str, SlotType]) -> dict[str, Any]:
    """Labelled values with the pending question first: a label that names a slot of the same kind as the one
    asked ("my new one is ..." while the new phone number is asked, "number" naming the current one too)
    gives its value to the slot asked, which has none of its own."""
    out = dict(named)
    asked = [p.name for p in node.fills if p.name not in out and p.name in types]
    for k, v in named.items():
        if k in {p.name for p in node.fills} or k not in types:
            continue
        same = [a for a in asked if types[a].kind == types[k].kind and validate(types[a], v)]
        if len(same) == 1:
            out.pop(k)
            out[same[0]] = v
            asked.remove(same[0])
    return out


def asks_a_list(node: Node) -> bool:
    """Whether one slot's question asks for several things at once ("any two of: your postcode, date of birth,
    PIN, username ...", "the new address (house, flat if any, town and postcode)?"): its answer is every
    item given, never the words after one of their labels."""
    if len(node.fills) != 1:
        return False
    head = EXAMPLES_LEAD.split(node.expects or node.text, maxsplit=1)[0]
    listed = [head.split(":")[-1], *re.findall(r"\(([^()]+)\)", node.message or "")]  # "the new address
    return any(len(T.list_items(part)) >= 3 for part in listed)  # (house, flat if any, town and postcode)?"


SURE_ACT = 0.85  # how sure the learned reader must be that a reply affirms or negates to count as a yes or a no


def learned_yes_no(question: str, text: str) -> bool | None:
    """A yes or a no the rules did not hear, from the learned reader's act of the reply to the question
    (affirm or negate, at least SURE_ACT sure); None when it is unsure, off or unavailable."""
    acts = learned_act(question, text)
    if acts.get("affirm", 0.0) >= SURE_ACT:
        return True
    if acts.get("negate", 0.0) >= SURE_ACT:
        return False
    return None


# the kinds whose values say which slot they are for, most specific first: their words are taken before a
# looser kind reads the rest ("60614, (312) 555-0187": the phone number's digits are no zip code)
NUMERIC_KINDS = frozenset({"money", "number", "digits", "id", "phone", "date", "time"})  # kinds a bare number can fill
CLAIM_ORDER = {"email": 0, "phone": 1, "date": 2, "time": 3, "money": 4, "id": 5, "option": 6, "digits": 7, "number": 8}


@dataclass(frozen=True)
class AnswerReading:
    """A reply to the pending ask as read (:meth:`AnswerReader.read_answer`), before it is acted on."""

    ask: str  # the pending ask's node id
    values: dict[str, Any]  # its slots' values
    ok: bool  # every required slot is given
    ahead: dict[str, Any] = field(default_factory=dict)  # values for the next questions
    enriched: dict[str, str] = field(default_factory=dict)  # filled descriptions with the answer's extra words
    heard: Any = None  # what the execution memory keeps of it
    declined: bool = False  # a "no" to a remembered default


def _asks_for(sop: Sop, name: str) -> list[Node]:
    """The SOP's questions that ask for a slot."""
    return [n for n in sop.nodes.values() if n.asks and any(p.name == name for p in n.fills)]


def _question(node: Node) -> str:
    """A question's own words: its message, else its step's text ("ask user which items to return")."""
    return node.message or node.text


class AnswerReader:
    """Reads messages against one workspace's SOPs and the types of their slots."""

    def __init__(self, brain: Brain, slot_types: dict[str, dict[str, SlotType]],
                 today: Callable[[], date] = date.today,
                 result_values: dict[str, dict[str, list[str]]] | None = None) -> None:
        self.brain = brain
        self.slot_types = slot_types  # sop id -> slot -> type
        self.today = today  # "tomorrow" is a weekday relative to this
        self.result_values = result_values or {}  # sop id -> tool field -> values
        self._label_cache: dict[str, dict[str, set[str]]] = {}
        self._sop_words: dict[str, frozenset[str]] = {}
        # per message, the values it labels for each SOP (a turn reads one message for several SOPs; keyed by
        # the text, so turns running at the same time never read each other's)
        self._named: dict[str, dict[str, list[Labelled]]] = {}

    def types(self, sop: Sop) -> dict[str, SlotType]:
        return self.slot_types.get(sop.id, {})

    def answer_values(self, goal: Goal, sop: Sop, text: str, *, typed_only: bool = False) -> dict[str, Any]:
        """Valid values a message gives for the pending ask's slots (free text left out when ``typed_only``)."""
        node = sop.node(goal.pending)
        if node is None or not node.asks:
            return {}
        types = self.types(sop)
        named, rest = self.labelled(sop, text)
        named = pending_first(named, node, types)
        values: dict[str, Any] = {}
        claimed: list[tuple[int, int]] = []  # a span goes to one slot: the most specific kinds take theirs first
        for p in sorted(node.fills, key=lambda p: CLAIM_ORDER.get(types[p.name].kind if p.name in types else "", 9)):
            st = types.get(p.name)
            if st is None or (typed_only and st.kind == "text"):
                continue
            left = blank(rest, claimed) if claimed else rest  # what no more specific kind took
            if st.kind == "text" and asks_a_list(node):  # "any two of: postcode, PIN, username": every item said
                left = text
            if p.name in named:  # "Username: jdoe41": the label says which slot
                values[p.name] = named[p.name]
                continue
            if named and (not T.tokens(left) or (st.kind == "text" and len(node.fills) > 1)):
                continue  # every word was labelled for other slots; in a labelled list, free text has its label
            if st.kind == "text" and not T.tokens(text) and (
                    T.is_thanks(text) or T.is_greeting(text) or T.is_farewell(text)):
                continue  # "thanks!" is not a name or a description
            if st.describes and T.is_request(text) and not describes_more(text, sop):
                continue  # "I need to open a ticket" again, to "describe the issue": asking, not describing
            val = extract(st, self._dated(st, left), asked=True, candidates=offered(goal))
            if val is None and st.kind == "choice":
                val = offer_picked(left, offered(goal))
            if st.kind == "text" and not st.describes and not asks_a_list(node):  # "my date of birth is
                labels = self._labels(sop)  # 25/03/1998; my pet was Molly": the label says which words answer
                others = {w for name, ws in labels.items() if name != p.name for w in ws}
                val = labelled_text(left, labels.get(p.name, set())) or framed_tail(left, p.name) \
                    or (cut_at_labels(val, others) if val else val)
                val = handle_value(str(val), p.name) if st.handle and val else val
                val = T.without_particles(val) if isinstance(val, str) else val  # "Galaxy S23 ค่ะ" -> "Galaxy S23"
                val = self._learned_value(sop, node, p.name, st, val) if len(node.fills) == 1 else val
            if val is None and st.kind == "boolean" and len(node.fills) == 1 and not T.is_question(text) \
                    and not T.corrects(text) and not re.search(r"\d", text):  # "actually make it 75 for her"
                val = learned_yes_no(node.message or node.text, text)  # "I reckon that'd be fine" to "shall I?"
            if val is None:  # "yes" / "same as before" to a remembered default ("Still around ฿30,000?")
                val = accepted_value(goal.slots, p.name, text)
            if validate(st, val) or (st.kind in ("boolean", "choice") and val is False):
                values[p.name] = val
                span = value_span(left, val) if st.kind in CLAIM_ORDER and len(node.fills) > 1 else None
                if span is not None:
                    claimed.append(span)
        values = {p.name: values[p.name] for p in node.fills if p.name in values}  # in the question's order
        values = own_words(own_mentions(values, types, sop, text), types)
        listed = self._by_position(node, types, rest) if len(node.fills) > 1 and not named else {}
        if len(listed) > len(values):  # "55120934, 1011 AB" to "your account number and postcode"
            values = listed
        for name, val in proposed_values(self.brain, node, text).items():  # a model's checked reading wins
            st = types.get(name)
            if st is not None and not (typed_only and st.kind == "text") \
                    and (validate(st, val) or (st.kind in ("boolean", "choice") and val is False)):
                values[name] = val
        return values

    def default_answer(self, goal: Goal, sop: Sop, text: str) -> AnswerReading | None:
        """"No idea, whatever is normal" to a question that says what it uses then ("if you don't know, I'll
        book the standard two nights"): that value, as the answer; None when the customer is not unsure or the
        question states no default."""
        node = sop.node(goal.pending)
        if node is None or len(node.fills) != 1 or not (T.UNSURE.search(text) or T.is_unable(text)):
            return None
        p = node.fills[0]
        st = self.types(sop).get(p.name)
        value = stated_default(st, p.name, [node.message, node.expects, node.text]) if st else None
        if value is None:
            return None
        return AnswerReading(node.id, {p.name: value}, True, heard={p.name: value, "default": True})

    def _by_position(self, node: Node, types: dict[str, SlotType], text: str) -> dict[str, Any]:
        """An answer that lists as many items as the question asks values, in its order ("55120934, 1011 AB"
        to "the account number and the postcode"): each item read as its slot's answer; empty unless every
        item gives its slot a valid value."""
        items = [i for i in T.list_items(text) if i.strip(" .")]
        if len(items) != len(node.fills):
            return {}
        out: dict[str, Any] = {}
        for p, item in zip(node.fills, items, strict=True):
            st = types.get(p.name)
            if st is None:
                return {}
            val = extract(st, item.strip(" ."), asked=True)
            if not validate(st, val):
                return {}
            out[p.name] = val
        return out

    def read_answer(self, goal: Goal, sop: Sop, text: str) -> AnswerReading | None:
        """What a reply gives the pending ask, read before anything changes: its slots' values, values the
        reply gives beyond the question for the next ones, words that add to filled descriptions, and
        whether it turns down a remembered default. None when nothing is pending."""
        node = sop.node(goal.pending)
        if node is None or not node.asks:
            return None
        required = [p.name for p in node.fills if not p.optional]
        # a question asking several values may be answered in parts ("ann@example.com", then "Ann Lee")
        held = {p.name for p in node.fills if len(node.fills) > 1 and not unknown(goal, p.name)}
        values = self.answer_values(goal, sop, text)
        if not (values and all(r in values or r in held for r in required)):  # typos: "the firrst one"
            values = self.answer_values(goal, sop, self.brain.correct(text)) or values
        ok = bool(values) and all(r in values or r in held for r in required)
        if not ok:
            return AnswerReading(node.id, values, False, heard=self.brain.correct(text),
                                 declined=takes_offer(text) is False)
        return AnswerReading(node.id, values, True, ahead=self._ahead(goal, sop, node, text, values),
                             enriched=self._leftover(goal, sop, text, values), heard=values)

    def _leftover(self, goal: Goal, sop: Sop, text: str, values: dict[str, Any]) -> dict[str, str]:
        """Extra words in an answer enrich already-filled free-text slots (e.g. the symptom)."""
        rest = text
        for v in values.values():
            if isinstance(v, str):
                rest = rest.replace(v, " ")
        types = self.types(sop)
        parts = [q for p in T.CLAUSE_BREAK.split(rest) if p for q in re.split(r"[,;]\s*", p) if q.strip()]
        rest = " ".join(p for p in parts if not any(  # the words a value was read from are not extra detail
            k in types and extract(types[k], p, asked=True) == v for k, v in values.items()))
        if len(T.tokens(rest)) < 2:
            return {}
        return {name: f"{goal.slots[name]}; {rest.strip(' ,.;')}" for name, st in types.items()
                if st.kind == "text" and st.describes and name in goal.slots and name not in values}

    def slot_words(self, sop: Sop) -> set[str]:
        """The words that name what the SOP asks for: its slot names and the words of its questions
        ("budget" in "ask user for budget"), so they are read as labels, not as wishes."""
        names = {w for n in sop.slot_names() for w in re.split(r"[_\W]+", n.lower()) if w}
        return names | {w for ws in self._labels(sop).values() for w in ws}

    def _labels(self, sop: Sop) -> dict[str, set[str]]:
        """Per slot of an ask, the words only that question uses ("maiden", "pet"): how a customer names
        the answer they give ("my first school was Hillcrest")."""
        if sop.id not in self._label_cache:
            asks = [n for n in sop.nodes.values() if n.asks and n.fills]
            topics = {n.id: topic_words(n) for n in asks}
            counts = Counter(w for ws in topics.values() for w in ws)
            self._label_cache[sop.id] = {p.name: {w for w in topics[n.id] if counts[w] == 1}
                                         for n in asks for p in n.fills}
        return self._label_cache[sop.id]

    def _dated(self, st: SlotType, text: str) -> str:
        """For a slot of listed options (weekdays among them), "tomorrow" also as the weekday it is."""
        return T.name_days(text, self.today()) if st.kind == "option" else text

    def _ahead(self, goal: Goal, sop: Sop, node: Node, text: str, values: dict[str, Any]) -> dict[str, Any]:
        """What an answer gives beyond the question, for the next questions when it fits their type
        ("40271156, 2208" to the account number: the PIN asked next is 2208)."""
        rest = text
        for v in values.values():
            rest = rest.replace(str(v), " ", 1)
        if not re.search(r"\d|[A-Z]", rest):
            return {}
        types = self.types(sop)
        ahead: dict[str, Any] = {}
        taken = [v for v in values.values() if isinstance(v, str)]
        for ask in asks_ahead(sop, node):
            for p in ask.fills:
                st = types.get(p.name)
                if st is None or st.kind not in AHEAD_KINDS or not unknown(goal, p.name) or p.name in ahead:
                    continue
                if st.kind == "date":  # "from June 3rd to the 6th": the next date said, for the next date asked
                    val = next((d for _, d in dates_said(st, text, asked=True) if d not in taken), None)
                    if val is not None:
                        ahead[p.name] = val
                        taken.append(val)
                    continue
                val = extract(st, self._dated(st, rest), asked=True)
                if validate(st, val):
                    ahead[p.name] = val
                    rest = rest.replace(str(val), " ", 1)
        return ahead

    def unavailable_named(self, goal: Goal, sop: Sop, text: str, given: dict[str, Any]) -> list[str]:
        """Slots a message says the customer cannot give, before they are asked ("I don't remember my
        account number"): named by a word only that question uses (not those ``given``, known or noted)."""
        if not T.is_unable(text) or (not goal.memory and any(T.is_unable(t) for t in sop.triggers)):
            return []  # an SOP asked for with "I can't find my card" is about the lost card, not a refusal
        said = {T.singular(w) for w in T.words(text)}
        asks = [n for n in sop.nodes.values() if n.asks and n.fills]
        topics = {n.id: topic_words(n) for n in asks}
        counts = Counter(w for ws in topics.values() for w in ws)
        out: list[str] = []
        for n in asks:
            if not {w for w in topics[n.id] if counts[w] == 1} & said:
                continue
            for p in n.fills:
                if p.name not in given and unknown(goal, p.name) and p.name not in goal.unavailable + out:
                    out.append(p.name)
        return out

    def _only_missing_number(self, goal: Goal, sop: Sop, name: str) -> bool:
        """Whether ``name`` is the one number-like slot the customer said they could not give (and still
        has no value): a bare number later ("it could be 6612") is then most likely it."""
        types = self.types(sop)
        numeric = [n for n in goal.unavailable if unknown(goal, n) and n in types
                   and types[n].kind in ("number", "digits", "phone")]
        return numeric == [name]

    def labelled(self, sop: Sop, text: str) -> tuple[dict[str, Any], str]:
        """The values a message labels for this SOP's slots ("zip is 10023, username jdoe41"), and the
        message without the words of every value it labels for any SOP's slots (what the slots without a
        label read theirs from)."""
        named = self._named.get(text)
        if named is None:
            named = {sid: labelled_values(text, types) for sid, types in sorted(self.slot_types.items())}
            if len(self._named) > 64:
                self._named.clear()
            self._named[text] = named
        mine = set(self.types(sop))  # another SOP's label for a slot of the same name is no reason to hide its
        spans = sorted({(f.start, f.end) for sid, found in named.items() for f in found  # words from this one's
                        if sid == sop.id or f.slot not in mine})  # reading ("booking #B44...": this SOP's shape)
        own = {f.slot: f.value for f in named.get(sop.id, []) if f.slot not in SESSION_SLOTS}
        return own, blank(text, spans)

    def extract_volunteered(self, goal: Goal, sop: Sop, text: str, *, opening: bool,
                            typos: bool = True) -> dict[str, Any]:
        """Slot values a message gives without being asked (budget up front, a brand, a category); with
        ``typos``, also what its words give once a misspelling is corrected (never for another SOP's slots:
        "a quiet room i guess" holds no "guest")."""
        whole = text  # a description keeps every word of the message, labelled values among them
        named, text = self.labelled(sop, text)
        found: dict[str, Any] = dict(named)
        corrected = self.brain.correct(text) if typos else text  # "a mouse uner 1000": "under" still counts
        for name, st in self.types(sop).items():
            if name in SESSION_SLOTS or name in found:
                continue
            if st.kind == "text":  # an opening describes the problem; a name only when the customer says so;
                said = whole.strip() if opening and st.describes and name not in goal.slots \
                    and describes_more(self.brain.correct(whole), sop) else \
                    self._person(st, sop, text) if st.person else None  # or "my pet was Molly"
                said = said or (self._address(sop, name, st, text) if st.address else None)
                said = said or (self._object(sop, name, text) if not (st.describes or st.person or st.handle
                                                                       or st.address) else None)
                said = said or (labelled_text(text, self._labels(sop).get(name, set()), place=self._asks_where(sop, name))
                                if not st.describes else None)
                said = said or (at_handle(text) if st.handle else None)  # "remove @kim.sol from my list"
                said = said or (introduced_handle(text) if st.handle else None)  # "hi, this is dana_k_204"
                said = said or (route_value(text, name) if not st.describes and not st.person else None)
                said = said or (worded_like(text, st.example) if not st.describes and not st.person else None)
                said = handle_value(said, name) if st.handle and said else said
                if said:
                    found[name] = said
                continue
            if st.kind in ("number", "digits", "phone"):  # a bare number is ambiguous: only "my passcode is 2718",
                val = labelled_value(st, name, text)  # or the one number the customer could not give before
                if not validate(st, val) and (st.kind == "phone" and st.region or st.kind == "digits"):
                    val = extract(st, text, asked=False)  # a phone number valid in the store's region, labelled or
                    #                                       not ("085 123 4567"), or a long code of its exact length
                if not validate(st, val) and self._only_missing_number(goal, sop, name) and lone_number(text):
                    val = extract(st, str(lone_number(text)), asked=True)
                if validate(st, val):
                    found[name] = val
                continue
            if st.kind == "boolean":  # "I'm staying overseas" before "are you staying overseas?" is asked
                said_yes = next((a for n in _asks_for(sop, name)
                                 if (a := stated_answer(_question(n), text)) is not None), None)
                if said_yes is not None:
                    found[name] = said_yes
                continue
            if st.kind not in ("money", "category", "brand", "model", "email", "id", "option", "date", "time"):
                continue
            if st.kind == "date" and (ranged := self._date_range(goal, sop, name, st, text)) is not None:
                found[name] = ranged  # "from June 3rd to the 6th": each date for its own slot, in the SOP's order
                continue
            val = extract(st, self._dated(st, text), asked=False)
            if not validate(st, val) and corrected != text:
                val = extract(st, corrected, asked=False)
            if not validate(st, val) and opening and st.kind == "money" and self._only_numeric(sop, name):
                lone = lone_number(text)  # "send Ines 40": the one number, for the SOP's one slot a number fits
                val = extract(st, str(lone), asked=True) if lone is not None else None
            if validate(st, val):
                found[name] = val
        return own_mentions(found, self.types(sop), sop, text, drop_unplaced=True)

    def _date_range(self, goal: Goal, sop: Sop, name: str, st: SlotType, text: str) -> str | None:
        """A date slot's own date among several a message gives ("from June 3rd to the 6th"): the dates said,
        in order, for the SOP's date slots still to fill, in the order it asks them; None for a message giving
        one date or none."""
        types = self.types(sop)
        order = [n for n in asked_in_order(sop) if n in types and types[n].kind == "date" and unknown(goal, n)]
        said = dates_said(st, text, asked=False)
        if len(said) < 2 or len(order) < 2 or name not in order:
            return None
        at = order.index(name)
        return said[at][1] if at < len(said) else None

    @staticmethod
    def _asks_where(sop: Sop, name: str) -> bool:
        """Whether the question for a slot asks where something goes ("where should the refund go?")."""
        where = LEX.alternation("place_asks")
        return bool(where) and any(re.search(rf"(?<![\w']){where}(?![\w'])", _question(n), re.I)
                                   for n in _asks_for(sop, name))

    def _object(self, sop: Sop, name: str, text: str) -> str | None:
        """The thing a request names for the question asking what an action is done to ("I want to return the
        garden chair" before "which items to return?"), or, for a slot holding what is wanted instead
        (``new_item``), the thing it names in its place ("exchange the red mug for the blue one")."""
        asks = [n for n in sop.nodes.values() if n.asks and asked_verb(_question(n))]
        own = [n for n in asks if n in _asks_for(sop, name)]
        if own:
            said = named_object(text, asked_verb(_question(own[0])) or "")
        elif holds_target(name):
            said = next((w for v in dict.fromkeys(asked_verb(_question(n)) or "" for n in asks)
                         if (w := named_object(text, v, instead=True))), None)
        else:
            return None
        # "return an item": the words the question itself uses name no particular thing
        known = {T.stem(w) for n in own or asks for w in T.tokens(f"{n.message} {n.text} {n.expects}")}
        known |= {T.stem(w) for w in T.tokens(name.replace("_", " "))} | set(GENERIC_NAME_WORDS)
        return said if said and {T.stem(w) for w in T.tokens(said)} - known else None

    def _address(self, sop: Sop, name: str, st: SlotType, text: str) -> str | None:
        """The street address a message gives for an address slot: the one its words say is held now or wanted
        ("the old one is ...", "ship it to ... instead") as the slot's name says (``current_address``,
        ``new_address``); an address they say neither of only for a slot whose name says neither, or for the
        SOP's one address slot. The street line alone when the hint asks for the street only."""
        side = "new" if holds_target(name) else "current" if holds_current(name) else ""
        found = [(street, whole, address_side(text, at, whole)) for at, street, whole in street_addresses(text)]
        alone = sum(1 for t in self.types(sop).values() if t.address) == 1
        fits = [(s, w) for s, w, said in found if said == side or (said == "" and (not side or alone))]
        if len(fits) != 1:
            return None
        street, whole = fits[0]
        return whole if st.address == "full" else street

    def _learned_value(self, sop: Sop, node: Node, name: str, st: SlotType, said: Any) -> Any:
        """A text slot holds the value, not the sentence (ARCHITECTURE §3b): where the rules kept several
        words ("to Lisbon, please", "make it for 7:45"), the learned reader's span of them for the slot as
        the SOP describes it, when it finds one; the rules' words otherwise (no model, or no span found)."""
        text = T.without_particles(str(said or ""))
        if st.person or st.handle or len(T.words(text)) < 3 or LEX.UNSPACED.search(text):
            return said  # a name, a handle, a value of one or two words; Thai keeps its lexical reading
        found = learned_spans([SlotWords(name, node.expects or node.text, sop.title)],
                              node.message or node.text, text)
        best = found[0] if found else None
        if best is None or not best.found or not best.text or len(best.text) >= len(text.strip(" .!?")):
            return said
        return best.text.strip(" .,;:!?")

    def _only_numeric(self, sop: Sop, name: str) -> bool:
        """Whether ``name`` is the only slot of the SOP a bare number could fill (no count, code, id, phone
        number or date beside it): a number said in its request is then its value."""
        return not any(other != name and st.kind in NUMERIC_KINDS for other, st in self.types(sop).items())

    def _person(self, st: SlotType, sop: Sop, text: str) -> str | None:
        """A person's name a message gives unasked: the customer's own when they introduce themselves (the
        part the slot keeps: a first or a last name), another person's when named in passing ("send it to
        Ines"), never the customer's own introduction."""
        introduced = name_given(text)
        if not st.others:
            return name_part(introduced, st.name_part) if introduced else None
        rest = text.replace(introduced, " ") if introduced else text
        return passing_name(rest, self._own_words(sop))

    def _own_words(self, sop: Sop) -> frozenset[str]:
        """The words of an SOP's title, description and triggers (never a name said in passing)."""
        words = self._sop_words.get(sop.id)
        if words is None:
            said = " ".join([sop.title, sop.description, *sop.triggers])
            words = self._sop_words[sop.id] = frozenset(w.lower() for w in re.findall(r"[^\W\d_]+", said))
        return words

    def replaced_value(self, goal: Goal, sop: Sop, said: str, text: str) -> dict[str, Any]:
        """A correction that names the value it replaces ("make that the 14th, not the 12th"): the filled slot
        whose value the ruled-out words give, with the new value the rest of the message gives it (read as
        an answer to its question); empty when no filled slot holds the ruled-out value."""
        gone = "".join(c if s == " " and c != " " else " " for c, s in zip(text, said, strict=True))
        for name, st in sorted(self.types(sop).items()):
            old = goal.slots.get(name)
            if old in (None, "") or st.kind in ("text", "boolean", "choice"):
                continue
            if extract(st, gone, asked=True) != old:
                continue
            new = extract(st, said, asked=True)
            if validate(st, new) and new != old:
                return {name: new}
        return {}

    def corrected_text(self, goal: Goal, sop: Sop, text: str) -> tuple[str, str] | None:
        """"Sorry, I meant Spain, not Portugal" while the next question waits: the free-text answer given
        last and its new value (the message without its correction words and what it rules out); None
        when the answer given last was not free text or the message holds no new value."""
        types = self.types(sop)
        for entry in reversed(goal.memory):
            node = next((n for n in sop.nodes.values() if n.asks and n.label == entry.action), None)
            if node is None or entry.feedback != "success":
                continue
            names = [p.name for p in node.fills if p.name in types and types[p.name].kind == "text"
                     and not types[p.name].describes and not types[p.name].person]
            if not names:
                return None
            value = correction_value(text)
            return (names[0], value) if value and value != goal.slots.get(names[0]) else None
        return None

    def named_values(self, sop: Sop, text: str) -> dict[str, str]:
        """Option values a message names, by slot ("rain" -> Raining)."""
        out = {}
        said = {T.stem(w) for w in T.words(text)}
        types = self.types(sop)
        known = {T.squash(n) for n in types}
        vocabs = {**{k: v for k, v in self.result_values.get(sop.id, {}).items() if T.squash(k) not in known},
                  **{name: st.vocab for name, st in types.items() if st.kind == "option"}}
        for name, vocab in vocabs.items():
            hit = next((v for v in vocab if T.stem(v) in said or f" {v.lower()} " in f" {text.lower()} "), None)
            if hit is not None:
                out[name] = hit
        return out
