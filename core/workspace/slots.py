"""Slot kinds: what kind of value a slot holds, from its declaration or its name and the author's hint.

Reading a value of a kind out of the customer's message is the reader's job (:mod:`core.understanding.extract`,
:mod:`core.understanding.mentions`); this module only describes slots, so loading a workspace reads no message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T
from core.workspace import kinds as K

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")


@dataclass
class SlotType:
    """What a slot holds, inferred from its name and the GAR/SOP text about it."""

    name: str
    kind: str  # money | number | email | phone | date | time | boolean | digits | id | category | brand | model |
    #            choice | option (one of the values the description lists) | text
    vocab: list[str] = field(default_factory=list)
    digits: int = 0
    pattern: re.Pattern[str] | None = None
    example: str = ""  # an id's example from the metadata ("LSTXXXXXXXXX")
    shape_stated: bool = False  # the hint says the id's length in words ("six letters and digits")
    describes: bool = False  # free text that describes something (a problem, a report): an opening message fills it
    person: bool = False  # free text that is a person's name
    others: bool = False  # a person's name that is not the customer's own (a recipient, a contact)
    name_part: str = ""  # "first" or "last": the part of a full name the slot keeps
    handle: bool = False  # one word that names an account (a username, a login): never a sentence
    address: str = ""  # a postal address: "street" (the street line only) or "full" (with city, zip...)
    low: float | None = None  # a number's allowed range ("a number from 2 to 50")
    high: float | None = None
    unit: str = ""  # what a number counts ("how many people"): "12 people" gives it unasked
    region: str = ""  # a phone number's home region and how dates are written there (ISO country code)
    declared: str = ""  # the type as its author declared it (gar.csv params, the SOP's slots); "" when inferred
    origin: str = ""  # where it was declared, or the words it was inferred from (for lint and the studio)


@dataclass
class Vocabulary:
    """Store words from the workspace: inventory categories, brands, features."""

    categories: list[str] = field(default_factory=list)
    brands: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)


def infer_type(name: str, expects: str, vocab: Vocabulary, *, questions: Sequence[str] = (),
               compared: Sequence[Any] = ()) -> SlotType:
    """A slot's type weighed from all its evidence, strongest first (:mod:`core.workspace.kinds`): a
    condition's comparison, the question's form, the options the hint lists, an account-name hint, the
    example's shape, the hint's head words, then the slot's name and the rest of the hint.

    ``expects`` is the GAR's ``user_interaction_metadata`` ("a 6-digit OTP", "a listing id like
    LSTXXXXXXXXX"), ``questions`` what the asks that fill the slot say, ``compared`` the literals conditions
    compare it with. The type's ``origin`` names the evidence that decided it.
    """
    st, why = _weighed(name, expects, vocab, questions, compared)
    st.origin = why
    if st.kind == "text" and not st.example:  # "e.g. the visa ending in 7447": how a value is worded
        st.example = K.example_of(expects)
    return st


def _weighed(name: str, expects: str, vocab: Vocabulary, questions: Sequence[str],
             compared: Sequence[Any]) -> tuple[SlotType, str]:
    """The type and the evidence that decided it (see :func:`infer_type`)."""
    n = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower().replace("_", " ")
    decided_by_condition = K.condition_kind(compared)
    if decided_by_condition == "boolean":
        return SlotType(name, "boolean"), "a condition that compares it with true or false"
    if K.marks_yes_no(expects) or any(K.marks_yes_no(q) for q in questions):
        return SlotType(name, "boolean"), "its question, which asks for a yes or a no"
    strings = [v for v in compared if isinstance(v, str) and v.strip()]
    options = listed_options(expects) or K.colon_options(expects) or next(
        (o for q in questions if (o := K.quoted_options(q))), [])
    if options:
        more = [v for v in strings if v.lower() not in {o.lower() for o in options}]
        return SlotType(name, "option", vocab=options + more), "the options its hint or question lists"
    if decided_by_condition == "number":
        money = K.MONEY_WORDS.search(f"{n} {expects}") is not None
        st = SlotType(name, "money" if money else "number")
        return _refine(st, n, expects), "a condition that compares it with a number"
    if decided_by_condition == "date":
        return SlotType(name, "date"), "a condition that compares it with a date"
    head = K.hint_head(expects)
    if HANDLE.search(head or n) and not DESCRIBES.search(f"{n} {head}"):
        return SlotType(name, "text", handle=True), f"its hint, which names an account ({head or n!r})"
    example = K.example_of(expects)
    shown = K.example_kind(example)
    placeholder = _id_pattern(expects) if shown in (None, "id", "digits") else None
    if placeholder is not None:
        return SlotType(name, "id", pattern=placeholder, example=example), f"the id its hint shows ({expects!r})"
    if shown is not None:
        st = _by_example(name, n, expects, example, shown, vocab)
        st.example = example
        return st, f"the shape of its example {example!r}"
    for said in (head, expects):
        alternatives = K.alternatives(said)
        if len(alternatives) >= 2 and len({_kind_of(a.lower(), a) or "text" for a in alternatives}) > 1:
            return _refine(SlotType(name, "text"), n, expects), f"its hint, which offers more than one kind ({said!r})"
    if K.ADDRESS_WORDS.search(head):
        whole = any(re.search(r"\b(city|zip|post ?code|postal|state|country|full)\b", said, re.I)
                    for said in (expects, *questions))
        return SlotType(name, "text", address="full" if whole else "street"), \
            f"its hint, which asks for an address ({head!r})"
    kind = _kind_of(head.lower(), head) if head else None
    why = f"its hint {head!r}"
    if kind is None:
        kind, why = _strong_name_kind(name), f"its name {name!r}"
    if kind is None:
        kind, why = _kind_of(expects.lower(), expects), f"its hint {expects!r}"
    if kind is None and any(K.asks_yes_no(q) for q in questions):
        kind, why = "boolean", "its question, worded for a yes or a no"
    if kind is None:
        kind, why = _name_kind(n) or _kind_of(n, ""), f"its name {name!r}"
    if example and kind in ("email", "digits", "phone", "money", "number"):  # the example is checked by lint
        typed = _typed(name, n, kind, expects, vocab)
        typed.example = example
        return typed, why
    if kind is None:
        kind, why = "text", f"its hint {expects!r}" if expects.strip() else "its name (nothing says more than text)"
    return _typed(name, n, kind, expects, vocab), why


def stated_digits(expects: str) -> int:
    """How many digits a hint says a code has ("a 6-digit OTP" -> 6); 0 when it says none."""
    m = re.search(r"(\d+)[- ]digit", expects.lower())
    return int(m.group(1)) if m else 0


def _typed(name: str, n: str, kind: str, expects: str, vocab: Vocabulary) -> SlotType:
    """A slot type of ``kind`` with what the hint says beyond it (a vocabulary, a size, a range)."""
    if kind == "category":
        return SlotType(name, kind, vocab=vocab.categories)
    if kind in ("brand", "model"):
        return SlotType(name, kind, vocab=vocab.brands)
    if kind == "id":
        return SlotType(name, kind)
    size = stated_digits(expects)
    return _refine(SlotType(name, kind, digits=size if kind in ("digits", "phone") else 0), n, expects)


def _by_example(name: str, n: str, expects: str, example: str, shown: str, vocab: Vocabulary) -> SlotType:
    """The type an author's example shows: digits are an id's when the name or hint says id, a code's
    otherwise; a word of letters with digits or separators is an id of that shape, generalised."""
    says_id = _strong_name_kind(name) == "id" or re.search(r"\bid\b", K.hint_head(expects).lower()) is not None
    if shown == "digits" and K.MONEY_WORDS.search(f"{n} {K.hint_head(expects)}"):
        return _typed(name, n, "money", expects, vocab)
    if shown == "digits" and not says_id:
        kind = "phone" if _kind_of(n, "") == "phone" else "digits"
        return SlotType(name, kind, digits=stated_digits(expects))
    if shown in ("digits", "id"):
        return SlotType(name, "id", pattern=K.general_shape(example, expects), example=example,
                        shape_stated=K.stated_length(expects) > 0)
    return _typed(name, n, shown, expects, vocab)


EXAMPLES_LEAD = K.EXAMPLES_LEAD  # the words that lead an example in a hint (core.workspace.kinds)


def hints_per_slot(expects: str, count: int) -> list[str] | None:
    """A hint for a question asking ``count`` values, lined up with them: "the username, the email and the
    order ID, e.g. jdoe41, jdoe41@mail.com, 5512349870" -> ["the username like jdoe41", "the email like
    jdoe41@mail.com", "the order ID like 5512349870"]. None when its items do not line up."""
    lead = EXAMPLES_LEAD.search(expects)
    head = expects[: lead.start()] if lead else expects
    items = T.list_items(head.strip(" .:;,"))
    if count < 2 or len(items) != count:
        return None
    examples = T.list_items(expects[lead.end():].strip(" .)")) if lead else []
    if len(examples) == count:
        return [f"{item} like {example}" for item, example in zip(items, examples, strict=True)]
    return items


