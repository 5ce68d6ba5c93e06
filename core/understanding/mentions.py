"""Where a message names things: a listed option or a store word (typos allowed), a person's name, an account
handle, a value after its label, a route's places, the corrected value in "no, I meant ..."."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from core.language import lexicons as LEX
from core.language import text as T
from core.workspace.kinds import example_frame
from core.workspace.slots import GENERIC_NAME_WORDS, HANDLE


def find_vocab(message: str, vocab: list[str]) -> str | None:
    """The vocabulary entry a message names (plurals and small typos allowed), longest first; else the
    first entry of one word a word of the message misspells."""
    low = " " + " ".join(T.words(message)) + " "
    entries = tuple(vocab)
    longest_first, one_word = _vocab_forms(entries)
    for entry, forms in longest_first:
        if any(f" {form} " in low for form in forms):
            return entry
    first = min((i for w in T.words(message) if w not in T.STOPWORDS
                 if (i := _first_misspelt(w, entries)) is not None), default=None)
    return one_word[first][0] if first is not None else None


@lru_cache(maxsize=256)
def _vocab_forms(vocab: tuple[str, ...]) -> tuple[tuple[tuple[str, frozenset[str]], ...],
                                                  tuple[tuple[str, frozenset[str]], ...]]:
    """A vocabulary's entries with their spellings: longest first, and those of one word in their order."""
    forms = {entry: frozenset(T.plural_forms(entry)) for entry in vocab}
    return (tuple((e, forms[e]) for e in sorted(vocab, key=len, reverse=True)),
            tuple((e, forms[e]) for e in vocab if " " not in e))


@lru_cache(maxsize=65536)  # a word is compared with a vocabulary once, not every turn it is said
def _first_misspelt(word: str, vocab: tuple[str, ...]) -> int | None:
    """The index among the one-word entries of the first one ``word`` is a typo or slip of."""
    for i, (_entry, forms) in enumerate(_vocab_forms(vocab)[1]):
        if (len(word) >= 5 and any(T.alike(word, f, 0.84) for f in forms)) or any(T.is_slip(word, f) for f in forms):
            return i
    return None


@cache
def _frames(slot: str) -> re.Pattern[str]:
    """The lead-ins and frames of a short answer to the question for ``slot`` (compiled once per slot)."""
    said = r"\s+".join(re.escape(w) for w in T.words(slot.replace("_", " ")) if w not in GENERIC_NAME_WORDS) or "x^"
    frames = "|".join(f.replace("{slot}", f"(?:{said})") for f in LEX.phrases("value_frames"))
    fillers = LEX.alternation("lead_filler")
    return re.compile(rf"^(?:(?:{fillers})\b[\s,.!]*)*(?:(?:{frames})\b[\s:,]*)?", re.I)


def correction_value(message: str) -> str | None:
    """The new value a correction gives ("sorry, I meant Spain, not Portugal" -> "Spain"): the words
    after the correction phrase, without what the customer rules out; None when nothing is left."""
    m = T.CORRECTION.search(message)
    if m is None:
        return None
    rest = message[m.end():].lstrip(" ,.:;!")
    while (more := T.CORRECTION.match(rest)) is not None:  # "actually, make it ..."
        rest = rest[more.end():].lstrip(" ,.:;!")
    rest = re.split(rf"[,;]?\s*\b(?:{LEX.alternation('excludes')})\b", rest, maxsplit=1, flags=re.I)[0]
    rest = unframed(rest.strip(" ,.:;!?"), "")
    value = rest.strip(" ,.:;!?'\"")
    return value if T.words(value) and len(T.words(value)) <= 8 and not T.is_judgement(value) else None


def framed_tail(message: str, slot: str) -> str | None:
    """The value a reply gives last, after a frame, in a clause of its own ("ok found it, it's 5521" -> "5521",
    "sorry for the wait - my pin is 2218" -> "2218"): at most four words; None when its last clause is not framed
    or the reply is one clause."""
    clauses = [c for c in re.split(r"[,;.!]\s+|\s+-\s+", message.strip().rstrip(" .!")) if c.strip()]
    if len(clauses) < 2:
        return None
    last = clauses[-1].strip()
    rest = _frames(slot).sub("", last, count=1).strip(" .!,")
    return rest if rest != last and 0 < len(T.words(rest)) <= 4 else None


