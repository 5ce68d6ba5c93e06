"""An SOP step put to the customer as a question, for the rule brain (core.understanding.brains.rule): from
the step's action ("ask the customer for their order number"), as written when it is in Thai, or in the reply
catalogue of the customer's language; and the subject a question asks for."""

from __future__ import annotations

import re

from core.language import lexicons as LEX
from core.language import text as T
from core.language.replies import say, table
from core.workspace.slots import listed_options

# who is asked, as SOP authors name them: "ask user", "ask the patron", "ask caller" (a word before for/to/
# if/which/...), so the question is put to "you" whatever the role is called
WHO = (r"(?:the )?(?:(?:user|customer|seller|them) ?|[a-z]+ (?=(?:to|for|if|whether|about|which|what|when|where|how|"
       r"who|whose)\b))?")
ASK_FORMS = [
    (re.compile(r"^ask " + WHO + r"(?:to provide|to give|to share|to enter|for) (.+)$",
                re.I), "Could you please tell me {x}?"),
    (re.compile(r"^ask " + WHO + r"to (.+)$", re.I), "Could you please {x}?"),
    (re.compile(r"^ask " + WHO + r"(?:if|whether) (.+)$", re.I),
     "Could you tell me whether {x}?"),
    (re.compile(r"^ask " + WHO + r"about (.+)$", re.I), "Could you tell me about {x}?"),
    (re.compile(r"^ask " + WHO + r"(?:for )?(.+)$", re.I),
     "Could you please tell me {x}?"),
]
LEAD_CLAUSE = re.compile(r"^.+?\band\s+(ask\b.*)$", re.I)  # "send otp and ask for ...": the ask is the question
HAVE_NOUN = re.compile(r"^(access|permission|an? |any )", re.I)


SUBJECT_END = re.compile(r"\s+(?:for|of|on|to|from|in|at|with|that|who|which|they|you|he|she)\b.*$", re.I)


def asked_subject(action: str) -> str:
    """What an ask action asks for, as its author named it: "ask customer for the email on the account"
    -> "the email"; "ask customer for a phone number for the courier" -> "a phone number"."""
    lead = LEAD_CLAUSE.match(action.strip())
    action = lead.group(1) if lead else action.strip()
    for pattern, _ in ASK_FORMS:
        m = pattern.match(action)
        if m:
            return SUBJECT_END.sub("", m.group(1)).strip()
    return ""


def question_from_action(action: str, expects: str, *, keep: list[int] | None = None, of: int = 0) -> str:
    """A natural question built from an ask action and what a valid answer is. ``keep``: when a step
    asking ``of`` values already has some, the positions of those still wanted: the question names only
    them when the action lists its ``of`` values one by one ("your name and email" -> "your email")."""
    x = ""
    form = "Could you please tell me {x}?"
    lead = LEAD_CLAUSE.match(action.strip())
    action = lead.group(1) if lead else action.strip()
    yes_no = re.search(r"\b(yes or no|yes/no)\b", expects, re.I) is not None
    for pattern, template in ASK_FORMS:
        m = pattern.match(action)
        if m:
            x, form = m.group(1), template
            break
    if not x:
        x = action
    hint = expects.strip()
    items = T.list_items(x) if keep is not None else []
    if keep is not None and len(items) == of:
        x = T.join_items([items[i] for i in keep], x)
        hints = T.list_items(hint)
        hint = T.join_items([hints[i] for i in keep], hint) if len(hints) == of else ""
    if yes_no and form.endswith("about {x}?") and HAVE_NOUN.match(x):
        form, x = "Do you have {x}?", re.sub(r"\bthe\b", "your", x, flags=re.I)
    else:
        x = _second_person(x)
    q = form.format(x=x)
    options = listed_options(hint)
    if yes_no:
        q += " (yes or no)"
    elif re.search(r"\b(e\.g\.|for example|like|digit)", hint, re.I):
        flat = T.flat_hint(hint)
        q += f" ({flat[0].lower() + flat[1:]})"
    elif 2 <= len(options) <= 8 and not any(o.lower() in q.lower() for o in options):  # the answers to pick from
        q += f" ({', '.join(options[:-1])} or {options[-1]})"
    return q


