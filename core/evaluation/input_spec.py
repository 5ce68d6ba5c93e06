"""What an ask step expects, by the synthetic-session generator's own reading (:mod:`core.evaluation.inputs`
phrases the messages): the kind of a valid answer, read from the step's GAR metadata (or JSON message) and slot
name, or from the type the author declared. Nothing here imports the brain or the slot extractors."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.sop.graph import Node

# Only to a question about having or using something ("do you still have access to that email?")
NO_ACCESS = ["no, that account was closed", "I lost the password to it", "can't log in to it anymore",
             "nope, it got deleted"]
HAVING = re.compile(r"\b(have|has|access|use|own|still|remember)\b", re.I)

# A free-text slot that describes something in the customer's words (what an opening message may already say)
DESCRIPTION = re.compile(r"\b(describ\w*|description|problem|issue|reason|details?|what happened|symptoms?|"
                         r"complaint|feedback|comments?|explain\w*|message)\b")
SUBJECT = re.compile(r"^(?:.*?\band\s+)?(?:ask|request|collect|get|confirm)\s+(?:the\s+)?(?:(?:user|customer|seller|"
                     r"them)\b|[a-z]+(?=\s+(?:to|for|if|whether|about|which|what)\b))?\s*(?:to\s+(?:provide|give|share|enter|describe|choose)|for|about|to)?\s*(.*)$",
                     re.I)

# an ask worded as an embedded question: its subject is the noun after which/what, else the slot's name
EMBEDDED_QUESTION = re.compile(r"^(?:(?:which|what)\s+(?!(?:is|are|was|were|do|does|did|you|they|the|kind|type)\b)"
                               r"([a-z]+)\b|(?:which|what)\b|whether\b|if\b|when\b|where\b|how\b|who\b)", re.I)


@dataclass
class InputSpec:
    """What an ask step expects, read from its GAR metadata (or JSON message) and slot name."""

    kind: str  # email | otp | phone | id | yesno | money | category | model | choice | number | option | text | date
    # | phrase | address | name | username (free text of a known shape)
    subject: str
    digits: int = 0
    prefix: str = ""
    body: str = ""  # the example's characters after the prefix (X = letter or digit, 9 = digit)
    vocab: list[str] = field(default_factory=list)
    length_declared: bool = True  # False: a phone whose length the SOP does not state (any 7-15 digits do)

    @property
    def exact(self) -> bool:
        """Whether the value is copied verbatim into API params (ids, emails, codes, phones, usernames)."""
        return self.kind in ("email", "otp", "phone", "id", "username")

    @property
    def free(self) -> bool:
        """Free text: any wording is a valid answer, so no answer can be of the wrong format."""
        return self.kind in ("text", "phrase", "address", "name", "username")


def read_spec(node: Node, categories: list[str], models: list[str], texts: list[str]) -> InputSpec:
    """The generator's reading of what a valid answer to an ask step is."""
    meta = f"{node.expects} {node.message}".strip()
    low = meta.lower()
    slot = node.fills[0].name.replace("_", " ") if node.fills else ""
    subject = _subject(node) or slot
    digits = re.search(r"(\d+)[- ]digit", low)
    n = int(digits.group(1)) if digits else 0
    example = re.search(r"\blike\s+([A-Z][A-Z0-9-]*\d[A-Z0-9-]*|[A-Z]{2,}-?X{2,}[X0-9-]*|[A-Z]{2,}X+)", meta)
    if re.search(r"\b(yes or no|yes/no)\b", low):
        return InputSpec("yesno", subject, vocab=NO_ACCESS if HAVING.search(node.label) else [])
    if n and re.search(r"\b(phone|mobile)\b", low):
        return InputSpec("phone", subject, digits=n)
    if n or re.search(r"\b(otp|pin|passcode|code)\b", low):
        return InputSpec("otp", subject, digits=n or 6)
    if re.search(r"\b(phone|mobile)\b", f"{low} {slot}"):
        return InputSpec("phone", subject, digits=10, length_declared=False)
    if re.search(r"\be-?mail\b", low):
        return InputSpec("email", subject)
    if example:
        prefix, body = _split_example(example.group(1))
        return InputSpec("id", subject, prefix=prefix, body=body)
    return _loose_spec(low, slot, subject, categories, models, texts)


DECLARED = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$", re.I | re.S)