def unframed(message: str, slot: str) -> str:
    """A short answer without the words around it: "sorry, it's asanders122" -> "asanders122", "my
    username is mlopez" -> "mlopez" (lead-ins and frames from the language files)."""
    text = message.strip()
    rest = _frames(slot).sub("", text, count=1).strip(" .!,")
    return rest if T.words(rest) else text
NAME_LEAD = re.compile(r"^(?:(?:yes|yeah|yep|sure|of course|ok|okay|hi|hello|hey|certainly|right)\b[\s,.!]*)*"
                       r"(?:(?:my|the) (?:full |first |last )?name(?: is|'s)|name(?: is|'s|:)|it'?s|it is|this is|"
                       r"i am|i'?m|im|call me)\s+", re.I)
NAME_SAID = re.compile(r"\b(?i:my (?:full )?name is|my name'?s|this is|i am|i'?m|call me)\s+"
                       r"([A-Z][a-z'\-]+(?:\s+[A-Z][a-z'\-]+){0,2})")
NAME_GIVEN = re.compile(r"\b(?i:it'?s|it is)\s+([A-Z][a-z'\-]+(?:\s+[A-Z][a-z'\-]+){0,2})")  # asked only
PRONOUNS = frozenset({"he", "she", "her", "his", "him", "they", "them", "their", "i", "me", "we", "us"})


def _option_pattern(option: str) -> re.Pattern[str]:
    """An option's words in order with any spacing or punctuation between ("1pm" ~ "1 pm", "Cactus-Club")."""
    ws = T.words(T.normalise_clock(option))
    return re.compile(r"(?<![\w])" + r"[\s\-_.,']*".join(re.escape(w) for w in ws) + r"(?![\w])", re.I)


def find_option(message: str, options: list[str], *, loose: bool = False, target: bool = False) -> str | None:
    """The listed option a message names, earliest in the message first ("Legume or Lucca" -> Legume).

    Exact words (spacing and clock spellings aside) first; then the initials of a multi-word option
    written in capitals ("SLC"); then the leading words of an option without its last word ("Salt
    Lake" -> "Salt Lake City", "Cactus" -> "Cactus Club") when only one option starts so; then, when
    ``loose`` (the question asked for it), a small typo of a one-word option. For a ``target`` slot (one
    holding the value wanted after a change: :func:`holds_target`), "from A to B" names B.
    """
    text = T.normalise_clock(LEX.segment(message))
    found = [(m.start(), -len(o), o) for o in options for m in _option_pattern(o).finditer(text)]
    if not found:
        found = [(m.start(), 0, o) for o in options for m in [_initials(o, text)] if m]
    if not found:
        found = _leading_words(text, options)
    chosen = [f for f in found if not _ruled_out(text, f[0], [g[0] for g in found])]  # "not moderate, a cheap one"
    if chosen:
        return (_changed_to(text, chosen) if target else None) or min(chosen)[2]
    if found or not loose:
        return None
    return _by_content_words(message, options) or find_vocab(message, options)


def holds_target(slot: str) -> bool:
    """Whether a slot's name says it holds the value wanted after a change (``new_plan``, ``target_tier``:
    ``target_words`` in the language files)."""
    words = set(re.split(r"[_\W]+", slot.lower()))
    return bool(words & {w.lower() for w in LEX.phrases("target_words")})


