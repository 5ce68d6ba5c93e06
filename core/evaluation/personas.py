"""Simulated customers for ``python -m core simulate``: a persona is a goal and a manner.

The goal is what the customer wants from one SOP and the values they know. It comes from the synthetic
evaluation's reference walk (:mod:`core.evaluation.walk`) with every answer valid and every tool call
succeeding: the values are the generator's (from the SOP's hints, slot types and the workspace's data), the
tool results it scripts are the world the customer lives in, and the steps it runs are the end the goal
wants. The manner is how the customer talks: its wording comes from the ``simulation`` section of the
language files (``core/language/lexicons/<language>.yaml``), never from a store's or an SOP's words.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from core.engine.build import Workspace
from core.evaluation.data import DataIndex
from core.evaluation.inputs import InputSpec, Phrasebook, opening
from core.evaluation.sop_context import SopContext
from core.evaluation.walk import TurnPlan, Walk
from core.language.lexicons import lexicons
from core.sop.graph import SESSION_SLOTS, Node
from core.workspace.config import bind_params

MANNERS: dict[str, str] = {
    "terse": "answers each question with the bare value and nothing else",
    "chatty": "wraps every message in pleasantries and thanks",
    "confused": "asks what each question means before answering it, then answers hesitantly",
    "changes_mind": "gives one value, then corrects it at the next question",
    "up_front": "gives every value it knows in its first message",
    "side_questions": "asks about something else the shop may know before answering",
    "thai": "writes in Thai",
}
THAI_SCRIPT = re.compile(r"[\u0E00-\u0E7F]")
COMPARED = frozenset({"email", "otp", "phone", "id", "username", "money", "number", "category", "option", "model"})
CHANGEABLE = frozenset({"email", "otp", "phone", "id", "money", "number", "category", "option", "model"})


@dataclass
class Answer:
    """A value the customer knows for one ask step of the SOP."""

    node: str  # the ask step's node id
    slots: list[str]
    kind: str  # the generator's reading of a valid answer (email, money, yesno, choice, ...)
    subject: str  # what it is, in words ("budget", "order id")
    value: Any
    said: str = ""  # how the reference customer said it
    opened: bool = False  # given by the request itself, never asked for

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.node, "slots": self.slots, "kind": self.kind, "subject": self.subject,
                "value": self.value, "in_request": self.opened}


@dataclass
class Goal:
    """What a customer wants from one SOP: the request, the values they know, and the end it should reach."""

    sop: str
    title: str
    language: str
    request: str
    answers: list[Answer]
    steps: list[str]  # the steps (not questions) the SOP should run for this customer, in order
    end: str  # the goal's outcome at the end: completed | failed
    script: dict[str, list[dict[str, Any]]]  # the tool results of the customer's world, in call order
    calls: list[tuple[str, dict[str, Any]]]  # (tool, the args it must carry) for every call the SOP makes
    kinds: dict[str, str]  # tool param -> the kind of value it is compared as
    customer_id: str | None = None

    def answer(self, node_id: str) -> Answer | None:
        return next((a for a in self.answers if a.node == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"sop": self.sop, "language": self.language, "request": self.request,
                "values": [a.to_dict() for a in self.answers], "steps": self.steps, "end": self.end,
                "calls": [{"tool": t, "args": a} for t, a in self.calls]}


@dataclass
class Persona:
    """A simulated customer: a goal and a manner."""

    name: str
    manner: str
    goal: Goal

    @property
    def description(self) -> str:
        return MANNERS[self.manner]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "manner": self.manner, "description": self.description, "goal": self.goal.to_dict()}


class _GoalWalk(Walk):
    """The generator's reference walk with every answer valid and every call succeeding, opened by one
    chosen request, remembering each answer and the args every call must carry."""

    def __init__(self, ctx: SopContext, rng: random.Random, budget: int, customer_id: str | None,
                 request: str) -> None:
        super().__init__(ctx, rng, budget, customer_id)
        self.request = request
        self.opened: dict[str, Any] = {}
        self.said: dict[str, str] = {}
        self.param_kinds: dict[str, str] = {}

    def start(self) -> TurnPlan:
        self.opened = self.ctx.volunteered(self.request)
        self.known.update(self.opened)
        return self._turn(self.request, "opening", lambda: None)

    def _answer_kind(self, spec: InputSpec) -> str:
        return "valid"

    def _outcome(self, node: Node) -> str:
        return "success"

    def _answer_valid(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        turn = super()._answer_valid(node, spec, kind)
        self.said[node.id] = turn.user
        return turn

    def _exact_args(self, node: Node, args: dict[str, Any]) -> dict[str, Any]:
        """The args a call must carry, by tool param: the values of kinds that can be compared (ids, amounts,
        listed options...; not free text, which a search joins into its query)."""
        impl = self.ctx.data.ws.tools.get(node.tool)
        mapping = bind_params(impl.spec.params, list(args)) if impl is not None else {k: k for k in args}
        out: dict[str, Any] = {}
        for param, slot in mapping.items():
            kind = "id" if slot in SESSION_SLOTS else self._kind(slot)
            named = param == slot or bool(set(param.split("_")) & set(slot.split("_")))  # not "k" <- a model
            if kind in COMPARED and named:
                out[param] = args[slot]
                self.param_kinds[param] = kind
        return out

    def _kind(self, slot: str) -> str:
        asker = next((n for n in self.sop.nodes.values() if n.asks and any(f.name == slot for f in n.fills)), None)
        return self.ctx.spec(asker).kind if asker is not None else ""


def goal_for(ctx: SopContext, request: str, language: str, rng: random.Random, budget: int,
             customer_id: str | None) -> Goal:
    """The goal of a customer who opens with ``request`` (one reference walk of the SOP)."""
    walk = _GoalWalk(ctx, rng, budget, customer_id, request)
    turns = [walk.start()]
    while walk.outcome is None and walk.pending is not None and len(turns) < 40:
        turns.append(walk.answer())
    sop = ctx.sop
    answers: list[Answer] = []
    for nid in [*dict.fromkeys(walk.answered), *(n for n in sop.nodes if n not in walk.answered)]:
        node = sop.nodes[nid]
        names = [p.name for p in node.fills if not p.optional or p.name in walk.known]
        if not node.asks or not names or not all(n in walk.known for n in names):
            continue
        spec = ctx.spec(node)
        answers.append(Answer(nid, names, spec.kind, spec.subject or names[0].replace("_", " "),
                              walk.known[names[0]], walk.said.get(nid, ""), nid not in walk.answered))
    asks = {n.label for n in sop.nodes.values() if n.asks}
    actions = [e.action for t in turns for e in t.expected]
    steps = list(dict.fromkeys(a for a in actions if a not in asks and ":" not in a))
    script: dict[str, list[dict[str, Any]]] = {}
    for t in turns:
        for tool, outcomes in t.tools.items():
            script.setdefault(tool, []).extend(_whole_row(ctx.data, tool, o) for o in outcomes)
    return Goal(sop.id, sop.title or sop.id, language, request, answers, steps,
                "failed" if walk.outcome == "graceful" else "completed", script,
                [(tool, args) for t in turns for tool, args in t.calls], walk.param_kinds, customer_id)


def _whole_row(data: DataIndex, tool: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """A scripted result of a table-backed tool with the rest of a table row that has its values (the
    reference walk keeps only the fields its branches read; the customer's world has the whole row, so a
    message that shows another field shows a real one)."""
    result = outcome.get("result")
    table = data.table_for(tool) if isinstance(result, dict) else None
    if table is None or not isinstance(result, dict):
        return outcome
    fits = [r for r in table.rows if all(str(r.get(k, v)).lower() == str(v).lower() for k, v in result.items()
                                         if k in table.columns and k not in data.params_of(tool))]
    if not fits:
        return outcome
    row = {k: _typed(v) for k, v in fits[0].items() if v != "" and k not in result}
    return {**outcome, "result": {**result, **row}}


def _typed(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text) if re.fullmatch(r"-?\d+\.\d+", text) else text


def _requests(triggers: list[str], language: str) -> list[str]:
    thai = [t for t in triggers if THAI_SCRIPT.search(t)]
    return thai if language == "th" else [t for t in triggers if t not in thai]


def make_personas(ws: Workspace, sops: list[str] | None = None, manners: list[str] | None = None,
                  seed: int = 7) -> tuple[list[Persona], list[str]]:
    """One persona per manner for each SOP (``sops``: ids, default every SOP), with one goal per SOP and
    language shared by its personas; and notes on the manners that do not apply (Thai for a store that
    does not take Thai, or an SOP with no Thai request; a change of mind with a single question).

    Raises:
        ValueError: an unknown SOP id or manner.
    """
    by_id = {s.id: s for s in ws.sops}
    wanted = sops or sorted(by_id)
    unknown = [s for s in wanted if s not in by_id]
    if unknown:
        raise ValueError(f"no SOP {unknown[0]!r} in this workspace (there are: {', '.join(sorted(by_id))})")
    chosen = manners or list(MANNERS)
    bad = [m for m in chosen if m not in MANNERS]
    if bad:
        raise ValueError(f"no manner {bad[0]!r} (there are: {', '.join(MANNERS)})")
    data = DataIndex(ws)
    titles = sorted({c.title for c in ws.kb.chunks}) if ws.kb is not None else []
    budget = int(ws.files.config.settings.get("max_steps_per_turn", 8))
    accepts = ws.files.config.languages
    personas: list[Persona] = []
    notes: list[str] = []
    for index, sop_id in enumerate(wanted):
        ctx = SopContext(by_id[sop_id], ws, data, titles)
        customer = f"sim-customer-{index:03d}" if any(SESSION_SLOTS & {p.name for p in n.params}
                                                      for n in ctx.sop.nodes.values()) else None
        goals: dict[str, Goal | None] = {}
        for manner in chosen:
            language = "th" if manner == "thai" else "en"
            if language not in goals:
                goals[language] = _goal(ctx, language, seed, budget, customer, accepts)
            goal = goals[language]
            why = _not_applicable(manner, goal, language, accepts)
            if why:
                notes.append(f"{manner} on {sop_id}: {why}")
                continue
            assert goal is not None
            personas.append(Persona(f"{manner}/{sop_id}", manner, goal))
    return personas, notes


def _goal(ctx: SopContext, language: str, seed: int, budget: int, customer: str | None,
          accepts: tuple[str, ...]) -> Goal | None:
    requests = _requests(ctx.sop.triggers, language)
    if language != "en" and (not requests or (accepts and language not in accepts)):
        return None
    rng = random.Random(f"{seed}:goal:{ctx.sop.id}:{language}")
    request = rng.choice(requests) if requests else f"I need help: {(ctx.sop.title or ctx.sop.id).lower()}"
    return goal_for(ctx, request.rstrip("?.!"), language, rng, budget, customer)


def _not_applicable(manner: str, goal: Goal | None, language: str, accepts: tuple[str, ...]) -> str:
    if goal is None:
        return ("the store does not take Thai (store.yaml languages)" if accepts and language not in accepts
                else "the SOP has no request written in Thai among its triggers")
    if manner == "changes_mind" and _decoy_answer(goal) is None:
        return "no value is asked for before another question, so there is nothing to take back"
    if manner == "up_front" and not [a for a in goal.answers if _up_front(a)]:
        return "the SOP asks for nothing that can be given up front"
    return ""


def _up_front(a: Answer) -> bool:
    return not a.opened and a.kind not in ("yesno", "choice")


def _decoy_answer(goal: Goal) -> Answer | None:
    """The value a mind-changing customer first gives wrongly, to take it back at the next question: one
    said in the request (where its words can be swapped) or asked for before another question."""
    said = [a for a in goal.answers if a.opened and _word(bare(a)).search(goal.request)]
    said += [a for a in goal.answers if not a.opened]
    asked = [i for i, a in enumerate(said) if not a.opened]
    return next((a for i, a in enumerate(said) if a.kind in CHANGEABLE and any(j > i for j in asked)), None)


def _word(text: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(text)}(?!\w)", re.I)



def side_topics(ws: Workspace) -> list[str]:
    """Topics of the knowledge base a customer may ask about on the side: its document titles that share no
    word with any SOP's triggers (a side question, not a request for another SOP); all of them when none is
    apart."""
    titles = sorted({c.title for c in ws.kb.chunks}) if ws.kb is not None else []
    said = {w[:5] for s in ws.sops for t in s.triggers for w in re.findall(r"[a-z]{4,}", t.lower())}
    apart = [t for t in titles if not {w[:5] for w in re.findall(r"[a-z]{4,}", t.lower())} & said]
    return apart or titles

# ---------------------------------------------------------------------------- the customer's words


def wording(language: str) -> dict[str, tuple[str, ...]]:
    """The ``simulation`` section of a language file (English for the keys it lacks)."""
    found = {lx.language: lx.section("simulation") for lx in lexicons()}
    return {**found.get("en", {}), **found.get(language, {})}


def bare(answer: Answer) -> str:
    """The value alone, as a customer types it."""
    value = answer.value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).lower() if answer.kind == "category" else str(value)


@dataclass
class Heard:
    """What the customer sees after the agent's reply: the question of their SOP waiting for them, another
    SOP the agent went to instead, or the end of the conversation (nothing active)."""

    pending: Node | None = None
    elsewhere: str | None = None
    over: bool = False
    done: bool = False  # the customer's SOP has ended


@dataclass
class ScriptedCustomer:
    """A persona played by rules: every message from the goal, the manner and the language file's wording."""

    persona: Persona
    ctx: SopContext
    rng: random.Random
    kb_titles: list[str] = field(default_factory=list)
    queue: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # asks already put to the customer once
    puzzled: set[str] = field(default_factory=set)  # asks a confused customer asked about first
    redirects: int = 0
    decoy: Answer | None = None
    decoy_text: str = ""
    decoy_said: bool = False
    corrected: bool = False

    def __post_init__(self) -> None:
        self.book = Phrasebook(self.rng)
        self.words = wording(self.persona.goal.language)
        if self.persona.manner == "changes_mind":
            self.decoy = _decoy_answer(self.persona.goal)

    def pick(self, key: str) -> str:
        return self.book.pick(list(self.words.get(key) or ("{v}",)))

    def first(self) -> str:
        """The opening message."""
        goal, manner = self.persona.goal, self.persona.manner
        if manner in ("terse", "thai"):
            return goal.request
        request = goal.request
        if self.decoy is not None and self.decoy.opened:  # says another value first, takes it back later
            request = _word(bare(self.decoy)).sub(self._decoy_value(self.decoy), request, count=1)
        said = opening(self.rng, goal.title, [request])
        if self.decoy is not None and self.decoy.opened and _word(self._decoy_value(self.decoy)).search(said):
            self.decoy_said = True
        if manner == "chatty":
            return f"{self.pick('chatty_lead')} {said}. {self.pick('chatty_tail')}"
        if manner == "up_front":
            parts = [self.pick("up_front").replace("{s}", a.subject).replace("{v}", bare(a))
                     for a in goal.answers if _up_front(a)]
            return said.rstrip("!?.") + ". " + self.pick("up_front_join").join(parts)
        return said

    def next(self, heard: Heard, reply: str = "") -> str | None:
        """The next message, or None when the customer has nothing more to say (``reply``, the agent's last
        message, is not read: what the customer hears is in ``heard``)."""
        if heard.done or (heard.over and heard.pending is None and self.redirects >= 2):
            return None
        if heard.elsewhere or (heard.over and not heard.done):
            if self.redirects >= 2:
                return None
            self.redirects += 1
            return self.pick("redirect").replace("{t}", self.persona.goal.request)
        if heard.pending is None:
            return None
        if self.queue:
            return self.queue.pop(0)
        return self._answer(heard.pending)

    def _answer(self, node: Node) -> str:
        manner, first_time = self.persona.manner, node.id not in self.seen
        self.seen.add(node.id)
        answer = self.persona.goal.answer(node.id)
        if answer is None:  # a question the goal did not expect: any valid answer
            return self.book.valid(self.ctx.spec(node), {})[0]
        if manner == "confused" and node.id not in self.puzzled:
            self.puzzled.add(node.id)
            return self.pick("confused").replace("{s}", answer.subject)
        if manner == "side_questions" and first_time and self.kb_titles and len(self.seen) <= 2:
            self.queue.append(self._say(answer))
            topic = self.book.pick(self.kb_titles).rstrip("?.").lower()
            return self.pick("side_question").replace("{q}", topic)
        if manner == "changes_mind" and self.decoy is not None and not self.corrected:
            if answer is self.decoy and not self.decoy_said:
                self.decoy_said = True
                return self._say(answer, self._decoy_value(answer))
            if answer is not self.decoy and self.decoy_said:
                self.corrected = True
                self.queue.append(self._say(answer))
                return (self.pick("mind_change").replace("{s}", self.decoy.subject)
                        .replace("{v}", bare(self.decoy)).replace("{old}", self._decoy_value(self.decoy)))
        return self._say(answer)

    def _say(self, answer: Answer, value: str | None = None) -> str:
        """An answer worded in the persona's manner."""
        manner, v = self.persona.manner, value if value is not None else bare(answer)
        if answer.kind == "yesno":
            return self.pick("yes" if answer.value is not False else "no")
        if answer.kind == "choice":
            return self.pick("decline") if answer.value is False else self.pick("pick").replace("{v}", v)
        if manner in ("terse", "up_front"):
            return v
        if manner == "confused":
            return self.pick("confused_answer").replace("{v}", v)
        text = self.pick("answer").replace("{s}", answer.subject).replace("{v}", v)
        if manner == "chatty":
            return f"{self.pick('chatty_lead')} {text}. {self.pick('chatty_tail')}"
        return text

    def _decoy_value(self, answer: Answer) -> str:
        """Another value of the same kind (first given, then taken back); the same one each time."""
        if not self.decoy_text:
            spec = self.ctx.spec(self.ctx.sop.nodes[answer.node])
            others = [v for v in spec.vocab if str(v).lower() != str(answer.value).lower()]
            text = bare(answer)
            for _ in range(8):
                text = self.book.pick(others) if others else self.book.value(spec, {})[0]
                if text.lower() != bare(answer).lower():
                    break
            self.decoy_text = text.lower() if answer.kind == "category" else text
        return self.decoy_text