def _kind_of(text: str, original: str) -> str | None:
    """The value kind a description names, most specific first."""
    rules = [
        (r"\b(yes or no|yes/no)\b", "boolean"),
        (r"\d+[- ]digit.*\b(phone|mobile)\b", "phone"),
        (r"\d+[- ]digit|\b(otp|pin|passcode|one-time password|verification code|code)\b", "digits"),
        (r"\b(phone|mobile)\b", "phone"),
        (r"\be-?mail\b", "email"),
        (r"\b(date|dates|birthday|dob)\b", "date"),
        (r"\b(time|what time|o'?clock)\b", "time"),
        (r"\bid\b", "id"),
        (r"\b(budget|price|amount|cost|money|spend)\b", "money"),
        (r"categor|type of product", "category"),
        (r"\bmodel\b", "model"),
        (r"\b(recommended|one of the|choice|chosen|choose)\b", "choice"),
        (r"\b(number|count|quantity|how many)\b", "number"),
    ]
    if original and _id_pattern(original) is not None:
        return "id"
    for pattern, kind in rules:
        if re.search(pattern, text):
            return kind
    return None


def _name_kind(name: str) -> str | None:
    """Kinds only a slot's name tells: yes/no flags (``has_access``) and brands."""
    if name.startswith(("has ", "is ", "wants ", "can ", "did ")):
        return "boolean"
    if re.search(r"\b(brand|maker|manufacturer)\b", name):
        return "brand"
    return None


