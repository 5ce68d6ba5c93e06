"""The rule brain: offline interpretation from embeddings, workspace vocabulary and general language."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from core.language import lexicons as LEX
from core.language import text as T
from core.language.render import as_text
from core.language.replies import voice
from core.retrieval.embedding import CachedEmbedder
from core.retrieval.index import TriggerWords
from core.sop.expr_templates import CURRENCY_BEFORE
from core.sop.expr_templates import TEMPLATE_REF as PLACEHOLDER
from core.sop.graph import Node, Sop
from core.understanding.brains.base import Perception
from core.understanding.brains.conditions import (
    COMPARATORS,
    FILLER,
    NEGATION,
    THAI_NEGATION,
    field_condition,
    looks_like_values,
    norm,
    observed_number,
    scalar_values,
    truthy,
)
from core.understanding.brains.questions import asked_in, question_from_action, written_question
from core.workspace.slots import written_date

LONG_WORDS = 100  # beyond about this many words the embedding model reads only the start of a message
LAST_SENTENCES = 3  # the sentences of a long message read on their own (what is asked usually comes last)


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
                       correction=T.corrects(text), go_back=T.is_go_back(text))
        if need_intents and len(self._sop_ids) and T.tokens(text):
            main = T.main_clause(text)  # not the part saying why or when ("... to see if I can afford dinner")
            whole = T.correct_spelling(main if len(T.tokens(main)) >= 2 else text, self.lexicon)
            parts = [whole, *T.clauses(whole)]  # the whole message, and each part of it
            if len(T.tokens(main)) > LONG_WORDS:  # the model reads a long message's start: its last sentences too
                parts += [T.correct_spelling(c, self.lexicon) for c in T.clauses(main)[-LAST_SENTENCES:]]
            queries = self.embedder.embed(parts)
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
            return truthy(observation) != negated
        values = scalar_values(observation)
        matched = self._value_match(core, observation, values)
        if matched is not None:
            return matched != negated if matched else (negated and not looks_like_values(core, values))
        return truthy(observation) != negated

    @staticmethod
    def _numeric(cond: str, observation: Any) -> bool | None:
        for pattern, op in COMPARATORS:
            m = pattern.search(cond)
            if not m:
                continue
            limit = float(m.group(2))
            value = observed_number(cond, observation)
            if value is None:
                return None
            return {"<=": value <= limit, ">=": value >= limit, "<": value < limit, ">": value > limit,
                    "==": value == limit}[op]
        return None

    @staticmethod
    def _value_match(core: str, observation: Any, values: list[str]) -> bool | None:
        if not values:
            return None
        field_match = field_condition(core, observation)
        if field_match is not None:
            return field_match
        alts = [a.strip(" .") for a in re.split(r",|\bor\b|/", core) if a.strip(" .")]
        for alt in alts:
            alt_n = norm(alt)
            for v in values:
                vn = norm(v)
                if vn and (alt_n == vn or re.search(rf"\b{re.escape(vn)}\b", alt_n)):
                    return True
        return False if looks_like_values(core, values) else None

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
