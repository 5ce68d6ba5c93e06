"""What single messages and values signal, for the rule reader (core.understanding.reading): small
judgements of one message or value against one SOP, goal or question, each a pure function."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.understanding.brains.base import Perception
from core.understanding.brains.questions import asked_subject
from core.understanding.executor import FlowExecutor
from core.understanding.extract import CHOOSE

LOW_INTENT = 0.3  # with no goal active, an SOP under the threshold still starts when it is this close
CLEAR_MARGIN = 0.1  # ... and this far ahead of every other SOP
NOT_KEPT = ("text", "boolean", "choice")  # kinds of values not kept for an SOP that has not started yet


def subjects(sops: list[Sop]) -> dict[str, set[str]]:
    """Per SOP, the stems of the words of its title (or of a trigger of three words at most) that no other
    SOP uses."""
    names = {s.id: " ".join([s.title, *(g for g in s.triggers if len(T.tokens(g)) <= 3)]) for s in sops}
    stems = {sid: {T.stem(w) for w in T.tokens(name) if len(w) > 2 and w not in T.GENERAL_VERBS}
             for sid, name in names.items()}
    counts = Counter(w for words in stems.values() for w in words)
    return {sid: {w for w in words if counts[w] == 1} for sid, words in stems.items()}


def kin_words(near: str, titles: dict[str, set[str]]) -> dict[str, set[str]]:
    """The SOPs sharing a title word with ``near``, each with the title words that tell it apart from
    ``near`` and from the others of them ("Hotel booking" and "Hotel service" from "Hotel search")."""
    home = titles.get(near) or set()
    kin = {sid: words for sid, words in titles.items() if sid != near and words & home}
    return {sid: words - home - set().union(*(w for k, w in kin.items() if k != sid)) for sid, words in kin.items()}


def names_asked(node: Node, said: set[str]) -> bool:
    """Whether a message's words (``said``) name what ``node`` asks for: every word of one of its slots'
    names, or every content word of its question's subject (stems compared)."""
    if any(set(T.words(p.name.replace("_", " "))) <= said for p in node.fills):
        return True
    named = {T.stem(w) for w in T.words(asked_subject(node.label)) if w not in T.STOPWORDS}
    return bool(named) and named <= {T.stem(w) for w in said}


def clear_lead(p: Perception) -> bool:
    """Whether the best-scoring SOP scores at least LOW_INTENT and CLEAR_MARGIN above every other."""
    score = p.intents[0][1]
    runner_up = max((s for _, s in p.intents[1:]), default=0.0)
    return score >= LOW_INTENT and score - runner_up >= CLEAR_MARGIN


def social_act(p: Perception) -> str:
    """What a message does socially, when anything: frustration, a greeting, thanks."""
    if T.is_hostile(p.text):
        return "frustration"
    return "greeting" if p.greeting else "thanks" if p.thanks else ""


def one_value(values: dict[str, Any]) -> Any:
    """A value as the trace shows it (one slot's value, or all of them)."""
    return next(iter(values.values())) if len(values) == 1 else dict(values)


PRONOUN = re.compile(r"\b(it|that|this)\b", re.I)


def search_query(text: str, pending: Node | None) -> str:
    """The doubt as a search query, 'it' resolved to what the pending question asks for (paper §2.4):
    "how to find it" while a listing id is asked -> "how to find my listing id"."""
    if pending is None or not pending.fills:
        return text
    subject = pending.fills[0].name.replace("_", " ")
    if subject.lower() in text.lower() or not PRONOUN.search(text):
        return text
    return PRONOUN.sub(f"my {subject}", text, count=1)


def corrects(text: str) -> bool:
    """Whether a message has correction or go-back words ("actually", "that was wrong", "go back")."""
    return T.corrects(text) or T.is_go_back(text)


def what_stands(text: str) -> str:
    """The message without what a correction in it rules out ("I meant 80 euros, not 95" -> "I meant 80
    euros"); the message itself when it corrects nothing."""
    return T.ruled_out(text) if corrects(text) else text


def only_social(p: Perception) -> bool:
    """Thanks or goodbye that asks for nothing more ("thanks, that report helps!"). A sentence of its own that
    asks ("Lovely, thanks! where is my order.") is a request whatever courtesy surrounds it."""
    if not (p.thanks or T.is_farewell(p.text)) or p.question or T.is_request(p.text):
        return False
    social = (T.is_thanks, T.is_greeting, T.is_farewell)
    rest = [s for s in re.split(r"(?<=[.!?])\s+", p.text.strip()) if s and not any(f(s) for f in social)]
    return not any(T.is_question(s) or T.is_request(s) for s in rest)


def explained_by(text: str, values: dict[str, Any]) -> bool:
    """Whether a message says nothing but these slots' values and names ("my passcode is 2718 or 8172")."""
    rest = text
    for value in values.values():
        rest = re.sub(re.escape(str(value)), " ", rest, flags=re.I)
    named = {w for k in values for w in T.words(k.replace("_", " "))}
    left = [w for w in T.tokens(rest) if w not in named and w not in T.HEDGES and not w.isdigit()]
    return len(left) <= 1


def part_of(value: Any, answer: list[Any]) -> bool:
    """Whether a value is (part of) the answer's own value: "HP" or 4000 in the chosen "HP Brio 4K"."""
    low = str(value).lower()
    for a in answer:
        if value == a:
            return True
        if isinstance(a, str) and (re.search(rf"\b{re.escape(low)}\b", a.lower())
                                   or (isinstance(value, int | float) and round(float(value), 2) in T.number_forms(a))):
            return True
    return False


def free_text(agent: FlowExecutor, sop: Sop, node: Node | None) -> bool:
    """Whether a question takes any text as its answer (a name, a date, a security answer)."""
    types = agent.types(sop)
    return node is not None and node.asks and bool(node.fills) and all(
        p.name in types and types[p.name].kind == "text" for p in node.fills)


def describing(agent: FlowExecutor, sop: Sop, node: Node | None) -> bool:
    """Whether a question asks the customer to describe something in their own words ("what is wrong?")."""
    types = agent.types(sop)
    return free_text(agent, sop, node) and node is not None and all(types[p.name].describes for p in node.fills)


def gives_values(goal: Goal, sop: Sop, agent: FlowExecutor, found: dict[str, Any]) -> bool:
    """Whether a question carries new values for the goal ("why don't you try PIN 3941?"): then it is
    information to use, not a doubt to answer from the knowledge base. ``found``: the values the message
    volunteers."""
    types = agent.types(sop)
    return any(goal.slots.get(k) != v for k, v in found.items() if k in types and types[k].kind != "text")


def confirms(agent: FlowExecutor, sop: Sop, node: Node | None) -> bool:
    """Whether a question is a yes/no confirmation (every slot it fills is a yes or a no)."""
    types = agent.types(sop)
    return node is not None and node.asks and bool(node.fills) and all(
        p.name in types and types[p.name].kind == "boolean" for p in node.fills)


def asks_choice(goal: Goal, sop: Sop, agent: FlowExecutor) -> bool:
    """Whether the pending question asks the customer to choose among results ("the second one?")."""
    node = sop.node(goal.pending)
    types = agent.types(sop)
    return node is not None and any(types[p.name].kind == "choice" for p in node.fills if p.name in types)


def choice_words(text: str) -> bool:
    """Whether a message picks one of the offered results ("the first one"), not asks about them."""
    return bool(CHOOSE.search(text)) and not T.asks_about_item(text)
