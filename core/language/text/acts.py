"""Dialogue acts: questions, yes/no, cancelling, greeting, thanks, farewell, asking for a person,
inability, requests and the other things a message does (each a lexicon list as a pattern)."""

from __future__ import annotations

import re

from core.language import lexicons as LEX
from core.language.text.patterns import L1, _lex
from core.language.text.vocabulary import GENERAL_WORDS, STOPWORDS, tokens, words

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
SKIP = _lex("skip_question", start=True, end=True)
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
    whole = LEX.segment(text.strip().lower())
    t = LEAD_FILLER.sub("", whole)
    lead_yes = any(YES.fullmatch(w) for w in re.split(r"[\s,.!]+", whole[: len(whole) - len(t)]) if w)  # "oh ok, ..."
    parts = re.split(r"(?<=[.,!])\s+", t, maxsplit=1)
    first, rest = parts[0], parts[1] if len(parts) > 1 else ""
    if rest and len(words(first)) <= 2 and not (YES.match(first) or NO.match(first) or NEGATIVE.search(first)):
        t = LEAD_FILLER.sub("", rest.strip())  # "OMG. Yes, thank you!", "lovely, yes please"
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
    return True if lead_yes and not is_request(t) else None


def corrects(text: str) -> bool:
    """Whether a message says it corrects what was said before ("actually", "I meant", Thai "พิมพ์ผิด"), in any
    of the store's languages (words found once the text is cut into words)."""
    return CORRECTION.search(LEX.segment(text)) is not None


def asks_to_skip(text: str) -> bool:
    """Whether the whole message asks to pass the question put ("skip this one", "go to the next question")."""
    said = LEAD_FILLER.sub("", LEX.segment(text).strip())
    return bool(SKIP.match(without_particles(said)))


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
    ("Brilliant, that saves me a trip to the shop, thank you!")."""
    t = LEX.segment(text.strip())
    if THANKS.match(t) and len(words(t)) <= 5:
        return True
    return bool(THANKS_ANYWHERE.search(t)) and len(words(t)) <= 15 and not is_question(t) and not is_request(t)


HOSTILE = _lex("hostile")


def is_hostile(text: str) -> bool:
    """An insult or angry outburst (answered politely, never held against the flow)."""
    return bool(HOSTILE.search(LEX.segment(text)))


# a request anywhere ("could you ..."), or a verb of asking opening a sentence ("Okay, go ahead and book it")
REQUEST = re.compile(_lex("request").pattern + rf"|(^|[.!?]\s+)(({LEX.alternation('request_lead')}),?\s+)*"
                     rf"({LEX.alternation('request_verbs')}){L1}", re.I)
THANKS_ANYWHERE = _lex("thanks_anywhere")
FAREWELL = _lex("farewell")
PERSON = _lex("person")
DECLINE_MORE = _lex("decline_more", start=True)
UNABLE = _lex("unable")


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


ITEM_QUESTION = _lex("item_questions")


def asks_about_item(text: str) -> bool:
    """Whether a message asks about an offered item (its stock or price) rather than picking one."""
    return bool(ITEM_QUESTION.search(LEX.segment(text)))


WHEN = _lex("asks_when")


def asks_when(text: str) -> bool:
    """Whether a message asks when (or on which day) something will be the case ("When will it be
    nice again?", "what day will it be sunny?")."""
    return bool(WHEN.search(text)) and (is_question(text) or is_request(text))