def _pronouns(phrase: str) -> str:
    """The customer named "you" in a phrase ("they have access" -> "you have access")."""
    p = re.sub(r"\b(they|he|she)\b (have|has)\b", "you have", phrase.strip(), flags=re.I)
    p = re.sub(r"\b(they|he|she)\b (want|wants)\b", "you want", p, flags=re.I)
    p = re.sub(r"\b(they|he|she|them|him)\b", "you", p, flags=re.I)
    return re.sub(r"\b(their|his|her)\b", "your", p, flags=re.I)


def _second_person(phrase: str) -> str:
    p = _pronouns(phrase)
    p = re.sub(r"\b(themselves|himself|herself)\b", "yourself", p, flags=re.I)
    if not re.match(r"^(the|your|a|an|which|what|how|one|any|to|where|when|whether|if|who|whom|why)\b", p, re.I) \
            and not p.lower().startswith("you"):
        verbs = ("describe", "choose", "pick", "confirm", "select", "enter", "provide", "share", "give", "send")
        if not p.lower().startswith(verbs):
            p = "your " + p
    return re.sub(r"^the\b", "your", p, flags=re.I)


# ------------------------------------------------------------ questions in the customer's language

def _words_pattern(phrase: str) -> str:
    """A phrase of the language files (words separated by spaces) as a pattern over unsegmented text."""
    return r"\s*".join(re.escape(w) for w in phrase.split())


def _cut(text: str, key: str, *, at_end: bool = False) -> tuple[str, str]:
    """``text`` without the first phrase of the list ``key`` it starts (or ends) with, and that phrase; the
    phrase must be whole words of the segmented text ("ขอ" leads "ขอเบอร์", not "ขอบคุณ")."""
    spaced = f" {LEX.segment(text)} "
    for phrase in LEX.phrases(key):
        words = f" {phrase} "
        if (spaced.endswith(words) if at_end else spaced.startswith(words)):
            pattern = (_words_pattern(phrase) + r"\s*$") if at_end else (r"^\s*" + _words_pattern(phrase))
            cut = re.sub(pattern, "", text.strip(), count=1)
            if cut != text.strip() and cut.strip():
                return cut.strip(), phrase
    return text.strip(), ""


def _closed(question: str) -> bool:
    """Whether a question already ends with a polite particle or a question mark."""
    return question.rstrip().endswith("?") or bool(re.search(
        rf"(?:{LEX.alternation('particles')})[\s?!.]*$", question))


def written_question(action: str, expects: str = "") -> str:
    """The question an ask step written in Thai puts to the customer, in the author's words: the step's
    hint when it asks ("มีงบประมาณเท่าไหร่คะ"), else the step without the words that say who is asked
    ("ถามลูกค้าว่า", "... ของลูกค้า"), as a question when it is one ("สนใจรุ่นไหน" + the store's
    particle), else asked for ("ขอทราบงบประมาณด้วยค่ะ") or asked to be done ("ให้ลูกค้าเลือกรุ่น" ->
    "รบกวนเลือกรุ่นด้วยค่ะ"). An example in the hint ("เช่น 15000") follows in brackets."""
    hint = expects.strip()
    if hint and LEX.UNSPACED.search(hint) and T.is_question(hint):
        return hint if _closed(hint) else say("ask_question", "th", x=hint)
    rest, to_do = _cut(action, "ask_to_leads")
    if not to_do:
        rest, _ = _cut(rest, "ask_leads")
    rest, _ = _cut(rest, "ask_tails", at_end=True)
    you = say("you", "th")
    for word in LEX.phrases("customer_words"):  # "ประเภทสินค้าที่ลูกค้าสนใจ" -> "... ที่คุณสนใจ"
        rest = re.sub(_words_pattern(word), you, rest)
    if T.is_question(rest):
        q = rest if _closed(rest) else say("ask_question", "th", x=rest)
    else:
        q = say("ask_to" if to_do else "ask_for", "th", x=rest)
    example = _example(hint)
    if example and example not in q:
        q += " " + say("hint_example", "th", x=example)
    elif re.search(r"\b(yes or no|yes/no)\b|ใช่\s*หรือ\s*ไม่", hint, re.I):
        q += " " + say("hint_yes_no", "th")
    return q


