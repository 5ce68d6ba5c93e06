"""General language knowledge: tokens, plurals, numbers and money, yes/no, questions.

Nothing here names a store, product, category or SOP: store vocabulary comes
from the workspace at run time.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from core.language import lexicons as LEX

STOPWORDS = frozenset("""
a an the i me my mine we our you your it its it's is are was were be been am do does did have has had
to of in on at for with from by about as into like than then so and or but if not no yes this that these
those there here what which who whom whose when where why how can could would should will shall may might
must please pls plz some any one ones just also too very really much many more most such own same other
want wanted need needed looking look get got give show tell find help recommend suggest buy am i'm im
let lets let's up out over under around only still well ok okay hi hello hey thanks thank
""".split())

# Words every conversation may use that typos should still reach (ordinals, amounts, yes/no).
GENERAL_WORDS = frozenset("""
first second third fourth fifth last cheapest cheaper expensive under below above around about budget
yes yeah nope sure thanks please course still have lost longer anymore never absolutely definitely
correct right sorry access email phone number code password account maybe really later none neither pass
""".split())

IRREGULAR_PLURALS = {"mouse": "mice", "child": "children", "person": "people", "man": "men", "woman": "women",
                     "foot": "feet", "tooth": "teeth", "knife": "knives", "life": "lives", "leaf": "leaves",
                     "shelf": "shelves", "wife": "wives", "half": "halves", "box": "boxes"}
IRREGULAR_SINGULARS = {v: k for k, v in IRREGULAR_PLURALS.items()}

WORD = re.compile(r"[a-z0-9\u0E00-\u0E7F][a-z0-9'\-\u0E00-\u0E7F]*", re.I)  # Thai once segmented


def words(text: str) -> list[str]:
    """Lower-case words, punctuation dropped."""
    return list(_words(text))


@lru_cache(maxsize=8192)  # a turn reads the same few texts many times over
def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip("'-") for w in WORD.findall(LEX.segment(text).lower()) if w.strip("'-"))


def tokens(text: str) -> list[str]:
    """Content words (stopwords dropped)."""
    return [w for w in _words(text) if w not in STOPWORDS]


def singular(word: str) -> str:
    """A crude English singular."""
    w = word.lower()
    if w in IRREGULAR_SINGULARS:
        return IRREGULAR_SINGULARS[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def squash(text: str) -> str:
    """Lower-case letters and digits only, so spellings of one name meet ("TemperatureCelsius",
    "temperature_celsius"; "7pm", "7 pm")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


STEM_SUFFIXES = ("ations", "ation", "ings", "ing", "ed", "es", "s", "e")


def stem(word: str) -> str:
    """A crude stem that makes a word's common forms meet ("reserve", "reservation" -> "reserv")."""
    w = singular(word)
    for suffix in STEM_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[:-len(suffix)]
    return w


def plural_forms(phrase: str) -> set[str]:
    """Singular and plural spellings of a phrase (its last word varies)."""
    ws = words(phrase)
    if not ws:
        return set()
    head, last = ws[:-1], ws[-1]
    sing = singular(last)
    forms = {sing, last, IRREGULAR_PLURALS.get(sing, sing + ("es" if sing.endswith(("s", "x", "ch", "sh")) else "s"))}
    if sing.endswith("y") and len(sing) > 2 and sing[-2] not in "aeiou":
        forms.add(sing[:-1] + "ies")
    return {" ".join([*head, f]) for f in forms}


# ---------------------------------------------------------------- numbers and money

CURRENCY_WORDS = rf"(?:{LEX.alternation('currency_words')})"
# Thai money words sit right against the number ("งบ15000", "15000บาท"): no word edge is needed around them
THAI_MONEY_WORDS = "|".join(re.escape(p.replace(" ", "")) for p in LEX.phrases("currency_words")
                            if LEX.UNSPACED.search(p)) or "(?!x)x"
CURRENCY_SYMBOLS = "฿$€£¥₹"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
THAI_SCALES = {"สิบ": 10, "ร้อย": 100, "พัน": 1_000, "หมื่น": 10_000, "แสน": 100_000, "ล้าน": 1_000_000}
THAI_DIGITS = {"ศูนย์": 0, "หนึ่ง": 1, "เอ็ด": 1, "นึง": 1, "สอง": 2, "ยี่": 2, "สาม": 3, "สี่": 4, "ห้า": 5,
               "หก": 6, "เจ็ด": 7, "แปด": 8, "เก้า": 9}
