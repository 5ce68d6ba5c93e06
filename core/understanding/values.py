"""Values a customer names: labelled pairs ("zip is 10023", "Username: jdoe41", "my pin is 4410 and order id
7712309944"), the last digits of a card ("ending with 3310"), and self-introductions ("this is lena park",
"Joost Bakker here").

A label says which slot a value is for, so it is read first: each labelled value goes to the slot its label
names, and its words are taken out of the message (:func:`blank`) before the slots without a label read
theirs, so a PIN is never read out of a phone number and an order id is never entered as a phone. How labels
are called (synonyms, the words between a label and its value) is language data (``label_synonyms``,
``label_joiners``, ``ending_phrases``, ``name_intro``, ``name_outro`` in the language files); the labels
themselves are the author's slot names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T
from core.understanding.extract import extract
from core.understanding.mentions import handle_value, person_name, prose_words
from core.workspace.slots import GENERIC_NAME_WORDS, SlotType, validate

UNSPACED_LETTER = LEX.UNSPACED.pattern.removesuffix("+")  # one letter of a script written without spaces
# where a labelled value stops: not at a year's comma ("June 3, 1979"), nor inside a number ("6,000")
END = r"(?=\s*(?:,(?!\s*\d{4}\b)(?!(?<=\d,)\d{3}(?!\d))|;|\s(?:and|but|&|plus)\s|[.!?](?:\s|$)|$))"


@dataclass(frozen=True)
class Labelled:
    """A value the customer named: the slot it is for, the value, and the span of the label and value."""

    slot: str
    value: Any
    start: int
    end: int
    words: str


@cache
def _synonyms() -> dict[str, tuple[str, ...]]:
    """Per word of a slot name, the other ways customers call it (``label_synonyms``: "zip: zip code, ...")."""
    out: dict[str, list[str]] = {}
    for entry in LEX.phrases("label_synonyms"):
        head, sep, rest = entry.partition(":")
        if sep:
            out.setdefault(head.strip().lower(), []).extend(p.strip().lower() for p in rest.split(",") if p.strip())
    return {k: tuple(v) for k, v in out.items()}


def name_words(name: str) -> list[str]:
    """The words of a slot name: ``card_last4`` -> card, last, 4; ``orderId`` -> order, id."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.split(".")[-1])
    return [w.lower() for w in re.findall(r"[A-Za-z]+|\d+", spaced)]


def label_phrases(name: str, st: SlotType) -> list[str]:
    """How a customer may name the slot: its name as words ("order id"), that name without generic words
    ("order"), and the language files' synonyms of its words ("zip code", "postcode" for ``zip``)."""
    words = name_words(name)
    if not words or st.describes:
        return []
    out = [" ".join(words)]
    content = [w for w in words if w not in GENERIC_NAME_WORDS and w not in T.STOPWORDS and not w.isdigit()]
    if content and content != words and len("".join(content)) >= 3 and not st.person:
        out.append(" ".join(content))
    syn = _synonyms()
    for w in words:
        if w in syn and (len(words) == 1 or w not in GENERIC_NAME_WORDS):
            out += syn[w]
    if len(words) > 1 and words[-1] in GENERIC_NAME_WORDS and words[-1] in syn:  # "order id" -> "order number"
        out += [" ".join([*words[:-1], s]) for s in syn[words[-1]]]
    if st.kind == "digits" and 0 < st.digits <= 6 and set(words) & _ending_words():
        out += list(LEX.phrases("ending_phrases"))  # "the visa ending with 3310" for ``card_last4``
    return list(dict.fromkeys(p for p in out if p))


@cache
def _ending_words() -> frozenset[str]:
    """The words of the ending phrases ("last", "ending"): a slot named with one holds the last digits."""
    return frozenset(w for p in LEX.phrases("ending_phrases") for w in p.lower().split()
                     if w.isalpha() and w not in T.STOPWORDS and w not in ("four", "digits"))


def _read(st: SlotType, name: str, said: str) -> Any:
    """The slot's value in the words after its label, or None (the same words read once for slots of the same
    kind in several SOPs: dates are costly to read)."""
    key = (st.kind, st.declared, st.digits, st.person, st.handle, st.describes, st.region, tuple(st.vocab),
           st.pattern.pattern if st.pattern is not None else "", name if st.handle else "", said)
    if key not in _READ:
        if len(_READ) > 512:
            _READ.clear()
        _READ[key] = _read_now(st, name, said)
    return _READ[key]


_READ: dict[tuple, Any] = {}


