"""Clauses and lists: a message cut into the parts that could each carry a request, its main clause,
listed items and what a correction rules out; a hint flattened into one phrase."""

from __future__ import annotations

import re

from core.language import lexicons as LEX
from core.language.text.acts import QUESTION_START, is_question
from core.language.text.patterns import L1, _lex
from core.language.text.vocabulary import tokens

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


def flat_hint(hint: str) -> str:
    """A hint as one phrase: its own parentheses flattened ("how many bags (one if unsure)" -> "how many
    bags, one if unsure"), so it can stand inside a sentence or a pair of parentheses."""
    flat = re.sub(r"\s*\(([^()]*)\)", r", \1", hint.strip())
    return re.sub(r"\s+", " ", flat).strip(" ,.")