THAI_HALF = "ครึ่ง"
THAI_NUMBER_PARTS = "|".join(sorted([*THAI_DIGITS, *THAI_SCALES, THAI_HALF], key=len, reverse=True))
# a Thai scale after digits, and the number words that may follow it ("1.5 หมื่น", "2 พันห้า"); not the words
# that start with one ("พันธุ์", "แสนดี", "ล้านนา")
THAI_SCALE_SUFFIX = rf"(?:พัน(?!ธ)|หมื่น|แสน(?!ดี|สวย)|ล้าน(?!นา))(?:{THAI_NUMBER_PARTS})*"
_END = r"(?![0-9A-Za-z_])"  # the end of a number or suffix: no Latin letter or digit follows (Thai may)
MONEY = re.compile(
    rf"(?:(?P<sym>[{CURRENCY_SYMBOLS}])|\b(?P<pre>(?i:{CURRENCY_WORDS}))\b|(?P<thpre>{THAI_MONEY_WORDS}))?\s?"
    rf"(?P<num>{_NUM})\s?"
    rf"(?:(?P<suf>k|K|m|M|thousand|grand|million|mil){_END}|(?P<thsuf>{THAI_SCALE_SUFFIX})|{_END})"
    rf"(?:\s?(?P<cur>(?i:{CURRENCY_WORDS})){_END})?",
)
RANGE = re.compile(
    rf"(?P<a>{_NUM})\s?(?P<sa>k|m)?\s?(?:-|–|to|and)\s?[{CURRENCY_SYMBOLS}]?(?P<b>{_NUM})\s?(?P<sb>k|m|thousand)?\b",
    re.I,
)
MULT = {"k": 1e3, "thousand": 1e3, "grand": 1e3, "m": 1e6, "million": 1e6, "mil": 1e6}


@dataclass(frozen=True)
class Amount:
    """A number found in text; ``money`` when it carried a currency or a k/m suffix."""

    value: float
    money: bool
    start: int
    end: int


def _value(num: str, suffix: str | None) -> float:
    val = float(num.replace(",", ""))
    if suffix and LEX.UNSPACED.match(suffix):  # "1.5 หมื่น", "2 พันห้า"
        parts = _thai_parts(suffix)
        found = thai_number(parts, val) if parts else None
        return found if found is not None else val
    return val * MULT.get((suffix or "").lower(), 1)


def amounts(text: str) -> list[Amount]:
    """Every number in a text, with k/m suffixes and currency applied."""
    return list(_amounts(text))


@lru_cache(maxsize=4096)
def _amounts(text: str) -> tuple[Amount, ...]:
    if not any(ch.isdigit() for ch in text):  # every amount has digits (the slow pattern need not look)
        return ()
    out = []
    for m in MONEY.finditer(text):
        ns = m.start("num")
        before = text[max(0, ns - 1) : ns]
        if before and (_id_letter(before) or before in "-_/"):  # part of an id like LST123 or G-502
            continue
        ne = m.end("num")
        after = text[ne : ne + 1]
        suffix = m.group("suf") or m.group("thsuf")
        if after and (_id_letter(after) or after in "-_/") and not suffix:
            continue
        money = bool(m.group("sym") or m.group("pre") or m.group("thpre") or suffix or m.group("cur"))
        start = next((m.start(g) for g in ("sym", "pre", "thpre") if m.group(g)), ns)
        end = max(m.end(g) for g in ("num", "suf", "thsuf", "cur") if m.group(g))
        out.append(Amount(_value(m.group("num"), suffix), money, start, end))
    return tuple(out)


def _id_letter(char: str) -> bool:
    """A letter that makes a number next to it part of an id ("LST123"); Thai is written without spaces,
    so a Thai word right before or after a number ("งบ15000บาท") leaves it a number."""
    return char.isalpha() and not LEX.UNSPACED.match(char)


def money_range(text: str) -> tuple[float, float] | None:
    """A range like ``30-40k`` or ``30k to 40k`` (the suffix of the end applies to both)."""
    m = RANGE.search(text)
    if not m:
        return None
    sb = m.group("sb")
    sa = m.group("sa") or sb
    a, b = _value(m.group("a"), sa), _value(m.group("b"), sb)
    return (min(a, b), max(a, b)) if a != b else None


def number_forms(text: str) -> set[float]:
    """All numbers a text states, normalised (for the grounding check)."""
    found = {round(a.value, 2) for a in amounts(text)}
    rng = money_range(text)
    if rng:
        found |= {round(rng[0], 2), round(rng[1], 2)}
    return found


