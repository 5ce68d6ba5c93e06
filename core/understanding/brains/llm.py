"""The LLM brain: any OpenAI-compatible model reads messages, picks branches and words replies, behind
the same interface as the rule brain; the engine, state, tools, permissions and invariants stay the same.

Two modes:

- ``hybrid`` (the default when an LLM is configured): the rules settle what they are sure of
  (``core.understanding.brains.hybrid``) and the model is asked only when they are not, so most turns make no call.
- ``llm``: the model reads every message and decides every plain-text branch.

In both, the model words the reply when the customer does not write English (the engine's replies
are English sentences built from the SOP, the GAR and the tool results).

Every model answer is parsed into typed commands and checked (``core.understanding.brains.commands``); an answer
that fails a check is sent back once with the reason, then the rule brain decides. A model that says
it cannot tell is not asked again. Every call is recorded in the turn's trace (``trace.llm``: purpose,
prompt, prompt tokens as reported by the server and as estimated, latency, outcome, commands, and the
slot values refused with why: ``refused``). When the rules read the message after the model's values were
refused, the perception's ``brain.refused`` lists them too.

When the endpoint cannot be used (refused connection, timeout after the bounded retries, HTTP 5xx, a
refused key) before the turn has done anything (no tool ran, no model answer was used), the turn is
abandoned: ``LLMUnavailableError`` reaches the orchestrator, which saves nothing and tells the customer.
If it fails later in a turn, the rule brain finishes that turn and the trace says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from core.shared.errors import LLMUnavailableError
from core.sop.graph import Node, Sop
from core.understanding.brains.base import Perception, TurnContext
from core.understanding.brains.cleaning import guess_language, strip_help_offers
from core.understanding.brains.commands import (
    Abstain,
    BranchPick,
    ChooseBranch,
    InvalidProposal,
    Reading,
    Say,
    Wording,
    check_branch,
    check_wording,
)
from core.understanding.brains.hybrid import branch_is_sure, free_text_ask, social, typed_answer
from core.understanding.brains.llm_client import ChatModel, LLMSettings, OpenAIChat
from core.understanding.brains.prompts import (
    TurnView,
    branch_messages,
    estimate_tokens,
    filled_slots,
    full_sop_messages,
    reading_messages,
    short,
    wording_messages,
)
from core.understanding.brains.reading_checks import ReadingResult, ReadingScope, check_reading
from core.understanding.brains.rule import RuleBrain
from core.understanding.commands import SmallTalk
from core.understanding.commerce import offered
from core.workspace.slots import SlotType

__all__ = ["LLMBrain", "LLMSettings", "OpenAIChat", "Mode"]

Mode = Literal["llm", "hybrid"]
R = TypeVar("R")
STRONG_INTENT = 0.75  # an exact trigger: the same bar the orchestrator uses to switch SOPs mid-question
UNSURE_MARGIN = 0.15  # a best intent this far below the threshold is not worth a call when it is a question


@dataclass
class _Turn:
    """What the brain keeps during one turn (per thread: turns of different sessions run in parallel)."""

    ctx: TurnContext
    language: str | None = None
    reading_key: tuple[str | None, str] | None = None  # (pending node, text) the proposed slots answer
    slots: dict[str, Any] = field(default_factory=dict)
    picks: dict[tuple[str, str, str], ChooseBranch | None] = field(default_factory=dict)
    offline: bool = False  # the endpoint failed earlier in this turn: the rules finish it
    used: int = 0  # model answers used this turn
    refused: list[dict[str, str]] = field(default_factory=list)  # the last call's refused slot values


class LLMBrain:
    """Interprets language with a chat model where it helps; the rule brain everywhere else."""

    def __init__(self, rule: RuleBrain, model: ChatModel, *, sops: list[Sop],
                 slot_types: dict[str, dict[str, SlotType]], startable: list[str] | None = None,
                 tools: set[str] | frozenset[str] = frozenset(), mode: Mode = "hybrid",
                 intent_threshold: float = 0.5) -> None:
        """Args:
            rule: the rule brain: the rules of the hybrid and the fallback of every failed proposal.
            model: the chat model (``OpenAIChat`` for a real endpoint; any ``ChatModel`` in tests).
            sops: the workspace's compiled SOPs.
            slot_types: each SOP's slot types (``core.engine.slot_typing.slot_types``), to check proposed values.
            startable: SOP ids an agent owns (a model may start only these); default all.
            tools: the tools the workspace has (a knowledge-base search is proposed only if it exists).
            mode: "hybrid" or "llm".
            intent_threshold: the orchestrator's intent threshold.
        """
        if mode not in ("llm", "hybrid"):
            raise ValueError(f"mode must be 'llm' or 'hybrid', got {mode!r}")
        self.rule = rule
        self.model = model
        self.mode: Mode = mode
        self.sops = {s.id: s for s in sops}
        self.slot_types = slot_types
        self.startable = list(startable) if startable is not None else list(self.sops)
        self.tools = frozenset(tools)
        self.intent_threshold = intent_threshold
        self._local = threading.local()

    def close(self) -> None:
        """Close the chat model's connections (an ``OpenAIChat``)."""
        close = getattr(self.model, "close", None)
        if callable(close):
            close()

    # ------------------------------------------------------------------ the turn
    def begin_turn(self, ctx: TurnContext) -> None:
        """A turn starts: forget the previous turn's readings."""
        self._local.turn = _Turn(ctx)

    def _turn(self) -> _Turn | None:
        return getattr(self._local, "turn", None)

    def _view(self, turn: _Turn, text: str) -> TurnView:
        goal = turn.ctx.state.active_goal
        sop = self.sops.get(goal.type) if goal is not None else None
        return TurnView(text, turn.ctx.state, self.sops, goal if sop is not None else None, sop)

    # ------------------------------------------------------------------ perception
    def perceive(self, text: str, sops: list[Sop], *, need_intents: bool = True) -> Perception:
        """The rule perception, replaced by the model's checked reading when the model is asked."""
        p = self.rule.perceive(text, sops, need_intents=need_intents)
        turn = self._turn()
        if turn is None or not text.strip():
            return p
        view = self._view(turn, text)
        turn.language = guess_language(text) or self._earlier_language(turn)
        likely = view.sop or (self.sops.get(p.intents[0][0]) if p.intents else None)
        p.brain = {"mode": self.mode, "language": turn.language or "en",
                   "baseline_tokens": estimate_tokens(full_sop_messages(view, likely), Reading)}
        if self.mode == "hybrid":
            sure, why = self._rules_sure(p, view, need_intents, turn.language)
            p.brain["reason"] = why
            if sure:
                p.brain["llm"] = "not needed"
                return p
        scope = ReadingScope(text, self.startable, view.pending,
                             self.slot_types.get(view.sop.id, {}) if view.sop else {},
                             offered(view.goal), self.tools, running=view.sop.id if view.sop else None,
                             filled=frozenset(filled_slots(view.goal)) if view.goal else frozenset(),
                             all_types=self.slot_types)
        result = self._ask("perceive", reading_messages(view), Reading, lambda r: check_reading(r, scope))
        if result is None:
            p.brain["llm"] = "fallback: rule"
            if turn.refused:  # the model's values that failed their checks, and why (the rules read the message)
                p.brain["refused"] = list(turn.refused)
            return p
        p.brain["llm"] = f"used: {result.act}"
        turn.language = result.language or turn.language
        p.brain["language"] = turn.language or "en"
        turn.reading_key = (view.goal.pending if view.goal else None, text)
        turn.slots = result.slots
        return _merge(p, result)

    def _rules_sure(self, p: Perception, view: TurnView, need_intents: bool, language: str | None) -> tuple[bool, str]:
        """Whether the rules settle this message, and why (or why not)."""
        if not need_intents:
            return True, "a well-formed answer to the pending question"
        pending = view.pending
        types = self.slot_types.get(view.sop.id, {}) if view.sop is not None else {}
        if pending is not None and view.goal is not None and typed_answer(
                pending, types, view.text, self.rule.correct(view.text), offered(view.goal)):
            return True, "a well-formed answer to the pending question"  # an id or a number reads in any language
        if language not in (None, "en"):
            return False, f"message in {language}: the rules read English only"
        if p.cancel or p.go_back:
            return True, "cancel or go-back words"
        best = p.intents[0] if p.intents else None
        other_sop = best is not None and (view.goal is None or best[0] != view.goal.type)
        if best is not None and other_sop and best[1] >= STRONG_INTENT:
            return True, f"an exact trigger of {best[0]} ({best[1]:.2f})"
        if social(p):
            return True, "a greeting or thanks"
        if pending is not None:
            if p.question:
                return True, "a question instead of an answer"
            if free_text_ask(pending, types):
                return True, "any text answers this question"
            return False, "the reply does not fit the pending question"
        if p.question and (best is None or best[1] < self.intent_threshold - UNSURE_MARGIN):
            return True, "a question for the knowledge base"
        return False, "no SOP trigger matches clearly"

    def _earlier_language(self, turn: _Turn) -> str | None:
        for m in reversed(turn.ctx.state.history):
            if m.role == "user":
                found = guess_language(m.text)
                if found:
                    return found
        return None

    # ------------------------------------------------------------------ answers
    def proposed_values(self, node: Node, text: str) -> dict[str, Any]:
        """The checked slot values of this turn's reading, if it read this reply to this question."""
        turn = self._turn()
        if turn is None or turn.reading_key != (node.id, text):
            return {}
        return dict(turn.slots)

    # ------------------------------------------------------------------ branches
    def branch(self, condition: str, observation: Any) -> bool:
        """Whether a plain-text condition holds; the model picks among all branches of the decision once."""
        turn = self._turn()
        found = self._decision(turn, condition) if turn is not None else None
        if turn is None or found is None:
            return self.rule.branch(condition, observation)
        goal_id, node, before = found
        conds = [b.condition for b in node.branches if b.condition is not None and not b.expr]
        if self.mode == "hybrid" and all(branch_is_sure(c, observation) for c in conds):
            return self.rule.branch(condition, observation)
        key = (goal_id, node.id, short(observation, 4000))
        if key not in turn.picks:
            turn.picks[key] = self._ask("branch", branch_messages(node, observation, before), BranchPick,
                                        lambda b: check_branch(b, node))
        pick = turn.picks[key]
        if pick is None:
            return self.rule.branch(condition, observation)
        return pick.condition == condition

    def _decision(self, turn: _Turn, condition: str) -> tuple[str, Node, str] | None:
        """The active goal's current decision, if it has this condition: (goal id, node, step before)."""
        goal = turn.ctx.state.active_goal
        sop = self.sops.get(goal.type) if goal is not None else None
        node = sop.node(goal.step) if sop is not None and goal is not None else None
        if goal is None or node is None or node.kind != "decision":
            return None
        if not any(b.condition == condition for b in node.branches):
            return None
        return goal.id, node, goal.memory[-1].action if goal.memory else ""

    # ------------------------------------------------------------------ wording
    def question(self, node: Node, slots: dict[str, Any]) -> str:
        """The question for an ask step (the model words the whole reply later, if at all)."""
        return self.rule.question(node, slots)

    def correct(self, text: str) -> str:
        """Typos of workspace words corrected (rules: the model's reading carries its own values)."""
        return self.rule.correct(text)

    def phrase(self, draft: str, *, ending: bool) -> str | None:
        """The reply worded in the customer's language when that is not English (the engine's replies
        are English sentences built from the SOP, the GAR and the tool results)."""
        turn = self._turn()
        if turn is None or not draft.strip() or (turn.language or "en") == "en":
            return None
        language = turn.language
        messages = wording_messages(draft, language, turn.ctx.trace.user, ending=ending)
        say = self._ask("phrase", messages, Wording, lambda w: check_wording(w, draft))
        if say is None:
            return None
        return strip_help_offers(say.text) if ending else say.text

    # ------------------------------------------------------------------ one model call
    def _ask(self, purpose: str, messages: list[dict[str, str]], schema: type[BaseModel],
             check: Callable[[Any], R]) -> R | None:
        """Ask the model, check its answer, retry once with the reason; None when the rules decide."""
        turn = self._turn()
        if turn is None or turn.offline:
            return None
        trace = turn.ctx.trace
        for attempt in (1, 2):
            turn.refused = []
            est = estimate_tokens(messages, schema)
            rec: dict[str, Any] = {"purpose": purpose, "attempt": attempt, "model": self.model.model,
                                   "endpoint": self.model.endpoint, "prompt": messages, "prompt_tokens_est": est}
            try:
                reply = self.model.complete(messages, schema)
            except LLMUnavailableError as exc:
                rec.update(outcome="unavailable", kind=exc.kind, error=exc.reason)
                trace.llm.append(rec)
                if not trace.tool_calls and not trace.denied and turn.used == 0:
                    rec["fallback"] = "turn abandoned: nothing saved"
                    raise
                turn.offline = True
                rec["fallback"] = "rule brain for the rest of this turn"
                return None
            rec.update(prompt_tokens=reply.prompt_tokens if reply.prompt_tokens is not None else est,
                       prompt_tokens_source="server" if reply.prompt_tokens is not None else "estimate",
                       completion_tokens=reply.completion_tokens, latency_ms=reply.latency_ms,
                       schema_sent=reply.schema_sent, response=reply.content[:2000])
            error = reply.error
            if reply.parsed is not None:
                try:
                    result = check(reply.parsed)
                except Abstain:
                    rec.update(outcome="abstained", fallback="rule brain")
                    trace.llm.append(rec)
                    return None
                except InvalidProposal as exc:
                    error = str(exc)
                    turn.refused = exc.refused
                    if exc.refused:
                        rec["refused"] = exc.refused
                else:
                    rec.update(outcome="accepted", commands=_commands(result))
                    trace.llm.append(rec)
                    turn.used += 1
                    return result
            rec.update(outcome="invalid", error=error)
            trace.llm.append(rec)
            if attempt == 2:
                rec["fallback"] = "rule brain"
                break
            messages = [*messages, {"role": "assistant", "content": reply.content[:1500] or "(empty)"},
                        {"role": "user", "content": f"That answer was rejected: {error}. Answer again with one "
                                                    "JSON object that follows the rules."}]
        return None


def _merge(p: Perception, result: ReadingResult) -> Perception:
    """The perception of a checked reading: the model's commands, which the orchestrator acts on as they
    are (the rules' intent scores kept for the trace, the dialogue flags mirroring the commands for the
    wording of replies)."""
    kinds = {c.kind for c in result.commands}
    acts = {c.act for c in result.commands if isinstance(c, SmallTalk)}
    start = result.start
    intents = [(start, 1.0)] + [(s, min(v, 0.5)) for s, v in p.intents if s != start] if start else p.intents
    return Perception(text=p.text, intents=intents, embedded=p.embedded, brain=p.brain,
                      question="knowledge_question" in kinds, cancel="cancel_goal" in kinds,
                      go_back="go_back" in kinds, correction="correct_slot" in kinds,
                      greeting="greeting" in acts, thanks="thanks" in acts,
                      search_query=result.search_query, commands=list(result.commands))


def _commands(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, ReadingResult):
        return [c.as_dict() for c in result.commands]
    if isinstance(result, ChooseBranch):
        return [result.as_dict()]
    if isinstance(result, Say):
        return [{"command": "say", "chars": len(result.text)}]
    return []
