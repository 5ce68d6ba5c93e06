"""A language model as the simulated customer, and as the judge of soft criteria.

Both prompts are pinned: a versioned constant whose SHA-256 goes into the report with the model's name, so
two reports can be compared only when they were made with the same prompt and model. The model's answers
are read as JSON objects of a fixed schema (:mod:`core.understanding.brains.llm_client`); a malformed answer ends the
customer's side of the conversation, and a malformed verdict is reported as such, never guessed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from core.evaluation.persona_goals import bare
from core.evaluation.personas import Persona
from core.evaluation.scripted_customer import Heard
from core.understanding import ChatModel

CUSTOMER_PROMPT_VERSION = "customer-1"
CUSTOMER_PROMPT = """\
You play a customer writing to a shop's support chat, to test the shop's assistant before real customers \
use it. Stay in your role: write only the next message this customer would type, short and natural, in \
<<language>>. Never write the assistant's part.

Your goal: <<request>> (the assistant should handle it as: <<title>>).
What you know, as JSON (give a value when the assistant asks for it, or earlier when your manner says so; \
never make up other values, and say you do not know anything else you are asked):
<<facts>>
Your manner: <<manner>>.

When your goal has been reached, or the assistant clearly cannot help, set "done" to true (the message may \
then be a short goodbye, or empty).
Answer with one JSON object: {"message": "...", "done": false}"""

JUDGE_PROMPT_VERSION = "judge-1"
JUDGE_PROMPT = """\
You review one conversation between a customer and a shop's assistant. Judge only the assistant's messages.
- "polite": true when every assistant message is courteous and professional.
- "invented_facts": each statement of fact the assistant made (a price, a stock level, a date, a policy, an \
order's details) that is in neither the tool results below nor the customer's own words. An empty list when \
there are none; asking a question or saying it cannot help is not a fact.
- "notes": one sentence on what you saw.
Answer with one JSON object: {"polite": true, "invented_facts": [], "notes": "..."}"""


@dataclass(frozen=True)
class PinnedPrompt:
    """A prompt with its version; ``sha256`` identifies its exact text."""

    name: str
    version: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def describe(self, chat: ChatModel) -> dict[str, Any]:
        """What a report says about who played (or judged): the model, the endpoint, the pinned prompt."""
        return {"by": "llm", "model": chat.model, "endpoint": chat.endpoint, "prompt": self.name,
                "prompt_version": self.version, "prompt_sha256": self.sha256}


SIMULATOR = PinnedPrompt("customer", CUSTOMER_PROMPT_VERSION, CUSTOMER_PROMPT)
JUDGE = PinnedPrompt("judge", JUDGE_PROMPT_VERSION, JUDGE_PROMPT)
LANGUAGES = {"en": "English", "th": "Thai"}


class CustomerTurn(BaseModel):
    """The simulated customer's next message."""

    message: str = ""
    done: bool = False


class Verdict(BaseModel):
    """The judge's reading of one conversation."""

    polite: bool
    invented_facts: list[str] = Field(default_factory=list)
    notes: str = ""


@dataclass
class Judgement:
    """Soft criteria of one run (``error``: the judge's answer could not be read)."""

    polite: bool
    invented_facts: list[str]
    notes: str = ""
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and self.polite and not self.invented_facts

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "polite": self.polite, "invented_facts": self.invented_facts,
                "notes": self.notes, **({"error": self.error} if self.error else {})}


def customer_prompt(persona: Persona) -> str:
    """The pinned customer prompt filled in for one persona."""
    goal = persona.goal
    facts = {a.subject: (bare(a) if a.kind not in ("yesno", "choice") else a.value) for a in goal.answers}
    fill = {"language": LANGUAGES.get(goal.language, goal.language), "request": goal.request, "title": goal.title,
            "facts": json.dumps(facts, ensure_ascii=False, default=str), "manner": persona.description}
    text = CUSTOMER_PROMPT
    for key, value in fill.items():
        text = text.replace(f"<<{key}>>", value)
    return text


class LLMCustomer:
    """A persona played by a language model (``first()`` and ``next(heard, reply)``, like the scripted one)."""

    def __init__(self, chat: ChatModel, persona: Persona) -> None:
        self.chat = chat
        self.persona = persona
        self.system = customer_prompt(persona)
        self.transcript: list[tuple[str, str]] = []
        self.errors: list[str] = []

    def first(self) -> str:
        return self._ask() or self.persona.goal.request

    def next(self, heard: Heard, reply: str = "") -> str | None:
        self.transcript.append(("Assistant", reply))
        if heard.over and heard.done:
            return None  # the conversation is over: nothing left for the customer to do
        return self._ask()

    def _ask(self) -> str | None:
        shown = "\n".join(f"{who}: {text}" for who, text in self.transcript)
        user = ("Conversation so far:\n" + shown if shown else "The conversation has not started: write your "
                "first message.") + "\n\nYour next message, as the JSON object."
        answer = self.chat.complete([{"role": "system", "content": self.system}, {"role": "user", "content": user}],
                                    CustomerTurn)
        if answer.parsed is None:
            self.errors.append(answer.error)
            return None
        turn = answer.parsed
        if turn.done or not turn.message.strip():
            return None
        self.transcript.append(("Customer", turn.message.strip()))
        return turn.message.strip()


def judge_run(chat: ChatModel, turns: list[tuple[str, str]], traces: list[dict[str, Any]]) -> Judgement:
    """The judge's soft criteria for one conversation."""
    results = [{"tool": c.get("tool"), "args": c.get("args"), "result": c.get("result")}
               for t in traces for c in t.get("tool_calls") or [] if c.get("ok", True)]
    conversation = "\n".join(f"Customer: {u}\nAssistant: {r}" for u, r in turns)
    user = (f"Tool results:\n{json.dumps(results, ensure_ascii=False, default=str)[:6000]}\n\n"
            f"Conversation:\n{conversation}")
    answer = chat.complete([{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": user}], Verdict)
    if answer.parsed is None:
        return Judgement(False, [], error=answer.error or "no verdict")
    v = answer.parsed
    return Judgement(v.polite, list(v.invented_facts), v.notes)
