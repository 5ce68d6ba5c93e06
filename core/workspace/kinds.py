"""A slot's kind weighed from all its evidence (ARCHITECTURE.md §3b), strongest first.

1. A condition that compares the slot with ``true``/``false`` (a yes or a no), with a number, or with a date.
2. The question's form: "(yes/no)", "yes or no", a question that asks for a yes or a no ("Do you know ...?"),
   or one that offers quoted choices ("'moving abroad' or 'too expensive'?").
3. The options the hint lists ("one of a, b or c"; "a plan tier: starter, plus, premium or family").
4. The hint's words for an account name (a username, a login): one word, never a sentence.
5. The shape of the author's example ("e.g. jo.bell@mail.org" is an email, "like 5512349870" ten digits).
6. The hint's head words ("the full address for the return label, with the zip code" is an address first);
   a head that offers two kinds ("the PIN or the answer to the security question") is free text.
7. The slot's name, weakest of all (``remembers_pin`` compared with ``true`` is a yes or a no).

The kinds are those of :class:`core.workspace.slots.SlotType`; each weighed type says in ``origin`` which
evidence decided it, for lint and the studio. A shape taken from an example is generalised (the characters
it uses, a length range, its separators and a leading format mark such as ``#B`` or ``ORD-``), never copied
literally.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T

YES_NO_MARK = re.compile(r"\(\s*(?:yes\s*/\s*no|y\s*/\s*n)\s*\)|\byes or no\b|\byes/no\b", re.I)
QUOTED = re.compile(r"['‘’\"“”]([^'‘’\"“”]{1,40})['‘’\"“”]")
LEAD = (rf"(?<![^\W\d_])(?:{LEX.alternation('example_leads')})"  # the words that lead an example ("e.g.", "เช่น"),
        r"(?=\s|[:.,]|$|[^\x00-\x7F])")  # from every language file, whole words
EXAMPLES_LEAD = re.compile(rf"[,;(]?\s*{LEAD}\s*", re.I)
EXAMPLE = re.compile(rf"{LEAD}\s*:?\s+([^,;()]+?)\s*(?=$|[,;()]|\.\s|\.$)", re.I)  # the example itself
HEAD_END = re.compile(r"\s*(?:[,;:(]|\be\.g\.|\beg\b|\bfor example\b|\bsuch as\b|\blike\b|\bincluding\b|"
                      r"\bwith\b|\bfrom\b|\bfor\b|\bto\b|\bthat\b|\bwhich\b)", re.I)
MONEY_WORDS = re.compile(r"\b(budget|price|amount|cost|money|spend|fee|charge|refund|balance|limit)\b", re.I)
ADDRESS_WORDS = re.compile(r"\b(?<!e-mail )(?<!email )(address|street)\b", re.I)
COLON_LIST = re.compile(r":\s*([^:]+?)\s*[.)]?\s*$")


@dataclass
class KindEvidence:
    """What the workspace says about one slot besides its declaration."""

    name: str
    hint: str = ""  # the author's description of a valid answer (gar.csv metadata, a JSON node's description)
    questions: Sequence[str] = ()  # what the asks that fill it say to the customer
    compared: Sequence[Any] = ()  # literals conditions compare it with (True, 3, "pending", a date)
    notes: list[str] = field(default_factory=list)


def condition_kind(compared: Sequence[Any]) -> str | None:
    """The kind a condition's comparisons give: a yes or a no, a number, a date; None for strings or none."""
    if any(isinstance(v, bool) for v in compared):
        return "boolean"
    if any(isinstance(v, int | float) and not isinstance(v, bool) for v in compared):
        return "number"
    if any(isinstance(v, date) for v in compared):
        return "date"
    return None


def marks_yes_no(question: str) -> bool:
    """Whether a question says outright that it wants a yes or a no: "(yes/no)", "yes or no"."""
    return YES_NO_MARK.search(question) is not None


def asks_yes_no(question: str) -> bool:
    """Whether a question is worded to be answered yes or no: it opens with a word that starts a question
    but is not a question word ("Do you ...?", "Is it ...?"), offers no choice, and is not a polite request
    ("Could you give me the order number?")."""
    q = question.strip()
    if marks_yes_no(q):
        return True
    last = re.split(r"(?<=[.!:])\s+", q)[-1]  # "I can help. Do you know the email on it?"
    if not last.endswith("?") or T.WH_WORD.match(last) or quoted_options(last) or T.REQUEST.search(last):
        return False
    if re.search(r"\b(?:or|หรือ)\b", last.rstrip("?")) and not re.search(r"\bor not\b", last):
        return False
    return bool(T.QUESTION_START.match(last)) or bool(T.QUESTION_END.search(LEX.segment(last)))