def _read_now(st: SlotType, name: str, said: str) -> Any:
    if st.person:
        return person_name(said, asked=True)
    if st.handle:
        return handle_value(said, name)
    if st.kind == "text":
        value = said.strip(" .,'\"")
        return value if 0 < len(T.words(value)) <= 8 and not T.is_question(value) else None
    value = extract(st, said, asked=True)
    if st.kind == "id" and st.pattern is None and len(str(value or "")) < 3:
        return None  # "order 2 pizzas": a word that is also a label, then a count
    return value if validate(st, value) else None


def _may_follow(st: SlotType, said: str, joined: bool) -> bool:
    """Whether the words after a label can be its value: a range ("budget between 30k and 40k") is read
    whole elsewhere; without "is" or ":" between them, free text only when shaped like a value ("username
    kwame88", not "my login first"), a name only when it reads as one ("name gareth hughes")."""
    if st.kind in ("money", "number") and re.match(r"\s*(?:between|from)\b", said, re.I):
        return False
    if st.kind == "boolean":  # "my heating is not working" says nothing of whether it is switched on:
        #                       a yes or a no answers its question, or is written as a form's ("roaming: yes")
        return len(T.words(said)) == 1 and T.yes_no(said) is not None
    if joined or st.kind != "text":
        return True
    first = said.split()[0] if said.split() else ""
    if st.person:
        return _name_run(said.split(",")[0]) is not None
    return bool(re.search(r"[\d._@]", first))


@cache
def _joiners() -> str:
    return LEX.alternation("label_joiners") or "(?!x)x"


def labelled_values(text: str, types: dict[str, SlotType]) -> list[Labelled]:
    """Every value the message gives under a label that names one of ``types``' slots (at each place the
    longest label), each span used once; in the order they were said. A label whose words hold no valid value
    of its slot ("I opened a checking account last week") gives nothing."""
    pattern, index = _label_index(types)
    if pattern is None:
        return []
    found: list[Labelled] = []
    given: set[str] = set()
    for m in pattern.finditer(text):
        if found and m.start() < found[-1].end:
            continue
        stop = re.search(END, text[m.end():])
        said = text[m.end(): m.end() + (stop.start() if stop else len(text) - m.end())]
        if not said.strip():
            continue
        joined = bool(m.group("join").strip())  # "login: x", "zip is 10023"; else the value follows the label
        for name in index.get(" ".join(m.group("label").lower().split()), ()):
            st = types[name]
            if name in given or not _may_follow(st, said, joined):
                continue
            value = _read(st, name, said)
            if value is None:
                continue
            found.append(Labelled(name, value, m.start(), m.end() + _extent(st, name, said, value), said.strip()))
            given.add(name)
            break
    return found


def _label_index(types: dict[str, SlotType]) -> tuple[re.Pattern[str] | None, dict[str, tuple[str, ...]]]:
    """One pattern for every label of ``types``' slots (longest first) and, per label, the slots it names
    (compiled once per set of slot types: every message of a turn is read against them)."""
    key = tuple(sorted((n, st.kind, st.declared, st.digits, st.person, st.handle, st.describes)
                       for n, st in types.items()))
    if key not in _INDEXES:
        index: dict[str, list[str]] = {}
        for name in sorted(types):
            for phrase in label_phrases(name, types[name]):
                index.setdefault(" ".join(phrase.lower().split()), []).append(name)
        people = [n for n, st in types.items() if st.person]
        named = [n for n in types if "name" in name_words(n)]
        if len(people) == 1 and named == people:  # "name gareth hughes": the one name slot there is
            for phrase in ("name", "full name"):
                index.setdefault(phrase, []).append(people[0])
        longest_first = sorted(index, key=lambda p: (-len(p), p))
        labels = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in longest_first)
        # a label ends at a word's edge; in Thai, written without spaces, a word may follow it at once ("งบจริงๆ")
        pattern = re.compile(rf"(?<![\w@.])(?P<label>{labels})(?:(?![\w@])|(?<={UNSPACED_LETTER}))"
                             rf"(?P<join>(?:\s*(?:{_joiners()})(?![\w])|\s*[:#=-])*)\s*", re.I) if labels else None
        if len(_INDEXES) > 256:
            _INDEXES.clear()
        _INDEXES[key] = (pattern, {k: tuple(v) for k, v in index.items()})
    return _INDEXES[key]


_INDEXES: dict[tuple, tuple[re.Pattern[str] | None, dict[str, tuple[str, ...]]]] = {}