def _strong_name_kind(name: str) -> str | None:
    """Kinds a slot's name states outright, whatever its hint's words: ``email``, ``phone``, ``orderId`` or
    ``order_id`` (an id)."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower().replace("_", " ").split()
    if not words or words[0] in ("has", "is", "wants", "can", "did"):  # a yes/no flag about it
        return None
    if words[-1] == "id" or words[-1] == "ids":
        return "id"
    if words[-1] in ("email", "e-mail"):
        return "email"
    if words[-1] in ("phone", "mobile"):
        return "phone"
    return None


def _id_pattern(expects: str) -> re.Pattern[str] | None:
    """From 'a listing id like LSTXXXXXXXXX' build a pattern: the literal prefix, then alphanumerics."""
    m = re.search(r"\blike\s+([A-Z]{2,}[A-Z0-9-]*X{2,}[A-Z0-9X-]*)", expects, re.I)
    if m:
        ex = m.group(1)
        prefix = re.match(r"^(.*?)X{2,}", ex, re.I)
        pre = prefix.group(1) if prefix else ""
        return re.compile(rf"\b{re.escape(pre)}[A-Z0-9]{{2,}}\b", re.I)
    m = re.search(r"\blike\s+([A-Z]{2,}-?\d{2,})", expects, re.I)
    if m:
        pre = re.match(r"[A-Z]+-?", m.group(1), re.I)
        return re.compile(rf"\b{re.escape(pre.group(0) if pre else '')}\d{{2,}}\b", re.I)
    return None


def shape_pattern(example: str) -> re.Pattern[str] | None:
    """Ids shaped like an author's example, generalised (:func:`core.workspace.kinds.general_shape`)."""
    return K.general_shape(example)


ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")  # how a date slot keeps its value
MONTH_FIRST = frozenset({"US", "PH", "FM", "MH", "PW", "BZ"})  # regions that write the month before the day


def written_date(value: str, language: str = "en") -> str:
    """A YYYY-MM-DD date as a message writes it ("27 November 2026"), in ``language`` where its file
    names the months (else English); anything else unchanged."""
    m = ISO_DATE.fullmatch(value)
    if m is None:
        return value
    by_language = {lx.language: lx.get("month_names") for lx in LEX.lexicons()}
    months = by_language.get(language) or by_language.get("en") or ()
    month = int(m.group(2))
    if len(months) != 12 or not 1 <= month <= 12:
        return value
    return f"{int(m.group(3))} {months[month - 1]} {m.group(1)}"


IDENTIFYING_KINDS = frozenset({"id", "email", "digits", "phone"})  # a value of these says which slot it is
#   for, and is copied from the customer's words (never reworded)
PERSONAL_KINDS = IDENTIFYING_KINDS - {"id"}  # the customer's own (a card number, an email), not a record's id