def quoted_options(text: str) -> list[str]:
    """Choices a question offers in quotes: "'moving abroad' or 'too expensive'?" (two or more)."""
    found = [m.group(1).strip() for m in QUOTED.finditer(text)]
    found = [f for f in found if f and not re.fullmatch(r"[\w.-]*\d[\w.-]*", f)]
    return found if len(found) >= 2 else []


def colon_options(hint: str) -> list[str]:
    """Choices a hint lists after a colon: "a plan tier: starter, plus, premium or family" (each one to four
    words; two or more of them)."""
    m = COLON_LIST.search(hint)
    if m is None or EXAMPLE.search(m.group(1)) or "@" in m.group(1) or not re.search(r"\bor\b", m.group(1)):
        return []  # "street, city and postcode" names the parts of one value, not choices
    items = [i.strip(" .'\"") for i in re.split(r",\s*(?:or\s+)?|\s+or\s+", m.group(1))]
    items = [i for i in items if i]
    if len(items) < 2 or any(len(i.split()) > 4 or re.search(r"\d{3,}", i) for i in items):
        return []
    return items


def example_of(hint: str) -> str:
    """The author's example in a hint ("e.g. AUTUMN15", "like tom_li_2041", "e.g. 9 Quay Road"), up to
    the next comma or bracket; '' when it gives none."""
    m = EXAMPLE.search(hint)
    return m.group(1).strip().rstrip(".") if m else ""


def example_kind(example: str) -> str | None:
    """The kind an example's shape shows: an email, a phone number, digits, money, a date, or an id (a word
    mixing letters with digits or separators); None for plain words."""
    e = example.strip()
    if re.fullmatch(r"\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?|\d{1,2}(?:[.:]\d{2})?\s?[ap]\.?m\.?", e, re.I):
        return "time"  # "7:45 pm", "10:30", "7pm"
    if not e or (" " in e and not re.fullmatch(r"[\d\s().+-]+|[$€£¥฿]\s?\d[\d,.]*", e)):
        return None  # several words ("Mei Davis 80217", "7226 Florshire Ave") show no one shape
    if re.fullmatch(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", e):
        return "email"
    if re.fullmatch(r"\(?\+?\d[\d\s().-]{8,}\d", e) and len(re.sub(r"\D", "", e)) >= 9 and re.search(r"[\s().-]", e):
        return "phone"
    if re.fullmatch(r"\d+", e):
        return "digits"
    if re.fullmatch(r"[$€£¥฿]\s?\d[\d,.]*|\d[\d,.]*\s?(?:[$€£¥฿])", e):
        return "money"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}", e):
        return "date"
    if re.fullmatch(r"[#\w][\w#./-]*", e) and (re.search(r"\d", e) or re.search(r"[_#./-]", e)) and len(e) >= 4:
        return "id"
    return None