def _changed_to(text: str, found: list[tuple[int, int, str]]) -> str | None:
    """Of two options named as a change ("from basic up to the premium plan", "switch from monthly to
    yearly"), the one it should become: the second, when "from" (``route_from`` in the language files) opens
    the first and the words between them join a value now to a value wanted (``change_to``, with up to two
    words of its own: "up to regular economy"). None for any other mention."""
    joiners, froms = LEX.alternation("change_to"), LEX.alternation("route_from")
    if not joiners or not froms:
        return None
    spans = {(m.start(), m.end(), o) for o in {f[2] for f in found} for m in _option_pattern(o).finditer(text)}
    spans = {s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)}  # the longer
    if len(spans) != 2:
        return None
    (_, first_end, first), (second_at, _, second) = sorted(spans)
    first_at = min(spans)[0]
    if first == second or not re.search(rf"(?:{froms})\s*$", text[:first_at], re.I):
        return None
    between = text[first_end:second_at].strip(" ,")
    return second if re.fullmatch(rf"(?:{joiners})(?:\s+[\w'-]+){{0,2}}", between, re.I) else None


def option_mentions(message: str, options: list[str]) -> list[str]:
    """Every listed option a message names, in the order it names them ("from the 2nd until the
    5th" -> ["2nd", "5th"]); where two options overlap, the longer one."""
    text = T.normalise_clock(message)
    said = [(m.start(), -len(o), m.end(), o) for o in options for m in _option_pattern(o).finditer(text)]
    starts = [s[0] for s in said]
    found = sorted(s for s in said if not _ruled_out(text, s[0], starts))
    out: list[str] = []
    end = -1
    for start, _, stop, option in found:
        if start >= end:
            out.append(option)
            end = stop
    return out


def _ruled_out(text: str, at: int, mentions: list[int]) -> bool:
    """Whether the option mentioned at ``at`` is ruled out by the words just before it, with no other
    option mentioned between them ("not expensive, a cheap one": only Expensive is ruled out)."""
    start = T.excluded(text[:at])
    return start is not None and not any(start <= m < at for m in mentions)


def _by_content_words(message: str, options: list[str]) -> str | None:
    """The one option whose content words the answer all uses, in any order and with other words between
    ("I'll drop it off at the store" -> "drop off at a store")."""
    said = {T.stem(w) for w in T.tokens(message)}
    hits = [o for o in options if (need := {T.stem(w) for w in T.tokens(o)}) and need <= said]
    return hits[0] if len(hits) == 1 else None


def _initials(option: str, text: str) -> re.Match[str] | None:
    ws = [w for w in T.words(option) if w.isalpha()]
    if len(ws) < 2:
        return None
    return re.search(rf"\b{''.join(w[0] for w in ws).upper()}\b", text)


def _leading_words(text: str, options: list[str]) -> list[tuple[int, int, str]]:
    out = []
    for o in options:
        ws = [w for w in T.words(o) if w not in T.STOPWORDS]
        head = ws[:-1] if len(ws) > 1 else []
        if not head or len(" ".join(head)) < 5:
            continue
        if sum(1 for other in options if [w for w in T.words(other) if w not in T.STOPWORDS][: len(head)] == head) > 1:
            continue
        m = re.search(r"(?<![\w])" + r"\W+".join(re.escape(w) for w in head) + r"(?:'?s)?(?![\w])", text, re.I)
        if m:
            out.append((m.start(), 0, o))
    return out


def person_name(message: str, *, asked: bool) -> str | None:
    """A customer's own name: "Sure, it's Priya Raman" -> "Priya Raman". Unasked, only when the
    message says so ("my name is Odile", "I'm Tomas Ek")."""
    if not asked:
        m = NAME_SAID.search(message)
        return m.group(1) if m else None
    said = NAME_SAID.search(message) or NAME_GIVEN.search(message)  # "Sure thing, it's Priya Raman"
    if said:
        return said.group(1)
    rest = NAME_LEAD.sub("", message.strip()).strip(" .!,")
    head = re.split(r"[.!?,;:]+(?:\s|$)|\s+(?:and|but)\s+", rest, maxsplit=1)[0].strip(" .!,")
    name = head if 0 < len(T.words(head)) <= 4 else rest
    # "let me sort out my login before that" is a sentence, not a name: a name has no more than four
    # words and none of the language's function words; where the customer writes capitals, a name's
    # own words are capitalised but for short particles ("Maria de la Cruz", not "Odile Fournier speaking")
    cased = name != name.lower()  # "May Chen": capitalised words are the name's own
    plain = [w for w in re.findall(r"[^\W\d_][\w'-]*", name) if not (cased and w[0].isupper())]
    if name and len(T.words(name)) <= 4 and not set(T.words(name)) <= _not_names() \
            and not any(w.lower() in T.STOPWORDS or (cased and len(w) > 3) for w in plain if len(w) > 1):
        return name
    return capitalised_name(message)


