"""The rule brain: offline interpretation from embeddings, workspace vocabulary and general language."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from core.language import lexicons as LEX
from core.language import text as T
from core.language.render import as_text
from core.language.replies import say, table, voice
from core.retrieval.embedding import CachedEmbedder
from core.retrieval.index import TriggerWords
from core.sop.expr_templates import CURRENCY_BEFORE
from core.sop.expr_templates import TEMPLATE_REF as PLACEHOLDER
from core.sop.graph import Node, Sop
from core.understanding.brains.base import Perception
from core.workspace.slots import listed_options, written_date

NEGATION = re.compile(r"\b(not|no|never|none|nothing|without|doesn't|does not|don't|do not|isn't|is not|can't|"
                      r"cannot|can not|hasn't|has not|haven't|fails?|failed|unable)\b", re.I)
# a condition written in Thai turns around with ไม่ ("ถ้าไม่พบสินค้า"): ``negation`` in the language files
THAI_NEGATION = re.compile(rf"{T.L0}(?:{LEX.alternation('negation') or '(?!x)x'}){T.L1}")
COMPARATORS = [
    (re.compile(r"(less than or equal to|at most|no more than|up to|within|<=|≤)\s*(\d+(?:\.\d+)?)"), "<="),
    (re.compile(r"(greater than or equal to|at least|no less than|>=|≥)\s*(\d+(?:\.\d+)?)"), ">="),
    (re.compile(r"(less than|under|below|fewer than|<)\s*(\d+(?:\.\d+)?)"), "<"),
    (re.compile(r"(more than|greater than|over|above|exceeds|>)\s*(\d+(?:\.\d+)?)"), ">"),
    (re.compile(r"(equal to|equals|exactly|=)\s*(\d+(?:\.\d+)?)"), "=="),
]
FILLER = re.compile(r"^(it'?s|it is|its|the status is|status is|the result is|result is|they are|it was|"
                    r"the answer is|answer is|user says|user said|customer says)\s+", re.I)
YES_NO_STRINGS = {"yes", "no", "true", "false", "y", "n"}
FALSEY_STRINGS = {"no", "false", "none", "not found", "n", "0", "fail", "failed", "unavailable", "ineligible"}


class RuleBrain:
    """Deterministic interpretation; vocabulary comes from the workspace."""

    def __init__(self, embedder: CachedEmbedder, sops: list[Sop], lexicon: set[str] | None = None,
                 extra_triggers: dict[str, list[str]] | None = None) -> None:
        """``extra_triggers`` adds phrases per SOP id (e.g. built from the store's own product categories)."""
        self.embedder = embedder
        words = set(lexicon or set())
        self._sop_ids: list[str] = []
        texts: list[str] = []
        for sop in sops:
            for trig in [sop.title, *sop.triggers, *(extra_triggers or {}).get(sop.id, [])]:
                if trig.strip():
                    self._sop_ids.append(sop.id)
                    texts.append(trig)
                    words.update(T.words(trig))
            for node in sop.nodes.values():
                words.update(w for w in T.words(f"{node.text} {node.expects}") if w.isalpha())
        self.lexicon: frozenset[str] = frozenset(words | T.GENERAL_WORDS
                                                 | {w for w in T.STOPWORDS if len(w) >= 4 and w.isalpha()})
        # a trigger in a script the embedding model cannot read (Thai) is matched by its words instead
        self._unread = np.array([bool(LEX.UNSPACED.search(t)) for t in texts], dtype=bool)
        self._vectors = embedder.embed(texts) if texts else np.zeros((0, 384), dtype=np.float32)
        self._words = TriggerWords(self._sop_ids, texts)

    def correct(self, text: str) -> str:
        """The message with typos of workspace words corrected (the paper's spell-corrected observation)."""
        return T.correct_typos(text, self.lexicon)

    # ------------------------------------------------------------ perception
    def perceive(self, text: str, sops: list[Sop], *, need_intents: bool = True) -> Perception:
        p = Perception(text=text, question=T.is_question(text), cancel=T.is_cancel(text),
                       greeting=T.is_greeting(text), thanks=T.is_thanks(text),
                       correction=bool(T.CORRECTION.search(text)), go_back=T.is_go_back(text))
        if need_intents and len(self._sop_ids) and T.tokens(text):
            main = T.main_clause(text)  # not the part saying why or when ("... to see if I can afford dinner")
            whole = T.correct_spelling(main if len(T.tokens(main)) >= 2 else text, self.lexicon)
            queries = self.embedder.embed([whole, *T.clauses(whole)])  # the whole message, and each part of it
            scores = (self._vectors @ queries.T).max(axis=1)
            if self._unread.any():
                scores = self._by_words(main if len(T.tokens(main)) >= 2 else text, scores)
            best: dict[str, float] = {}
            for sid, s in zip(self._sop_ids, scores, strict=True):
                best[sid] = max(best.get(sid, -1.0), float(s))
            p.intents = sorted(best.items(), key=lambda kv: -kv[1])
            p.embedded = True
        return p

    def _by_words(self, text: str, vectors: np.ndarray) -> np.ndarray:
        """Scores with the triggers the embedding model cannot read taken by their words: against a message
        in that script, the words decide (the vectors of two Thai texts are alike whatever they say); a
        message without it is not compared with them (it shares at most a product name with them)."""
        if not LEX.UNSPACED.search(text):
            return np.where(self._unread, -1.0, vectors)
        parts = [text, *T.clauses(text)]
        words = np.array([self._words.scores(part) for part in parts]).max(axis=0)
        return np.where(self._unread, words, vectors)

    # ------------------------------------------------------------ branch decisions
    def branch(self, condition: str, observation: Any) -> bool:
        cond = FILLER.sub("", LEX.segment(condition.strip().lower()))
        negated = bool(NEGATION.search(cond) or THAI_NEGATION.search(cond))
        core = THAI_NEGATION.sub(" ", NEGATION.sub(" ", cond))
        numeric = self._numeric(cond, observation)
        if numeric is not None:
            return numeric
        if not T.words(core):  # a bare "no" / "not"
            return _truthy(observation) != negated
        values = _scalar_values(observation)
        matched = self._value_match(core, observation, values)
        if matched is not None:
            return matched != negated if matched else (negated and not _looks_like_values(core, values))
        return _truthy(observation) != negated

    @staticmethod
    def _numeric(cond: str, observation: Any) -> bool | None:
        for pattern, op in COMPARATORS:
            m = pattern.search(cond)
            if not m:
                continue
            limit = float(m.group(2))
            value = _observed_number(cond, observation)
            if value is None:
                return None
            return {"<=": value <= limit, ">=": value >= limit, "<": value < limit, ">": value > limit,
                    "==": value == limit}[op]
        return None

    @staticmethod
    def _value_match(core: str, observation: Any, values: list[str]) -> bool | None:
        if not values:
            return None
        field_match = _field_condition(core, observation)
        if field_match is not None:
            return field_match
        alts = [a.strip(" .") for a in re.split(r",|\bor\b|/", core) if a.strip(" .")]
        for alt in alts:
            alt_n = _norm(alt)
            for v in values:
                vn = _norm(v)
                if vn and (alt_n == vn or re.search(rf"\b{re.escape(vn)}\b", alt_n)):
                    return True
        return False if _looks_like_values(core, values) else None

    # ------------------------------------------------------------ questions
    def question(self, node: Node, slots: dict[str, Any]) -> str:
        if node.message:
            return fill_template(node.message, slots)
        missing = [i for i, p in enumerate(node.fills) if slots.get(p.name) in (None, "")]
        keep = missing if 0 < len(missing) < len(node.fills) else None  # a partial answer: ask for the rest
        action = node.gar.action if node.gar else node.text
        if LEX.UNSPACED.search(action):  # a step written in Thai is put to the customer as written
            return written_question(action, node.expects)
        language = voice().language
        if language != "en":  # an SOP in English, a customer writing in another language
            asked = asked_in(language, action, node.expects, keep=keep, of=len(node.fills))
            if asked:
                return asked
        return question_from_action(action, node.expects, keep=keep, of=len(node.fills))


def _norm(s: str) -> str:
    return " ".join(T.words(s.replace("_", " ").replace("-", " ")))


def _scalar_values(obs: Any) -> list[str]:
    if isinstance(obs, str | int | float) and not isinstance(obs, bool):
        return [str(obs)]
    if isinstance(obs, dict):
        return [str(v) for v in obs.values() if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return []


def _looks_like_values(core: str, values: list[str]) -> bool:
    """Whether a condition names values (short alternatives) rather than a yes/no property."""
    if not any(re.search(r"[a-z]", v.lower()) for v in values):
        return False
    alts = [a for a in re.split(r",|\bor\b", core) if a.strip()]
    return all(len(T.words(a)) <= 3 for a in alts) and not re.search(r"\b(found|exists?|available|has|have|yes|"
                                                                     r"can|could|chose|selected|valid)\b", core)


def _field_condition(core: str, obs: Any) -> bool | None:
    """'block reason is seller state change' against {'block_reason': 'seller state change'}."""
    if not isinstance(obs, dict):
        return None
    has = re.match(r"^(?:.+?\s+)?(?:has|have|had)\s+(?:any\s+)?(.+)$", core.strip())
    if has:  # "the loan has holds" against {'holds': 0}: the field the words name decides
        wanted = {T.singular(w) for w in T.words(has.group(1))}
        found = [v for k, v in obs.items()
                 if wanted and wanted <= {T.singular(w) for w in T.words(str(k).replace("_", " "))}]
        if found:
            return any(_truthy(v) for v in found)
    m = re.match(r"^(?:the\s+)?(.+?)\s+(?:is|are|was|equals)\s+(.+)$", core.strip())
    if not m:
        return None
    key_words = set(T.words(m.group(1)))
    alts = [_norm(a) for a in re.split(r",|\bor\b", m.group(2)) if a.strip()]
    named = [v for k, v in obs.items() if key_words and key_words <= set(T.words(str(k).replace("_", " ")))]
    if not named:
        return None
    if any(_norm(str(v)) in alts for v in named):
        return True
    # "the order is delivered" against {order_id: .., status: delivered}: the subject names the record
    # (its id field), not the field judged; the values decide
    if any(_norm(str(v)) in alts for v in obs.values() if isinstance(v, str)):
        return None
    return False


def _observed_number(cond: str, obs: Any) -> float | None:
    if isinstance(obs, int | float) and not isinstance(obs, bool):
        return float(obs)
    if isinstance(obs, str):
        nums = T.amounts(obs)
        return nums[0].value if nums else None
    if isinstance(obs, dict):
        cond_words = [w for w in T.words(cond) if w.isalpha() and w not in T.STOPWORDS]
        numeric = [(k, v) for k, v in obs.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        for k, v in numeric:
            if any(_same_word(a, b) for a in T.words(str(k).replace("_", " ")) for b in cond_words):
                return float(v)
        if numeric:
            return float(numeric[0][1])
    return None


def _same_word(a: str, b: str) -> bool:
    """Equal words, or one abbreviates the other ("hrs" / "hours", "qty" / "quantity")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) < 2 or short[0] != long_[0]:
        return False
    if len(short) >= 3 and long_.startswith(short):
        return True
    it = iter(long_)
    return len(short) >= 3 and all(ch in it for ch in short) and not any(ch in "aeiou" for ch in short[1:])


def _truthy(obs: Any) -> bool:
    if isinstance(obs, bool):
        return obs
    if obs is None:
        return False
    if isinstance(obs, int | float):
        return obs != 0
    if isinstance(obs, str):
        return obs.strip().lower() not in FALSEY_STRINGS and bool(obs.strip())
    if isinstance(obs, list):
        return len(obs) > 0
    if isinstance(obs, dict):
        bools = [v for v in obs.values() if isinstance(v, bool)]
        if bools:
            return bools[0]
        flags = [str(v).strip().lower() for v in obs.values() if str(v).strip().lower() in YES_NO_STRINGS]
        if flags:  # a yes/no field among other facts ({"can_reactivate": "no", "reason": ...})
            return flags[0] in ("yes", "true", "y")
        if len(obs) == 1:
            return _truthy(next(iter(obs.values())))
        return bool(obs)
    return bool(obs)




def fill_template(template: str, values: dict[str, Any], computed: list[str] | None = None) -> str:
    """Replace ``{context.key}`` / ``{key}`` placeholders and expressions (``{quantity * unit_price}``);
    unknown keys stay visible as-is. ``computed`` receives each figure an expression gave (grounded by its
    sources, for the grounding check)."""
    from core.sop.expr_eval import lookup
    from core.sop.expr_templates import fill_expressions

    def sub(m: re.Match[str]) -> str:
        val = lookup(values, m.group(1))
        if val is None:
            return m.group(0)
        if isinstance(val, float) and not val.is_integer() and CURRENCY_BEFORE.search(template[: m.start()]):
            return f"{val:,.2f}"  # "${context.total}" with 42.5 -> "$42.50"
        return as_text(written_date(str(val)))  # a date as people write it

    filled = fill_expressions(template, values, lambda v: as_text(written_date(v)), computed=computed)
    return PLACEHOLDER.sub(sub, filled)


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
    said = words.get(plain.lower()) or words.get(x.strip().lower()) or f" {_pronouns(plain)} "
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


def say_has(language: str, key: str) -> bool:
    """Whether a language's reply file has a sentence of its own for ``key``."""
    from core.language.replies import catalogue

    return key in catalogue(language)