def format_money(value: float, currency: str = "") -> str:
    """``1500`` -> ``฿1,500`` for THB, ``1,500 USD`` otherwise."""
    txt = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    symbols = {"THB": "฿", "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}
    sym = symbols.get(currency.upper())
    if sym:
        return f"{sym}{txt}"
    return f"{txt} {currency}".strip()


# ---------------------------------------------------------------- dialogue acts

L0, L1 = r"(?<![\w\u0E00-\u0E7F])", r"(?![\w\u0E00-\u0E7F])"  # word edges that also hold for Thai


def _lex(key: str, *, start: bool = False, end: bool = False) -> re.Pattern[str]:
    """A lexicon list (core/language/lexicons/*.yaml, every language) as a pattern: anywhere, at the start, or at
    the end (before closing punctuation)."""
    body = f"({LEX.alternation(key)})" if LEX.phrases(key) else r"(?!x)x"
    tail = r"[\s?.!,]*$" if end else L1
    return re.compile(("^" if start else L0) + body + tail, re.I)


QUESTION_START = re.compile(_lex("question_start", start=True).pattern + r"(?!['’]t\b)", re.I)  # "can't log in"
QUESTION_INSIDE = _lex("question_inside")
PARTICLES = rf"(?:\s*(?:{LEX.alternation('particles') or '(?!x)x'}))*"  # polite endings after a question word
TRAILING_PARTICLES = re.compile(rf"(?<![\u0E00-\u0E7F]){PARTICLES.removesuffix('*')}+[\s.!]*$")


def without_particles(text: str) -> str:
    """A value without the polite particles a Thai customer closes it with ("iPhone 13 ค่ะ" -> "iPhone 13")."""
    return TRAILING_PARTICLES.sub("", text).strip() or text


QUESTION_END = re.compile(_lex("question_end", end=True).pattern.replace(r"[\s?.!,]*$", PARTICLES + r"[\s?.!,]*$"),
                          re.I)  # particles that end a question (Thai "... ไหม", "... ไหมครับ")


YES = _lex("affirm", start=True)
NO = _lex("deny", start=True)
WEAK_YES = _lex("weak_yes")
NEGATIVE = _lex("negative")
UNSURE = _lex("unsure")
SAME = _lex("same_as_before")  # accepting a remembered value offered again
LEAD_FILLER = re.compile(rf"^(?:({LEX.alternation('lead_filler')})[\s,.!]+(?=\S))+", re.I)
CANCEL = _lex("cancel")
CANCEL_ENDS = re.compile(rf"^\s*(?:[,.!;:]|$|({LEX.alternation('cancel_tail')}){L1})", re.I)
GREETING = _lex("greeting", start=True)
THANKS = _lex("thanks", start=True)
CORRECTION = _lex("correction")
GO_BACK = _lex("go_back")
INSTRUCTION = _lex("instructions")
JUDGEMENT = _lex("judgement", start=True)
WH_WORD = _lex("question_words")  # "how do I change it?" asks


def is_question(text: str) -> bool:
    """Whether a message asks something."""
    t = LEX.segment(text.strip())
    return t.endswith("?") or bool(QUESTION_START.match(t) or QUESTION_INSIDE.search(t) or QUESTION_END.search(t))


def yes_no(text: str) -> bool | None:
    """True for yes, False for no, None when neither (or when the customer is unsure).

    An explicit yes/no at the start decides; otherwise a negation ("I lost access to it")
    means no and a plain affirmation ("I still have it") means yes.
    """
    t = LEAD_FILLER.sub("", LEX.segment(text.strip().lower()))
    first, _, rest = t.partition(". ")
    if rest and len(words(first)) <= 2 and not (YES.match(first) or NO.match(first)):  # "OMG. Yes, thank you!"
        t = LEAD_FILLER.sub("", rest.strip())
    if UNSURE.search(t) or is_question(t):
        return None
    if NO.match(t):
        return False
    if YES.match(t):
        return True
    if NEGATIVE.search(t):
        return False
    if WEAK_YES.search(t):
        return True
    return None


def is_go_back(text: str) -> bool:
    """Whether the customer asks to return to an earlier step ("I gave the wrong id", "go back")."""
    t = text.strip()
    if not GO_BACK.search(t):
        return False
    return not is_question(t) or not WH_WORD.search(t)


def is_cancel(text: str) -> bool:
    """Whether the customer abandons the current request ("never mind", "cancel that"); not a story
    about cancelling ("after I tried to cancel it")."""
    return cancel_phrase(text) is not None


def cancel_phrase(text: str) -> str | None:
    """The words with which the customer abandons the request: a cancel phrase that ends what is said
    ("forget it", "cancel that, please"; not "drop it off at the store") and is not a story."""
    text = LEX.segment(text)
    return next((m.group(0) for m in CANCEL.finditer(text)
                 if not NARRATED.search(text[: m.start()]) and CANCEL_ENDS.match(text[m.end():])), None)


NARRATED = re.compile(_lex("narrated").pattern.removesuffix(L1) + r"\s+$", re.I)


def is_greeting(text: str) -> bool:
    """A greeting with little else in it."""
    t = LEX.segment(text.strip())
    return bool(GREETING.match(t)) and len(words(t)) <= 4 and len(t.split()) <= 6


def is_thanks(text: str) -> bool:
    """A thank-you with little else in it, or a short message that thanks and asks nothing
    ("Awesome! I can buy a lot more beer, thank you!")."""
    t = LEX.segment(text.strip())
    if THANKS.match(t) and len(words(t)) <= 5:
        return True
    return bool(THANKS_ANYWHERE.search(t)) and len(words(t)) <= 15 and not is_question(t) and not is_request(t)


@lru_cache(maxsize=65536)  # a message's words are compared with the same vocabulary every turn
def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def alike(a: str, b: str, at_least: float) -> bool:
    """Whether two texts' character similarity (0-1, case ignored: for typos) is at least ``at_least``; texts
    whose lengths alone rule it out (the ratio is at most twice the shorter length over both) are not
    compared."""
    a, b = a.lower(), b.lower()
    if a and b and 2 * min(len(a), len(b)) < at_least * (len(a) + len(b)):
        return False
    return _similar(a, b) >= at_least


HOSTILE = _lex("hostile")


def is_hostile(text: str) -> bool:
    """An insult or angry outburst (answered politely, never held against the flow)."""
    return bool(HOSTILE.search(LEX.segment(text)))


def _correction(word: str, lexicon: set[str] | frozenset[str]) -> str:
    """The lexicon word a word is a near-miss of (a typo), else the word itself."""
    if isinstance(lexicon, frozenset):
        return _cached_correction(word, lexicon)
    return _find_correction(word, lexicon)


@lru_cache(maxsize=65536)
def _cached_correction(word: str, lexicon: frozenset[str]) -> str:
    """A fixed lexicon's corrections, remembered (a word's near-misses cost a scan of the lexicon)."""
    return _find_correction(word, lexicon)


def _find_correction(word: str, lexicon: set[str] | frozenset[str]) -> str:
    if word in lexicon or word in STOPWORDS or len(word) < 3 or not word.isalpha():
        return word
    by_length = _by_length(lexicon) if isinstance(lexicon, frozenset) else _lengths(lexicon)
    size = len(word)
    if size >= 4:  # a ratio of 0.8 needs lengths within 2/3 and 3/2 of each other: no other word can reach it
        near = difflib.get_close_matches(word, [w for n in range(size * 2 // 3, size * 3 // 2 + 2)
                                                for w in by_length.get(n, ())], n=1, cutoff=0.8)
        if near:
            return near[0]
    slips = sorted(w for n in (size, size + 1) for w in by_length.get(n, ()) if is_slip(word, w))
    return slips[0] if len(slips) == 1 else word


def _lengths(lexicon: set[str] | frozenset[str]) -> dict[int, tuple[str, ...]]:
    """A lexicon's words by their length."""
    out: dict[int, list[str]] = {}
    for w in lexicon:
        out.setdefault(len(w), []).append(w)
    return {n: tuple(ws) for n, ws in out.items()}


@lru_cache(maxsize=64)
def _by_length(lexicon: frozenset[str]) -> dict[int, tuple[str, ...]]:
    return _lengths(lexicon)


def is_slip(typed: str, word: str) -> bool:
    """Whether ``typed`` is ``word`` with one letter dropped or two neighbours swapped ("hve", "lsot").
    A three-letter word only counts as a slip when the dropped letter is a vowel ("lot" is no "lost")."""
    if len(word) == len(typed) + 1 and len(typed) >= 3:
        return any(word[:i] + word[i + 1:] == typed and (len(typed) > 3 or word[i] in "aeiou")
                   for i in range(len(word)))
    if len(word) == len(typed) >= 4:
        diff = [i for i in range(len(word)) if word[i] != typed[i]]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == typed[diff[1]] \
            and word[diff[1]] == typed[diff[0]]
    return False


def correct_spelling(text: str, lexicon: set[str] | frozenset[str]) -> str:
    """Replace words that are near-misses of lexicon words (typos) by those words (lower-cased words out)."""
    return " ".join(_correction(w, lexicon) for w in words(text))


def correct_typos(text: str, lexicon: set[str] | frozenset[str]) -> str:
    """The text as written, with only its misspelt words replaced (case, ids and punctuation kept)."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        fixed = _correction(word.lower(), lexicon)
        return word if fixed == word.lower() else fixed

    return WORD.sub(fix, text)


# ---------------------------------------------------------------- closing, inability, times

# a request anywhere ("could you ..."), or a verb of asking opening a sentence ("Okay, go ahead and book it")
REQUEST = re.compile(_lex("request").pattern + rf"|(^|[.!?]\s+)(({LEX.alternation('request_lead')}),?\s+)*"
                     rf"({LEX.alternation('request_verbs')}){L1}", re.I)
THANKS_ANYWHERE = _lex("thanks_anywhere")
FAREWELL = _lex("farewell")
PERSON = _lex("person")
DECLINE_MORE = _lex("decline_more", start=True)
UNABLE = _lex("unable")
CLOCK = re.compile(r"\b(\d{1,2})(?:[:.]00)?\s*([ap])\.?\s*m\b\.?", re.I)


def is_farewell(text: str) -> bool:
    """The customer closes the conversation ("No thanks, goodbye!", "that's all", "I'm good")."""
    t = LEX.segment(text.strip())
    return bool(FAREWELL.search(t)) and not t.endswith("?") and len(words(t)) <= 20


def asks_for_person(text: str) -> str:
    """The words asking for a person instead of the agent ("can I talk to a real person?"), else ''."""
    found = PERSON.search(LEX.segment(text.strip()))
    return found.group(0) if found else ""


def declines_more(text: str) -> bool:
    """A "no" to "anything else?" ("no thanks", "nope, that's all")."""
    t = LEAD_FILLER.sub("", text.strip())
    return bool(DECLINE_MORE.match(t)) and not is_question(t) and len(words(t)) <= 12


def is_judgement(text: str) -> bool:
    """Whether words in a value's place judge the value instead of giving one ("wrong", "a typo")."""
    t = LEX.segment(text.strip(" .!,'\"").lower())
    m = JUDGEMENT.match(t)
    return m is not None and not t[m.end():].strip(" .!,")


def is_unable(text: str) -> bool:
    """The customer says they cannot give what was asked ("I've forgotten the passcode", "I don't have it on me")."""
    return bool(UNABLE.search(LEX.segment(text)))


def normalise_clock(text: str) -> str:
    """Clock times in one spelling: "7pm", "7:00 p.m." and "7 PM" all become "7 pm"."""
    return CLOCK.sub(lambda m: f"{int(m.group(1))} {m.group(2).lower()}m", text)


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
RELATIVE_DAY = re.compile(r"\b(?:(the )?day after (tomorrow|tmrw)|tomorrow|tomorow|tmrw|tommorow|tommorrow|today|"
                          r"tonight|this (morning|afternoon|evening))(?:'?s)?\b", re.I)


def name_days(text: str, today: date) -> str:
    """Relative days also as weekday names: "tomorrow" on a Friday reads "tomorrow (Saturday)"."""

    def day(m: re.Match[str]) -> str:
        said = m.group(0).lower()
        ahead = 2 if "after" in said else 1 if said.startswith("tom") or said.startswith("tmrw") else 0
        return f"{m.group(0)} ({WEEKDAYS[(today.weekday() + ahead) % 7]})"

    if any(re.search(rf"\b{d}\b", text, re.I) for d in WEEKDAYS):
        return text  # the customer named the day themselves
    return RELATIVE_DAY.sub(day, text)


UNITS = {w: i for lx in LEX.lexicons() for i, w in enumerate(lx.get("units"))}
TENS = {w: 10 * (i + 2) for lx in LEX.lexicons() for i, w in enumerate(lx.get("tens"))}
NUMBER_WORDS = re.compile(r"\b(?:(" + "|".join(TENS) + r")(?:[\s-]+(" + "|".join(w for w in UNITS if UNITS[w] < 10)
                          + r"))?|(" + "|".join(UNITS) + r"|a dozen|dozen))\b", re.I)


def spelled_numbers(text: str) -> str:
    """The text with numbers written in words as digits ("a thousand euros" -> "a 1000 euros", "one hundred
    and fifty" -> "150"), by text2num for the languages it reads and by :func:`thai_numbers` for Thai
    ("งบหมื่นห้า" -> "งบ 15000"); small numbers alone stay words ("one of them"). Unchanged when it holds
    none."""
    if LEX.UNSPACED.search(text):
        text = thai_numbers(text)
    if not re.search(r"[A-Za-z]", text):
        return text
    from text_to_num import alpha2digit  # imported on first use

    try:
        return alpha2digit(text, "en")
    except Exception:  # noqa: BLE001 - a text the parser cannot read keeps its words
        return text


_THAI_PART = re.compile(THAI_NUMBER_PARTS)
_DECIMAL = re.compile(r"^\d+(?:\.\d+)?$")


def _thai_parts(token: str) -> list[str] | None:
    """A word's number parts ("สิบเอ็ด" -> ["สิบ", "เอ็ด"]), or None when it is not made of them only
    ("ยี่ห้อ", "สามี")."""
    parts, at = [], 0
    while at < len(token):
        m = _THAI_PART.match(token, at)
        if m is None:
            return None
        parts.append(m.group(0))
        at = m.end()
    return parts


def thai_number(parts: list[str], lead: float | None = None) -> float | None:
    """The value of Thai number words, as people say them: the formal forms by pythainlp
    (``thaiword_to_num``: "สองพันห้าร้อย" = 2500) and the colloquial ones it does not read: a digit after a
    scale counts in the scale below ("หมื่นห้า" = 15,000, "สามพันห้า" = 3,500, "แสนสอง" = 120,000), half a
    scale ("พันครึ่ง" = 1,500), "one" after a scale says no more ("หมื่นนึง" = 10,000), and a number in
    digits before a scale ("1.5 หมื่น" = 15,000, ``lead``). None when the words make no number."""
    parts = list(parts)
    if lead is not None:  # "1.5 หมื่น", "2 พันห้า": the digits count the first scale
        if not parts or parts[0] not in THAI_SCALES:
            return None
        scale, rest = THAI_SCALES[parts[0]], parts[1:]
        head = lead * scale
        if not rest:
            return head
        if len(rest) == 1 and scale >= 1000 and (rest[0] in THAI_DIGITS or rest[0] == THAI_HALF):
            digit = 5 if rest[0] == THAI_HALF else THAI_DIGITS[rest[0]]
            return head + digit * scale / 10
        tail = thai_number(rest)
        return None if tail is None else head + tail
    if len(parts) >= 2 and parts[-2] in THAI_SCALES and THAI_SCALES[parts[-2]] >= 1000:
        below = _scale_below(parts[-2])
        if parts[-1] == THAI_HALF:
            parts[-1:] = ["ห้า", below]
        elif parts[-1] in ("นึง", "หนึ่ง"):
            parts = parts[:-1]
        elif parts[-1] in THAI_DIGITS and below:
            parts.append(below)
    elif len(parts) >= 2 and parts[-1] == "นึง" and parts[-2] in THAI_SCALES:
        parts = parts[:-1]
    if THAI_HALF in parts:
        return None
    from pythainlp.util import thaiword_to_num  # imported on first use

    try:
        return float(thaiword_to_num("".join(parts)))
    except Exception:  # noqa: BLE001 - words pythainlp cannot read are no number
        return None


def _scale_below(scale: str) -> str:
    ordered = sorted(THAI_SCALES, key=THAI_SCALES.__getitem__)
    i = ordered.index(scale)
    return ordered[i - 1] if i > 0 else ""


def thai_numbers(text: str) -> str:
    """Thai number words as digits ("งบหมื่นห้าบาท" -> "งบ 15000 บาท", "1.5 หมื่น" -> "15000"); a lone digit
    word stays a word ("อันที่สอง", "สองเครื่อง"): only a number of ten or more, or one with a scale."""
    from core.language.lexicons.thai_words import thai_tokens  # loaded only when a message needs it

    tokens = thai_tokens(text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        lead = float(tokens[i]) if _DECIMAL.match(tokens[i]) else None
        j = i + 1 if lead is not None else i
        if lead is not None and j < len(tokens) and not tokens[j].strip():
            j += 1  # "1.5 หมื่น"
        parts: list[str] = []
        end = k = j
        while k < len(tokens):
            if not tokens[k].strip() and parts:  # "หมื่น ห้า": words of one number may stand apart
                k += 1
                continue
            found = _thai_parts(tokens[k])
            if found is None:
                break
            parts += found
            k += 1
            end = k
        value = thai_number(parts, lead) if parts and (lead is None or parts[0] in THAI_SCALES) else None
        small = value is not None and lead is None and value < 10 and not any(p in THAI_SCALES for p in parts)
        if value is None or small:
            out.append(tokens[i])
            i += 1
            continue
        out.append(f" {int(value) if float(value).is_integer() else value} ")
        i = end
    return re.sub(r" {2,}", " ", "".join(out)).strip()


def word_number(text: str) -> int | None:
    """The first number written in words ("twenty one people" -> 21, "just two" -> 2), or None."""
    m = NUMBER_WORDS.search(text)
    if not m:
        return None
    if m.group(1):
        return TENS[m.group(1).lower()] + (UNITS[m.group(2).lower()] if m.group(2) else 0)
    word = m.group(3).lower()
    return 12 if "dozen" in word else UNITS[word]


NOW = _lex("now")


def wants_it_now(text: str) -> bool:
    """The customer wants a new request handled before the current one ("can you look up my savings first?",
    "actually, let's check the weather"): a change of mind, not a request for later."""
    return bool(NOW.search(text))


OFFERS_MORE = _lex("offers_more")
REFERS_BACK = _lex("refers_back")


def offers_more(text: str) -> bool:
    """Whether a message offers more help ("Is there anything else I can do for you?")."""
    return bool(OFFERS_MORE.search(text))


CLAUSE_BREAK = re.compile(rf"(?<=[.!?;])\s+|\s+(?:{LEX.alternation('clause_joiners')})\s+"
                          rf"|,\s+(?:{LEX.alternation('clause_comma_joiners') or '(?!x)x'})\s+"
                          rf"|,\s+(?=(?:{LEX.alternation('clause_request_starts') or '(?!x)x'}){L1})", re.I)


_ALSO = rf"(?:,\s*)?(?:{LEX.alternation('list_joiners')}|{LEX.alternation('alternative_joiners') or '(?!x)x'})"
EXCLUDED = re.compile(_lex("excludes").pattern + rf"\s+(?:[\w'-]+\s+){{0,2}}(?:{_ALSO}\s+(?:[\w'-]+\s+){{0,2}})*$",
                      re.I)  # "not the Corsair or the " before "Razer": a list ruled out together


def excluded(before: str) -> int | None:
    """Where the words that rule out the option after ``before`` start ("not on the " before "West side"),
    or None when nothing rules it out."""
    m = EXCLUDED.search(before)
    return m.start() if m else None


RULED_OUT = re.compile(rf"[,;]?\s*\b(?:{LEX.alternation('excludes')})\b[^,;.!?]*", re.I)


def ruled_out(text: str) -> str:
    """A correction without what it rules out: "I meant 80 euros, not 95" -> "I meant 80 euros" (the ruled-out
    words replaced by spaces, so positions stay)."""
    return RULED_OUT.sub(lambda m: " " * len(m.group(0)), text)


REPLACES = _lex("replaces")


def replaces(text: str) -> bool:
    """Whether a request comes instead of the running one ("forget the return, recommend a mouse instead")."""
    return bool(REPLACES.search(LEX.segment(text)))


NOT_WANTED = re.compile(rf"\b(?:{LEX.alternation('not_wanted') or '(?!x)x'})\b[^,;.!?]*", re.I)


def only_declines(text: str) -> bool:
    """Whether a message does nothing but turn a wish down ("nah, I don't want the upgrade"): with what
    each refusal covers taken out, no word asks for anything."""
    t = LEX.segment(text)
    rest = NOT_WANTED.sub(" ", t)
    if rest == t:
        return False
    rest = NO.sub(" ", LEAD_FILLER.sub("", rest.strip()))
    return not [w for w in tokens(rest) if w not in STOPWORDS and w not in GENERAL_WORDS]


def is_request(text: str) -> bool:
    """Whether a message asks for something ("could you ...", "I'd like ...", "Okay, go ahead and book it")."""
    return bool(REQUEST.search(LEX.segment(text)))


LIST_BREAK = re.compile(r"\s*,\s*(?:(?:" + (LEX.alternation("list_joiners") or "(?!x)x") + r")\s+)?|\s+(?:"
                        + (LEX.alternation("list_joiners") or "(?!x)x") + r")\s+", re.I)


def list_items(phrase: str) -> list[str]:
    """The items of a listed phrase ("your name, email and phone" -> ["your name", "email", "phone"])."""
    return [p.strip() for p in LIST_BREAK.split(phrase.strip()) if p and p.strip()]


def join_items(items: list[str], like: str) -> str:
    """Items joined as the listed phrase ``like`` joins its own ("a", "a and b", "a, b and c")."""
    joints = [j.strip(" ,") for j in LIST_BREAK.findall(like) if j.strip(" ,")]
    joiner = joints[-1] if joints else ","
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {joiner} {items[-1]}"


def clauses(text: str, min_tokens: int = 2) -> list[str]:
    """The parts of a message that could each carry a request ("Great! Although I was expecting more.
    Let's book a table" -> ["Although I was expecting more.", "Let's book a table"], parts of fewer than
    ``min_tokens`` words left out); a message of one part gives an empty list."""
    raw = [p.strip() for p in CLAUSE_BREAK.split(LEX.segment(text)) if p and p.strip()]
    parts = [p for p in raw if len(tokens(p)) >= min_tokens]
    return parts if len(raw) > 1 else []


_REQUEST_STARTS = r"(?=\s(?:" + (LEX.alternation("clause_request_starts") or "(?!x)x") + r")" + L1 + ")"
# inside a sentence the part runs to its end or the next comma ("... my account to see if I can cover it")
SUBORDINATE = re.compile(r"(?<=[^.!?\s]\s)" + _lex("subordinate").pattern + r"[^,;.!?]*[,;.!?]?", re.I)
# at its start, to a comma or a request ("Before we do that, ...", "Before we do that let me ..."); with
# neither, the sentence is left whole ("Before I do that I ought to look at my statement.")
FRONTED = re.compile(r"(?:^|(?<=[.!?]))\s*" + _lex("subordinate").pattern
                     + r"(?:(?!" + _REQUEST_STARTS + r")[^,;.!?])*(?:,|" + _REQUEST_STARTS + ")", re.I)


def statement_and_question(text: str) -> tuple[str, str]:
    """A statement and the question it runs into after a comma ("the brakes squeak, how much is a service?"
    -> ("the brakes squeak", "how much is a service?")); ("", text) when the message is not of that form."""
    t = LEX.segment(text.strip())
    for m in re.finditer(r"[,;]\s+", t):
        head, tail = t[:m.start()].strip(), t[m.end():].strip()
        if len(tokens(head)) >= 2 and is_question(tail) and QUESTION_START.match(tail) and not is_question(head):
            return head, tail
    return "", text


def main_clause(text: str) -> str:
    """The message without the parts that say why or when rather than what is asked ("I need to check my
    statement to see if I can afford the trip" -> "I need to look at my statement"; "Before I head out to eat, I
    want to know my balance" -> "I want to know my balance"): each runs from its opening words
    (``subordinate`` in the language files) to the next comma, request ("let me ...") or end of sentence."""
    segmented = LEX.segment(text)
    return re.sub(r"\s+", " ", SUBORDINATE.sub(" ", FRONTED.sub(" ", segmented))).strip()


GENERAL_VERBS = frozenset(LEX.segment(p).lower() for p in LEX.phrases("general_verbs"))
HEDGES = frozenset(w for phrase in LEX.phrases("hedges") for w in LEX.segment(phrase).lower().split())
ITEM_QUESTION = _lex("item_questions")


def asks_about_item(text: str) -> bool:
    """Whether a message asks about an offered item (its stock or price) rather than picking one."""
    return bool(ITEM_QUESTION.search(LEX.segment(text)))


WHEN = _lex("asks_when")


def asks_when(text: str) -> bool:
    """Whether a message asks when (or on which day) something will be the case ("When will it be
    nice again?", "what day will it be sunny?")."""
    return bool(WHEN.search(text)) and (is_question(text) or is_request(text))


class Aliases:
    """A store's words for the words its customers use (store.yaml ``aliases:``), applied to a message
    before it is read: whole words only, Thai once segmented."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = {LEX.segment(k).lower(): v for k, v in mapping.items()}
        keys = sorted(self.mapping, key=len, reverse=True)
        self.pattern = re.compile(L0 + "(" + "|".join(r"\s+".join(map(re.escape, k.split())) for k in keys) + ")" + L1,
                                  re.I) if keys else None

    def apply(self, text: str) -> str:
        """The message with each alias replaced by the store's word (unchanged when none is said)."""
        if self.pattern is None:
            return text
        spaced = LEX.segment(text)
        if not self.pattern.search(spaced):
            return text
        return self.pattern.sub(lambda m: self.mapping.get(" ".join(m.group(0).lower().split()), m.group(0)), spaced)


def flat_hint(hint: str) -> str:
    """A hint as one phrase: its own parentheses flattened ("how many bags (one if unsure)" -> "how many
    bags, one if unsure"), so it can stand inside a sentence or a pair of parentheses."""
    flat = re.sub(r"\s*\(([^()]*)\)", r", \1", hint.strip())
    return re.sub(r"\s+", " ", flat).strip(" ,.")