def general_shape(example: str, hint: str = "") -> re.Pattern[str] | None:
    """A pattern for values shaped like ``example``, generalised: the kinds of characters it uses (letters,
    digits, its separators), a length range around its own (or the length the hint states: "six letters and
    digits"), and a leading format mark kept as written (``#B``, ``ORD-``: letters before a separator, or a
    sign). "7KD2A9" takes "QZ4RWP"; "tom_li_2041" takes "alexandra_konstantinou_77"; None for an example too short
    to say anything."""
    e = example.strip()
    if len(e) < 4 or not re.fullmatch(r"[#\w][\w#./-]*", e):
        return None
    prefix = format_mark(e)
    body = e[len(prefix):]
    seps = "".join(sorted({c for c in body if not c.isalnum()}))
    chars = ("A-Za-z" if re.search(r"[A-Za-z]", body) else "") + ("0-9" if re.search(r"\d", body) else "")
    if not chars:
        return None
    size = stated_length(hint)
    if size:  # the hint states it
        low, high = size, size
    elif seps:  # parts of names and numbers joined: "tom_li_2041", "alexandra_konstantinou_77"
        low, high = max(3, len(body) // 2), 2 * len(body) + 4
    elif re.fullmatch(r"\d+", body):  # "T-12" takes "T-5" and "T-123"
        low, high = max(1, len(body) - 1), len(body) + 1
    else:  # a code of letters and digits: about the example's length ("AUTUMN15" takes "SUMMER2025")
        low, high = max(4, len(body) - 2), len(body) + 2
    mixed = bool(re.search(r"[A-Za-z]", body) and re.search(r"\d", body))  # a word said in passing needs both
    need = "".join((r"(?=[\w.-]*\d)", r"(?=[\w.-]*[A-Za-z])")) if mixed else ""
    sep_class = re.escape(seps)
    for sep in seps:  # each separator the example uses, at least once
        need += rf"(?=[\w.-]*{re.escape(sep)})"
    klass = f"[{chars}{sep_class}]"
    return re.compile(rf"(?<![\w.@-]){re.escape(prefix)}{need}{klass}{{{low},{high}}}(?![\w@-]|\.\w)",
                      re.I)


def example_frame(example: str) -> re.Pattern[str] | None:
    """A pattern for values worded like a several-word example that ends in a number ("the visa ending in
    7447", "unit 4 block 12"): its first word stands for any word, the words joining it to the number are kept
    as written, and the number for any number of its length. "my amex ending in 0051" holds "amex ending in
    0051". None for an example with no number, or with no joining word (a word and a number alone say too
    little: "room 204")."""
    words = re.sub(r"^(?:the|a|an|my|your)\s+", "", example.strip(), flags=re.I).split()
    if len(words) < 3 or not re.fullmatch(r"\d+", words[-1]) or any(re.search(r"\d", w) for w in words[:-1]):
        return None
    joining = r"\s+".join(re.escape(w) for w in words[1:-1])
    size = len(words[-1])
    return re.compile(rf"(?<![\w-])[^\W\d_][\w-]*\s+{joining}\s+\d{{{size}}}(?!\d)", re.I)


def format_mark(example: str) -> str:
    """The format mark an example opens with, kept as written in every value: letters before a dash or a
    sign (``ORD-``, ``TK-``), or a sign with the letters after it (``#B``); '' when it has none."""
    mark = re.match(r"#?[A-Za-z]{0,4}[-#]|#[A-Za-z]{0,3}(?=\d)", example.strip())
    return mark.group(0) if mark else ""


def stated_length(hint: str) -> int:
    """A length the hint states for the value ("six letters and digits", "10 digits"); 0 when none."""
    m = re.search(r"\b(\w+)[- ](?:letters?|characters?|digits?)\b", hint, re.I)
    if m is None:
        return 0
    word = m.group(1).lower()
    if word.isdigit():
        return int(word)
    return T.word_number(word) or 0


def hint_head(hint: str) -> str:
    """The head of a hint, before what qualifies it: "the full address for the return label, with the zip
    code" -> "the full address"."""
    m = HEAD_END.search(hint)
    return hint[: m.start()].strip() if m else hint.strip()


def alternatives(hint: str) -> list[str]:
    """The alternatives a hint offers, its example aside: "the account's PIN or the answer to the security
    question" -> two of them; a bare "no" ("one of the recommended items, or no") is a decline, not one; a
    hint with one gives a list of one."""
    lead = EXAMPLE.search(hint)  # the example runs to the end, or to a ", or" that offers another kind of answer
    tail = hint[lead.start():] if lead else ""  # ("the option, e.g. size 11 or 12, or an item id from the list")
    more = re.search(r",\s+or\s+", tail)
    said = (hint[: lead.start()] + (" or " + tail[more.end():] if more else "")) if lead else hint
    parts = [a.strip(" ,;.") for a in re.split(r"\s+or\s+", said)]
    return [a for a in parts if a and not (len(a.split()) == 1 and T.NO.fullmatch(a))]


FIRST_NAME = re.compile(r"\b(?:first|given|fore)[ _-]?name\b", re.I)
LAST_NAME = re.compile(r"\b(?:last|family|sur)[ _-]?name\b", re.I)
OWN_NAME = re.compile(r"\b(?:your|my|customer'?s?|caller'?s?|account holder'?s?)\s+(?:(?:full|legal)\s+)?name\b|"
                      r"\b(?:full|legal|first|given|last|family|sur)[ _-]?name\b|\bwho (?:am i|are you)\b", re.I)


def mark_person(st: Any, name: str, hint: str, questions: Sequence[str]) -> None:
    """For a slot that holds a person's name: whether it is the customer's own ("your full name", a first or
    last name) or another person's (a recipient, a contact: its name may be said in passing, "send it to
    Ines"), and which part of a full name it keeps (a first name, a last name)."""
    if not getattr(st, "person", False):
        return
    about = " ".join([name.replace("_", " "), hint, *questions])
    st.others = OWN_NAME.search(about) is None
    words = name.replace("_", " ")
    st.name_part = "first" if FIRST_NAME.search(words) else "last" if LAST_NAME.search(words) else ""