@cache
def _not_names() -> frozenset[str]:
    """Words that are never a name: function words, interjections, yes words and greetings."""
    return T.STOPWORDS | {w for key in ("lead_filler", "affirm", "greeting") for p in LEX.phrases(key)
                          for w in p.split() if w.isalpha()}


WORD_EDGES = ".,!?;:\"'“”‘’()[]"


def prose_words(message: str) -> list[str]:
    """The message's words as prose writes them, punctuation at their edges aside; a token written like code
    or a command ("/SetSlot(x=1)", "ab_cd", "x=1") stands as one sign that is no word ("/")."""
    out: list[str] = []
    for token in message.split():
        w = token.strip(WORD_EDGES)
        out.append(w if re.fullmatch(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*", w) else "/")
    return out


def capitalised_name(message: str) -> str | None:
    """The first run of one to four capitalised words that are not the language's function words or
    interjections: "Odile Fournier speaking" -> "Odile Fournier", "Zofia Nowak, spelled with a Z" -> "Zofia Nowak".
    None in a message written all in lower case."""
    skip = _not_names()
    run: list[str] = []
    for w in prose_words(message):
        if w[0].isupper() and w.lower() not in skip and len(w) > 1:
            run.append(w)
        elif run:
            break
    return " ".join(run) if 0 < len(run) <= 4 else None


@lru_cache(maxsize=256)
def _frame(example: str) -> re.Pattern[str] | None:
    return example_frame(example)


def worded_like(message: str, example: str) -> str | None:
    """The one part of a message worded like a free-text slot's example ("charge my amex ending in 0051" after
    "e.g. the visa ending in 7447": "amex ending in 0051"; :func:`core.workspace.kinds.example_frame`); None
    when there is none, or several."""
    frame = _frame(example) if example else None
    found = {m.group(0) for m in frame.finditer(message)} if frame is not None else set()
    return found.pop() if len(found) == 1 else None


@cache
def _echoes() -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
    """The language files' yes/no questions and the statements that answer them (``yes_no_echo``), compiled."""
    out = []
    for pair in LEX.phrases("yes_no_echo"):
        asked, _, stated = pair.partition("=>")
        out.append((re.compile(rf"(?<![\w'])(?:{asked.strip()})(?![\w'])", re.I),
                    re.compile(rf"(?<![\w'])(?:{stated.strip()})(?![\w'])", re.I)))
    return out


def _predicate(after: str) -> tuple[str, bool] | None:
    """The first word of substance in the few words after an opening, and whether a negative stands before it
    ("not", "never", "no", "n't"; the language files' ``negative``): "currently travelling" -> ("travelling",
    False), "n't got the receipt" -> ("receipt", True)."""
    adverbs = {w for p in LEX.phrases("statement_adverbs") for w in p.lower().split()}
    negated = False
    for word in re.findall(r"[^\W\d_][\w'-]*|n't", after.lower())[:5]:
        if word in ("n't", "not", "never", "no") or word.endswith("n't"):
            negated = True
            continue
        if word in adverbs or word in T.STOPWORDS or word in ("got",):
            continue
        return word, negated
    return None


def _same_word(a: str, b: str) -> bool:
    """Two spellings of one word ("traveling", "travelling"; "restarted", "restart")."""
    sa, sb = T.stem(a), T.stem(b)
    undouble = re.compile(r"(\w)\1$")
    return sa == sb or undouble.sub(r"\1", sa) == undouble.sub(r"\1", sb)


def stated_answer(question: str, message: str) -> bool | None:
    """The answer a statement gives to a yes/no question before it is asked: "I'm staying overseas" to "Are
    you staying outside your usual area?" is yes, "I haven't restarted it" to "Have you restarted the phone?"
    is no (``yes_no_echo`` in the language files: the question's opening, the statement's, and the same word of
    substance after both). None when the message states nothing about the question's predicate."""
    for asked, stated in _echoes():
        q = asked.search(question)
        wanted = _predicate(question[q.end():]) if q else None
        if wanted is None:
            continue
        for m in stated.finditer(message):
            said = _predicate(message[m.end():])
            if said is not None and _same_word(said[0], wanted[0]):
                opened_negative = re.search(r"n'?t\b|\bnot\b", m.group(0), re.I) is not None  # "I haven't", "I don't have"
                return not (said[1] or opened_negative)
    return None


@cache
def _street_pattern() -> re.Pattern[str] | None:
    """A street address as written in a sentence: a house number, up to four words of the street's name and a
    street type (``street_types`` in the language files), then a unit, a city, a state and a zip code when
    given (those written with capitals, so "..., and my phone is" is no city)."""
    types = LEX.alternation("street_types")
    if not types:
        return None
    street = rf"(?<![\w#/-])\d{{1,6}}[a-z]?(?:\s+[a-z0-9][\w'-]*){{0,4}}?\s+(?:{types})(?![\w'])\.?"
    unit = r"(?:,?\s+(?:apt|apartment|suite|ste|unit|flat|#)\.?\s*[\w-]+)?"
    place = r"(?-i:(?:,\s*[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3})?(?:,?\s+[A-Z]{2}\b)?)(?:,?\s+\d{5}(?:-\d{4})?\b)?"
    return re.compile(rf"(?P<street>{street}){unit}{place}", re.I)


def street_addresses(message: str) -> list[tuple[int, str, str]]:
    """The street addresses a message gives, in order: where each starts, its street line ("4160 Elm St") and
    the whole address as written ("101 Highway, Springfield, IL 62701")."""
    pattern = _street_pattern()
    found = []
    for m in pattern.finditer(message) if pattern is not None else ():
        street = m.group("street").rstrip(".")
        named = street.split()[1:-1]  # the street's name: words of its own ("order 3 items by the way" is none)
        if any(w.lower() in T.STOPWORDS for w in named) or (not named and not street.split()[-1][:1].isupper()):
            continue
        whole = m.group(0).rstrip(" .,")
        found.append((m.start(), street, whole if len(whole) > len(street) else street))
    return found


def address_side(message: str, at: int, said: str = "") -> str:
    """Whether the address ``said`` at ``at`` is the one held now ("the old one is 4160 Elm St": "current") or the
    one wanted ("ship it to 12 Oak Rd", "my new address is ...", "... 12 Oak Rd instead": "new"), from the words
    just before it in its sentence, or an "instead" right after it; "" when they say neither."""
    before = " ".join(re.split(r"[.!?;]\s|,\s*(?:and|but)\s", message[:at])[-1].lower().split()[-6:])
    current = LEX.alternation("current_words")
    if current and re.search(rf"\b(?:{current})\b", before):
        return "current"
    new = {w.lower() for w in LEX.phrases("target_words")}
    after = message[at + len(said):].lower().split()[:2]
    if set(re.findall(r"[a-z]+", before)) & new or re.search(r"\bto\s*$", before) or "instead" in " ".join(after):
        return "new"
    return ""


def holds_current(slot: str) -> bool:
    """Whether a slot's name says it holds the value held now (``current_address``, ``old_email``)."""
    words = " ".join(re.split(r"[_\W]+", slot.lower()))
    current = LEX.alternation("current_words")
    return bool(current) and re.search(rf"\b(?:{current})\b", words) is not None


def asked_verb(question: str) -> str | None:
    """The verb a question asks the thing of ("which items to return?" -> "return"; ``object_asks`` in the
    language files); None when it asks no such thing."""
    leads = LEX.alternation("object_asks")
    m = re.search(rf"(?<![\w'])(?:{leads})\s+([a-z][a-z'-]+)", question, re.I) if leads else None
    return m.group(1).lower() if m else None


def named_object(message: str, verb: str, *, instead: bool = False) -> str | None:
    """The thing a request names after a verb ("I want to return the garden chair, it's broken" -> "the garden
    chair" for "return"): a determiner and up to six words, to the end of the clause or a word that ends it
    (``object_stops``). With ``instead``, the thing wanted in its place ("exchange the red mug for the blue one"
    -> "the blue one": ``swap_joiners``). None when the verb names no such thing."""
    starts, stops = LEX.alternation("object_starts"), LEX.alternation("object_stops")
    if not starts or not stops:
        return None
    thing = rf"((?:{starts})\s+[\w'-]+(?:\s+(?!(?:{stops})\b)[\w'-]+){{0,5}}?)(?=\s+(?:{stops})\b|\s*[,.;!?]|$)"
    m = re.search(rf"(?<![\w']){re.escape(verb)}\w*\s+{thing}", message, re.I)
    if m is None:
        return None
    if not instead:
        return m.group(1)
    joiners = LEX.alternation("swap_joiners")
    rest = message[m.end(1):]
    wanted = re.match(rf"\s+(?:{joiners})\s+((?:{starts})\s+[^,.;!?]+?)\s*(?:[,.;!?]|$)", rest, re.I) if joiners else None
    return wanted.group(1) if wanted else None


AT_HANDLE = re.compile(r"(?<![\w.@])@[^\W_][\w.]*[^\W_]|(?<![\w.@])@[^\W_]")


def at_handle(message: str) -> str | None:
    """The one handle a message writes with its sign ("remove @kim.sol please"), never part of an email
    address; None when it writes none or several."""
    found = list(dict.fromkeys(AT_HANDLE.findall(message)))
    return found[0] if len(found) == 1 else None


def handle_value(message: str, slot: str) -> str | None:
    """The account name in an answer: the one word shaped like one (letters with digits, dots or
    underscores: "you can use fatima.chen1, thanks"), else the answer without its frame when one
    word is left ("my username is mlopez"). None when no single word stands out."""
    at = at_handle(message)
    if at:
        return at
    words = [w.strip(".,!?;:'\"()[]") for w in message.split()]
    shaped = {w for w in words if "@" not in w and re.search(r"[^\W\d_]", w) and re.search(r"[\d._]", w.strip("._"))
              and not T.is_question(w)}
    if len(shaped) == 1:
        return shaped.pop()
    rest = unframed(message, slot).strip(" .!,'\"")
    if len(rest.split()) == 1:
        return rest
    content = [w for w in rest.split() if w.lower().strip(".,!?:") not in T.STOPWORDS
               and not HANDLE.fullmatch(w.strip(".,!?:"))]  # "my username is mlopez" for a login
    return content[0].strip(".,!?") if len(content) == 1 else None


LABEL_VALUE = r"\s*(?:is|was|are|were|:|=|-)\s*([^,;.!?]+?)(?=\s*(?:[,;.!?]|\band\b|\bbut\b|$))"


def labelled_text(message: str, label_words: set[str], *, place: bool = False) -> str | None:
    """A free-text answer the customer gives by naming its question ("my first school was Hillcrest",
    "the street I grew up on was Elm Row", "DOB: 12/12/2001"): the words after one of ``label_words`` and
    "is"/"was"/":", up to the next punctuation or "and". For a question asking where (``place``), also the words
    after the thing asked about and "to" ("refund it to my original card": ``place_joiners``)."""
    places = LEX.alternation("place_joiners") if place else ""
    for word in sorted(label_words, key=len, reverse=True):
        label = rf"\b{re.escape(word)}\w*(?:'s)?\b"
        m = re.search(label + r"(?:\s+[a-z']+){0,2}?" + LABEL_VALUE, message, re.I) or \
            re.search(label + r"\s*(\d[\d/.\-]*\d)", message, re.I)  # "DOB 20/02/1980"
        to = re.search(label + rf"(?:\s+(?:it|them))?\s+(?:{places})\s+([^,;.!?]+?)(?=\s*(?:[,;.!?]|\band\b|$))",
                       message, re.I) if places and m is None else None  # "refund it to my card"
        if to and 0 < len(T.words(to.group(1))) <= 5:
            return to.group(1).strip(" '\"")
        if m and 0 < len(T.words(m.group(1))) <= 5 and not T.is_unable(m.group(1)) \
                and not T.is_judgement(m.group(1)):
            return (m.group(1) + _continued(message[m.end(1):])).strip(" '\"")
    return None


def _place_words(group: str) -> str:
    """A place of up to six words, as a named group (it stops before "to", "then", "tomorrow" ...:
    ``route_stops`` in the language files)."""
    stops = LEX.alternation("route_stops") or "(?!x)x"
    return rf"(?P<{group}>(?:the\s+)?[\w'&-]+(?:\s+(?!(?:{stops})\b)[\w'&-]+){{0,5}})"


@cache
def _route_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]] | None:
    """A stated route ("from A to B"), a start alone and an end alone, from the language files (compiled
    once: every free-text slot of every message is tried against them)."""
    opens_from, opens_to = LEX.alternation("route_from"), LEX.alternation("route_to")
    if not opens_from or not opens_to:
        return None
    pair = re.compile(rf"\b(?:{opens_from})\s+{_place_words('a')}\s+(?:to|{opens_to})\s+{_place_words('b')}", re.I)
    return (pair, re.compile(rf"\b(?:{opens_from})\s+{_place_words('a')}", re.I),
            re.compile(rf"\b(?:{opens_to})\s+{_place_words('a')}", re.I))