STRONG_KINDS = {"money", "email", "category", "brand", "model", "id"}


def example_problem(st: SlotType) -> str:
    """Why the author's example does not pass its own slot's kind ('' when it does, or when there is none):
    an email example that is no email, a code example of another length, an id example its shape refuses."""
    e = st.example.strip()
    if not e:
        return ""
    if st.kind == "email" and not EMAIL.fullmatch(e):
        return f"the example {e!r} is not an email address"
    if st.kind in ("digits", "phone") and st.digits and len(re.sub(r"\D", "", e)) != st.digits:
        return f"the example {e!r} does not have the {st.digits} digits the hint asks for"
    if st.kind in ("money", "number") and not re.search(r"\d", e) and T.word_number(e) is None:
        return f"the example {e!r} is not a number"
    if st.kind == "id" and st.pattern is not None and not st.pattern.search(e):
        return f"the example {e!r} does not have the shape the hint describes"
    return ""


def validate(st: SlotType, value: Any) -> bool:
    """Whether an extracted value is a valid answer of its type."""
    if value is None or value == "":
        return False
    if st.kind == "digits" and st.digits:
        return len(str(value)) == st.digits
    if st.kind == "email":
        return bool(EMAIL.fullmatch(str(value)))
    if st.kind == "date":
        return ISO_DATE.fullmatch(str(value)) is not None
    if st.kind == "time":
        return re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d", str(value)) is not None
    if st.kind == "phone" and st.digits:
        return len(str(value)) == st.digits  # a "+cc" country code was already dropped by _phone
    if st.handle:
        return len(str(value).split()) == 1
    if st.kind == "phone" and str(value).startswith("+"):
        return True  # an international number phonenumbers found and formatted
    if st.kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return (st.low is None or value >= st.low) and (st.high is None or value <= st.high)
    return True


# ---------------------------------------------------------------- listed options, names, labelled values

OPTIONS = re.compile(r"\bone of:?\s+(?!(?-i:the|your|our|these|those|my|its|their)\b)(.+?)\s*[.)]?$", re.I | re.S)
DESCRIBES = re.compile(r"\b(describ\w*|description|details?|detailed|report|problem|issue|symptoms?|reason|complaint|"
                       r"what happened|explain\w*|own words)\b", re.I)
HANDLE = re.compile(r"\b(user ?names?|logins?|log-in|handles?|screen ?names?|nick ?names?|gamer ?tags?|user ?ids?|"
                    r"account names?)\b", re.I)
RANGE = re.compile(r"\bfrom\s+(-?\d+(?:\.\d+)?)\s+to\s+(-?\d+(?:\.\d+)?)\b")
HOW_MANY = re.compile(r"\bhow many\s+([a-z]+)", re.I)
IN_UNIT = re.compile(r"\bin\s+([A-Za-z][A-Za-z/]{1,11})\s*(?:[?.)](?:\s|$)|$|[,;(])")  # "..., in kWh?", "in GB"
GENERIC_NAME_WORDS = frozenset({"number", "no", "id", "name", "value", "answer", "code", "type", "the", "of"})


def listed_options(expects: str) -> list[str]:
    """The values a description lists as the only valid answers ("one of Chase, PNC or Wells Fargo")."""
    m = OPTIONS.search(expects.strip())
    if not m:
        return []
    parts = [p.strip(" .;") for p in re.split(r",\s*|\s+or\s+", m.group(1))]
    parts = [p for p in parts if p and len(p) <= 40]
    return parts if len(parts) >= 2 else []


def _refine(st: SlotType, name: str, expects: str) -> SlotType:
    """What the description says beyond the kind: free text that describes, a person's name, a range, a unit."""
    about = f"{name} {expects}"
    if st.kind == "text":
        st.describes = bool(DESCRIBES.search(about))
        st.handle = bool(HANDLE.search(about)) and not st.describes
        st.person = "name" in name.split() and not st.describes and not st.handle
    if st.kind == "number":
        span = RANGE.search(expects)
        if span:
            st.low, st.high = float(span.group(1)), float(span.group(2))
        unit = HOW_MANY.search(expects)
        st.unit = T.singular(unit.group(1).lower()) if unit else ""
    return st