def _extent(st: SlotType, name: str, said: str, value: Any) -> int:
    """How far into ``said`` the value's own words go: the shortest run of its words that still reads as the
    same value ("214" of "214 on the third floor", "June 3, 1979" of "June 3, 1979 and ...")."""
    shown = str(value)
    if shown and shown.lower() in said.lower():  # written as it is kept ("kwame88", "5521")
        return said.lower().index(shown.lower()) + len(shown)
    if isinstance(value, int | float) and not isinstance(value, bool):  # "$1,000", "301"
        for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", said):
            if float(m.group(0).replace(",", "")) == float(value):
                return m.end()
    iso = re.fullmatch(r"(\d{4})-\d{2}-(\d{2})", shown)
    if iso:  # a date as written: up to its year ("June 3, 1979"), else its day ("the 3rd")
        year = re.search(rf"\b{iso.group(1)}\b", said)
        day = re.search(rf"\b0?{int(iso.group(2))}(?:st|nd|rd|th)?\b", said, re.I)
        if year or day:
            return (year or day).end()  # type: ignore[union-attr]
    for i, m in enumerate(re.finditer(r"\S+", said)):  # a phone or an option as written: its first few words
        if i >= 6:
            break
        if _read(st, name, said[: m.end()]) == value:
            return m.end()
    return len(said.rstrip())


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the given spans replaced by spaces (positions kept)."""
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


DIGIT_RUN = re.compile(r"[+(]?\d[\d\s().-]*\d|\d")


def value_span(text: str, value: object) -> tuple[int, int] | None:
    """Where a value a slot took was said: its words as written, or for a number written otherwise ("(206)
    555-0143" for "+1 206-555-0143") the run of digits and separators that spells it; None when not found."""
    said = str(value)
    at = text.lower().find(said.lower()) if said.strip() else -1
    if at >= 0:
        return at, at + len(said)
    digits = re.sub(r"\D", "", said)
    if len(digits) < 3:
        return None
    for m in DIGIT_RUN.finditer(text):
        run = re.sub(r"\D", "", m.group(0))
        if run and (digits.endswith(run) and len(run) >= 5 or run.endswith(digits)):
            return m.start(), m.end()
    return None


NAME_WORD = r"[^\W\d_][\w'-]*"


def introduced_name(text: str) -> str | None:
    """A name the customer gives unasked by introducing themselves: "this is lena park", "hi im Sven
    Olafsson", "Joost Bakker here", "Priya Nair speaking". Lower-case names count when two or three words, none
    of them a function word or a word of the language files; None otherwise."""
    intro, outro = LEX.alternation("name_intro"), LEX.alternation("name_outro")
    candidates: list[str] = []
    if intro:
        for m in re.finditer(rf"(?<![\w'])(?:{intro})\s+((?:{NAME_WORD})(?:\s+{NAME_WORD}){{0,3}})", text, re.I):
            candidates.append(m.group(1))
    if outro:
        for m in re.finditer(rf"(?:^|[,.;!?]\s*|\b(?:hi|hello|hey)\s+)((?:{NAME_WORD})(?:\s+{NAME_WORD}){{1,2}})\s+"
                             rf"(?:{outro})\b", text, re.I):
            candidates.append(m.group(1))
    for said in candidates:
        name = _name_run(said)
        if name:
            return name
    return None


HANDLE_SHAPED = re.compile(r"[^\W\d_][\w.]*[\d_][\w.]*")  # letters, then digits or underscores among them


def introduced_handle(text: str) -> str | None:
    """An account name the customer introduces themselves by ("hi, this is dana_k_204", "I'm lee.ray77"):
    the one word after an introduction that is shaped like an account name (letters with digits or
    underscores), never an email address or a person's name. None otherwise."""
    intro = LEX.alternation("name_intro")
    found: set[str] = set()
    for m in re.finditer(rf"(?<![\w'])(?:{intro})\s+(\S+)", text, re.I) if intro else ():
        word = m.group(1).rstrip(".,!?;:)'\"").rstrip("._")
        if "@" not in word and HANDLE_SHAPED.fullmatch(word):
            found.add(word)
    return found.pop() if len(found) == 1 else None


def reused_values(text: str, types: dict[str, SlotType], order: list[str],
                  earlier: list[tuple[dict[str, Any], dict[str, SlotType]]]) -> dict[str, Any]:
    """Values a message asks to take from an earlier request of the session ("the same dates as the car",
    "same address as before": ``reuse_same`` in the language files): the slots of ``types`` still to fill that
    the words after "same" name (by their kind, "dates", or a word of their name, "address"), each given the
    value of the latest earlier request (``earlier``: its slots and their types, latest first) that holds
    values of that kind, in the order the flow asks them (``order``). Empty when the message asks no such
    thing or no earlier request has it."""
    same = LEX.alternation("reuse_same")
    m = re.search(rf"(?<![\w'])(?:{same})\s+([^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)\s+(?:as|like)\b", text, re.I) \
        if same else None
    if m is None:
        return {}
    said = {T.singular(w) for w in T.words(m.group(1))}
    wanted = [n for n in order if n in types and (types[n].kind in said or said & set(name_words(n)))]
    for slots, kinds in earlier:
        out: dict[str, Any] = {}
        pool = [(k, v) for k, v in slots.items() if v not in (None, "") and k in kinds]
        for name in wanted:
            kind = types[name].kind
            match = next(((k, v) for k, v in pool if kinds[k].kind == kind
                          and (kind not in ("text",) or set(name_words(k)) & set(name_words(name)))), None)
            if match is not None:
                out[name] = match[1]
                pool.remove(match)
        if out:
            return out
    return {}


def name_given(text: str) -> str | None:
    """A name the customer gives unasked: said as theirs ("my name is Lena Park"), in an introduction
    (:func:`introduced_name`) or as an item of a list of values (:func:`listed_name`)."""
    return person_name(text, asked=False) or introduced_name(text) or listed_name(text)


def passing_name(text: str, exclude: frozenset[str] = frozenset()) -> str | None:
    """A person's name said in passing ("send money to Ines", "please add Tomasz Nowak to my list"): the one
    run of capitalised words that does not open a sentence, none of them a word of the language files, a
    date word or a word of ``exclude`` (the SOP's own words); None when there is none, or more than one."""
    skip = _not_name_words() | _date_words() | exclude
    runs: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        tokens = prose_words(sentence)
        run: list[str] = []
        for i, w in enumerate(tokens + [""]):
            if i > 0 and w[:1].isupper() and len(w) > 1 and not w.isupper() and w.lower() not in skip:
                run.append(w)
                continue
            if 0 < len(run) <= 3:
                runs.append(" ".join(run))
            run = []
    found = list(dict.fromkeys(runs))
    return found[0] if len(found) == 1 else None


def name_part(name: str, part: str) -> str:
    """The part of a full name a slot keeps: "first" -> its first word, "last" -> the words after it; the
    name as given when it is one word or no part is asked."""
    words = name.split()
    if part not in ("first", "last") or len(words) < 2:
        return name
    return words[0] if part == "first" else " ".join(words[1:])


@cache
def _date_words() -> frozenset[str]:
    """Month and day names (never a person's name said in passing)."""
    return frozenset(w for p in LEX.phrases("date_words") for w in re.findall(r"[a-z]+", p.lower()))


def listed_name(text: str) -> str | None:
    """A name given as one item of a list of values ("account 55120934, priya sharma, postcode ls6 2ab"): an
    item of two or three words that can only be a name, in a message that gives other values too."""
    if not re.search(r"\d|@", text):
        return None
    for item in re.split(r"\s*[,;]\s*|\s+-\s+", text):
        item = item.strip(" .!?")
        if re.fullmatch(rf"{NAME_WORD}(?:\s+{NAME_WORD}){{1,2}}", item) and _name_run(item) == item:
            return item
    return None


def _name_run(said: str) -> str | None:
    """The leading words of ``said`` that can be a person's name."""
    skip = _not_name_words()
    run: list[str] = []
    for w in said.split():
        if w.lower() in skip or len(w) < 2 or not w[0].isalpha():
            break
        run.append(w)
    if not run:
        return None
    if any(w[0].isupper() for w in run):
        run = run[: next((i for i, w in enumerate(run) if not w[0].isupper()), len(run))]
        return " ".join(run) if run else None
    return " ".join(run[:3]) if 2 <= len(run) else None


@cache
def _not_name_words() -> frozenset[str]:
    """Words that are never part of a name: function words and every word of the language files' lists."""
    out = set(T.STOPWORDS)
    for key in ("affirm", "deny", "greeting", "thanks", "lead_filler", "unsure", "unable", "negative", "hedges",
                "general_verbs", "request_verbs", "name_outro", "judgement", "currency_words", "units", "tens"):
        for p in LEX.phrases(key):
            out |= {w for w in re.findall(r"[a-z']+", p.lower()) if len(w) > 1}
    return frozenset(out | {"calling", "writing", "trying", "having", "going", "looking", "contacting", "reaching"})


def stated_default(st: SlotType, name: str, texts: list[str]) -> Any:
    """The value a question says it uses when the customer does not know ("If you're not sure, I'll use the
    standard $50."): a valid value of the slot in a sentence of ``texts`` (the question, its description)
    that has a ``default_markers`` phrase; None when none says one."""
    markers = LEX.alternation("default_markers")
    if not markers:
        return None
    for said in texts:
        for sentence in re.split(r"(?<=[.!?;])\s+|[()]", said or ""):
            if re.search(rf"\b(?:{markers})\b", sentence, re.I):
                value = _read(st, name, sentence) if st.kind not in ("text", "boolean") else None
                if value is not None:
                    return value
    return None