def route_value(message: str, slot: str) -> str | None:
    """The start or the end of a route the customer states ("a van from the Harbour to the Old Mill"),
    for a free-text slot whose name says which it holds (``pickup_place``, ``destination``); None when the
    name says neither or the message states no route."""
    words = set(re.split(r"[_\W]+", slot.lower()))
    start = bool(words & set(LEX.phrases("route_start_words")))
    end = bool(words & set(LEX.phrases("route_end_words")))
    patterns = _route_patterns()
    if start == end or patterns is None:
        return None
    pair, start_only, end_only = patterns
    found = pair.search(message)
    if found:
        return _place(found.group("a" if start else "b"))
    m = (start_only if start else end_only).search(message)
    return _place(m.group("a")) if m else None


def _place(words: str) -> str | None:
    place = re.sub(r"^the\s+", "", words.strip(" .,!?'\""), flags=re.I)
    return place if place and not T.is_judgement(place) else None


CLAUSE_START = re.compile(r"^(?:and|but|or|so|because|then|also|please|thanks|thank|i|i'm|i'd|i'll|we|you|it|it's|"
                          r"my|the|this|that|can|could|would|will|is|are|do|does)\b", re.I)


def _continued(rest: str) -> str:
    """The rest of a labelled value that runs on past commas ("14 Elm Street, Springfield 01104"): parts
    that do not start a clause of their own, up to the end of the sentence."""
    out = ""
    for m in re.finditer(r"\s*,\s*([^,;.!?]+)", rest):
        if m.start() != len(out) or CLAUSE_START.match(m.group(1)):
            break
        out += m.group(0)
    return out


def cut_at_labels(answer: str, label_words: set[str]) -> str:
    """A free-text answer without the part that answers another question by name: "Cooper and my
    pet's name is Buddy" to the maiden-name question is "Cooper"."""
    hits = [m.start() for w in label_words for m in [re.search(rf"\b{re.escape(w)}\w*\b", answer, re.I)] if m]
    if not hits or min(hits) == 0:
        return answer
    head = re.sub(r"(?:[\s,;.]|\b(?:and|but|also|my|the|is|was)\b)*$", "", answer[: min(hits)], flags=re.I)
    return head.strip() if [w for w in T.tokens(head) if w not in PRONOUNS] else ""