# ---------------------------------------------------------------------------------------------- declared types
SLOT_TYPES: dict[str, str] = {
    "text": "a short text, taken as written",
    "free_text": "the customer's own description of something (an opening message can give it)",
    "name": "a person's name",
    "username": "one word naming an account (a login, a handle)",
    "email": "an email address",
    "phone": "a phone number (read in the store's region)",
    "number": "a number (a count, a quantity)",
    "money": "an amount of money in the store's currency",
    "date": "a date (today, next Friday, 3 May)",
    "time": "a clock time (7:45, quarter past six, 10:30 in the morning), kept as HH:MM",
    "yes_no": "a yes or a no",
    "code": "a numeric code; code(6) for exactly six digits",
    "id": "an order, account or ticket id; id(ORD-XXXX) for ids shaped like the example",
    "order_id": "the same as id",
    "account_id": "the same as id",
    "choice": "one of the items the agent has just offered",
    "category": "one of the inventory's categories",
    "brand": "one of the inventory's brands",
    "model": "a product model (a brand and model name)",
    "one_of": "one of listed values: one_of(small, medium, large)",
    "column": "one of the values of an inventory column: column(Colour)",
}
TYPE_SPEC = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$", re.I | re.S)


def type_problem(spec: str, columns: dict[str, list[str]] | None = None) -> str:
    """Why a declared slot type cannot be used ('' when it can)."""
    m = TYPE_SPEC.match(spec or "")
    if m is None or m.group(1).lower() not in SLOT_TYPES:
        return f"unknown slot type {spec!r}; use one of {', '.join(SLOT_TYPES)}"
    kind, arg = m.group(1).lower(), (m.group(2) or "").strip()
    if kind == "one_of" and len([v for v in arg.split(",") if v.strip()]) < 2:
        return f"{spec!r}: one_of needs two or more values, e.g. one_of(small, medium, large)"
    if kind == "code" and arg and not arg.isdigit():
        return f"{spec!r}: code takes the number of digits, e.g. code(6)"
    if kind == "column":
        if not arg:
            return f"{spec!r}: column needs the inventory column, e.g. column(Colour)"
        if columns is not None and arg not in columns:
            have = ", ".join(columns) or "none: the workspace has no inventory"
            return f"{spec!r}: the inventory has no column {arg!r} (its columns: {have})"
    if arg and kind not in ("one_of", "code", "column", "id", "order_id", "account_id"):
        return f"{spec!r}: {kind} takes no value in brackets"
    return ""


def declared_type(name: str, spec: str, expects: str, vocab: Vocabulary,
                  columns: dict[str, list[str]] | None = None) -> SlotType:
    """The slot type an author declared (``spec`` as written in gar.csv or the SOP; checked by
    :func:`type_problem` first). The description of a valid answer still gives the details the type
    leaves open (an id's example, a code's length)."""
    m = TYPE_SPEC.match(spec)
    assert m is not None, spec
    kind, arg = m.group(1).lower(), (m.group(2) or "").strip()
    if kind == "one_of":
        st = SlotType(name, "option", vocab=[v.strip() for v in arg.split(",") if v.strip()])
    elif kind == "column":
        st = SlotType(name, "option", vocab=list((columns or {}).get(arg, [])))
    elif kind in ("id", "order_id", "account_id"):
        found = re.search(r"\blike\s+([A-Z][\w-]+)", expects)
        example = arg or (found.group(1) if found else "")
        st = SlotType(name, "id", pattern=_id_pattern(f"like {arg}" if arg else expects) or shape_pattern(arg),
                      example=example)
    elif kind == "code":
        size = int(arg) if arg else stated_digits(expects)
        st = SlotType(name, "digits", digits=size)
    elif kind == "phone":
        st = SlotType(name, "phone", digits=stated_digits(expects))
    elif kind in ("category", "brand", "model"):
        st = SlotType(name, kind, vocab=vocab.categories if kind == "category" else vocab.brands)
    else:
        base = {"free_text": "text", "name": "text", "username": "text", "yes_no": "boolean"}.get(kind, kind)
        st = SlotType(name, base, describes=kind == "free_text", person=kind == "name", handle=kind == "username")
        if base == "number":
            st = _refine(st, name.lower().replace("_", " "), expects)
    st.declared = spec.strip()
    return st


def type_label(st: SlotType) -> str:
    """How a slot type is written in a declaration (for lint lines and the studio)."""
    if st.kind == "option":
        return f"one_of({', '.join(st.vocab[:6])}{', …' if len(st.vocab) > 6 else ''})"
    if st.kind == "text":
        return "name" if st.person else "username" if st.handle else "free_text" if st.describes else "text"
    if st.kind == "digits":
        return f"code({st.digits})" if st.digits else "code"
    return {"boolean": "yes_no"}.get(st.kind, st.kind)