EXAMPLE = re.compile(r"(?:\b(?:e\.g\.|for example|such as|like)|ตัวอย่าง\s*เช่น|เช่น|ตัวอย่าง)[\s:,]*(.+)$", re.I)


def _example(hint: str) -> str:
    """The example a hint gives ("a budget, e.g. 1500" -> "1500", "งบประมาณ เช่น 15000" -> "15000")."""
    m = EXAMPLE.search(hint)
    return m.group(1).strip(" .)") if m else ""


ASK_KINDS = ("ask_for", "ask_to", "ask_whether", "ask_about", "ask_for")  # the sentence for each of ASK_FORMS


def asked_in(language: str, action: str, expects: str, *, keep: list[int] | None = None, of: int = 0) -> str:
    """The question of an ask step written in English, said in ``language`` around the author's words for
    what is asked (those the language file's ``words`` has are said in the language: "budget" ->
    "งบประมาณ"); "" when the language has no questions of its own (then the English question is asked)."""
    if not say_has(language, "ask_for"):
        return ""
    lead = LEAD_CLAUSE.match(action.strip())
    action = lead.group(1) if lead else action.strip()
    x, kind = "", "ask_for"
    for (pattern, _), key in zip(ASK_FORMS, ASK_KINDS, strict=True):
        m = pattern.match(action)
        if m:
            x, kind = m.group(1), key
            break
    if not x:
        return ""
    items = T.list_items(x) if keep is not None else []
    if keep is not None and len(items) == of:
        x = T.join_items([items[i] for i in keep], x)
    yes_no = re.search(r"\b(yes or no|yes/no)\b", expects, re.I) is not None
    words = table(language, "words")
    plain = re.sub(r"^(?:your|the|their|his|her|a|an)\s+", "", x.strip(), flags=re.I).strip(" ?.")
    said = words.get(plain.lower()) or words.get(x.strip().lower()) or _hint_words(language, expects, of) \
        or f" {_pronouns(plain)} "
    if yes_no and kind == "ask_about" and HAVE_NOUN.match(x):
        kind = "ask_have"
    q = say(kind, language, x=said).replace("  ", " ").strip()
    example = _example(expects)
    options = listed_options(expects)
    joiner = f" {say('list_or', language)} "
    if yes_no:
        q += " " + say("hint_yes_no", language)
    elif example:
        q += " " + say("hint_example", language, x=re.sub(r",?\s+or\s+", joiner, example))
    elif 2 <= len(options) <= 8 and not any(o.lower() in q.lower() for o in options):
        q += f" ({', '.join(options[:-1])}{joiner}{options[-1]})"
    return q


def _hint_words(language: str, expects: str, of: int) -> str:
    """What the author's hint calls the value when it is written in ``language`` ("สีของเครื่อง เช่น ดำ" ->
    "สีของเครื่อง"): the question then says it in the customer's own words; '' when
    the hint is in another language, or the step asks several values."""
    head = EXAMPLE.split(expects, maxsplit=1)[0].strip(" ,.:;(")
    script = next((lx.script for lx in LEX.lexicons() if lx.language == language), None)
    if of > 1 or not head or language == "en" or script is None or not script.search(head):
        return ""
    return head


def say_has(language: str, key: str) -> bool:
    """Whether a language's reply file has a sentence of its own for ``key``."""
    from core.language.replies import catalogue

    return key in catalogue(language)