def spec_from_declared(node: Node, slot: str, declared: str, models: list[str],
                       vocab: dict[str, list[str]]) -> InputSpec:
    """What a valid answer is, from the type the author declared for the slot (``day:date``,
    ``code(16)``, ``one_of(print, ebook)``): read here from the declaration itself, not from the engine's
    reading of it. ``vocab``: the inventory's values by column, and its categories under "category"."""
    m = DECLARED.match(declared)
    kind, arg = (m.group(1).lower(), (m.group(2) or "").strip()) if m else ("text", "")
    subject = _subject(node) or slot.replace("_", " ")
    if kind == "email":
        return InputSpec("email", subject)
    if kind == "code":
        return InputSpec("otp", subject, digits=int(arg) if arg.isdigit() else 6)
    if kind == "phone":
        return InputSpec("phone", subject, digits=10, length_declared=False)
    if kind in ("id", "order_id", "account_id"):
        prefix, body = _split_example(arg) if arg else ("", "XXXXXXXX")
        return InputSpec("id", subject, prefix=prefix, body=body)
    if kind == "yes_no":
        return InputSpec("yesno", subject)
    if kind in ("money", "number", "choice", "date"):
        return InputSpec(kind, subject)
    if kind == "one_of":
        return InputSpec("option", subject, vocab=[v.strip() for v in arg.split(",") if v.strip()])
    if kind == "column":
        return InputSpec("option", subject, vocab=list(vocab.get(arg, [])))
    if kind == "category":
        return InputSpec("category", subject, vocab=list(vocab.get("category", [])))
    if kind in ("model", "brand"):
        return InputSpec("model", subject, vocab=models)
    return InputSpec({"name": "name", "username": "username", "free_text": "text"}.get(kind, "phrase"), subject)


def _loose_spec(low: str, slot: str, subject: str, categories: list[str], models: list[str],
                texts: list[str]) -> InputSpec:
    both = f"{low} {slot}"
    if re.search(r"\b(budget|price|amount|cost|spend)\b", both):
        return InputSpec("money", subject)
    if "categor" in both:
        eg = re.search(r"e\.g\.\s*(.+)$", low)
        examples = [w.strip(" .") for w in re.split(r",|\bor\b", eg.group(1))] if eg else []
        return InputSpec("category", subject, vocab=sorted(set(categories) | {e for e in examples if e}))
    if re.search(r"\bmodel\b", both) and models:
        return InputSpec("model", subject, vocab=models)
    if re.search(r"\b(recommended|one of the|choose|choice)\b", both):
        return InputSpec("choice", subject)
    if re.search(r"\bid\b", both):
        return InputSpec("id", subject, prefix="", body="XXXXXXXX")
    if re.search(r"\b(how many|number of|quantity|count)\b", both):
        return InputSpec("number", subject)
    listed = re.search(r"\bone of\s*:\s*(.+)$", low)
    if listed:
        options = [o.strip(" .") for o in re.split(r",|\bor\b", listed.group(1)) if o.strip(" .")]
        return InputSpec("option", subject, vocab=options)
    if re.search(r"\baddress\b", both):
        return InputSpec("address", subject)
    if re.search(r"\b(user ?name|login|handle)\b", both):
        return InputSpec("username", subject)
    if re.search(r"\bname\b", both):
        return InputSpec("name", subject)
    if DESCRIPTION.search(both):
        return InputSpec("text", subject, vocab=texts)
    return InputSpec("phrase", subject)


def _subject(node: Node) -> str:
    action = node.gar.action if node.gar else node.text
    m = SUBJECT.match(action.strip())
    text = m.group(1) if m else ""
    text = re.sub(r"^(?:their|your|the|his|her)\s+", "", text.strip(), flags=re.I)
    wh = EMBEDDED_QUESTION.match(text)
    if wh:  # "which country they are travelling to" -> "country"; "whether the sim was lost" -> the slot's name
        return (wh.group(1) or (node.fills[0].name.replace("_", " ") if node.fills else "")).lower()
    return text.strip(" .?").lower()


def _split_example(example: str) -> tuple[str, str]:
    m = re.match(r"^([A-Z]+-?)(.*)$", example)
    if m is None:
        return "", example
    prefix, rest = m.group(1), m.group(2)
    if prefix.endswith("X") and not rest:  # "LSTXXXXXXXXX": the prefix ends where the X run starts
        x = re.match(r"^(.*?)(X{2,})$", prefix)
        if x:
            return x.group(1), x.group(2)
    if rest == "" and "X" in prefix:
        return prefix.rstrip("X"), "X" * (len(prefix) - len(prefix.rstrip("X")))
    return prefix, re.sub(r"[0-9]", "9", rest)
