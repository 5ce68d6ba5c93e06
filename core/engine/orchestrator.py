"""The orchestrator, the turn runner: loads state, perceives, has the message read, hands its commands to the
command processor (``core.engine.processor``: goals, agents, tools), finishes the reply (``core.engine.replying``)
and commits, re-running the turn after a conflict. The customer's preferences are read and written through
``core.engine.preferences``; open goals follow edited SOPs through ``core.engine.sop_edits``."""

from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from core.engine.explain import explain
from core.engine.flow import SpecialistAgent
from core.engine.goals import GoalOps, retire_finished
from core.engine.grounding import allowed_numbers
from core.engine.preferences import customer_key, safe_summary, write_preferences
from core.engine.processor.dispatch import CommandProcessor
from core.engine.processor.turn import Turn, say_to
from core.engine.replying import finish_reply
from core.engine.settings import Settings
from core.engine.sop_edits import reconcile
from core.language import text as T
from core.language.lexicons import language_names, language_of, readable
from core.language.replies import reset_voice, say, use_voice
from core.retrieval.embedding import one_vector_per_words
from core.shared.errors import LLMUnavailableError, SessionBusyError, StateConflictError
from core.shared.models import Message, SessionState, ToolCall, Trace, utcnow
from core.sop.graph import Sop
from core.state.memory.base import MemoryUnavailableError, PreferenceMemory, PreferenceSummary, apply_update
from core.state.sessions.base import StateStore, call_outcome, whole_session
from core.tools.gateway import ToolGateway, ToolScript
from core.tools.kb import KB_TOOL
from core.understanding import (
    OFFERED,
    Brain,
    Command,
    Commerce,
    ReadContext,
    Reading,
    RuleReader,
    TurnContext,
    begin_turn,
    extract_preferences,
    search_query,
)
from core.workspace.slots import Vocabulary

__all__ = ["MAX_MESSAGE_CHARS", "Orchestrator", "Turn", "search_query"]

log = logging.getLogger(__name__)
MAX_CONFLICT_RETRIES = 3
HISTORY_LIMIT = 40
SLOW_LOCK_S = 0.05  # a wait for the session's previous turn from which the trace mentions it


@dataclass
class TurnOutcome:
    """What one message led to (:meth:`Orchestrator.respond`)."""

    reply: str
    taken: bool = False  # committed; else nothing changed and the customer is asked to send it again
    kind: str = ""  # why it was not taken: busy, conflict, llm_unavailable
    state: SessionState | None = None  # the state the committed turn left
    attempts: int = 0  # 1, or more when the turn was re-run after losing a commit race

    @property
    def turn(self) -> int | None:
        return self.state.turn if self.state is not None else None


class Orchestrator:
    """The only component that loads/saves state, manages goals and executes tools."""

    def __init__(self, *, workspace_id: str, sops: list[Sop], agents: dict[str, SpecialistAgent],
                 sop_agent: dict[str, str], brain: Brain, gateway: ToolGateway, store: StateStore,
                 memory: PreferenceMemory, vocab: Vocabulary, currency: str, settings: Settings,
                 store_name: str = "", grounding_text: list[str] | None = None,
                 commerce: Commerce | None = None, greeting: str = "", languages: tuple[str, ...] = (),
                 aliases: dict[str, str] | None = None, polite_particle: str = "", handoff: str = "") -> None:
        self.workspace_id = workspace_id
        self.sops = {s.id: s for s in sops}
        self.agents = agents
        self.sop_agent = sop_agent
        self.brain = brain
        self.gateway = gateway
        self.store = store
        self.memory = memory
        self.vocab = vocab
        self.currency = currency
        self.settings = settings
        self.store_name = store_name
        self.commerce = commerce
        self.greeting = greeting
        self.aliases = T.Aliases(aliases or {})
        self.languages = languages
        self.polite_particle = polite_particle  # how the store's Thai sentences close (ครับ / ค่ะ)
        self.version = ""  # the workspace version answering, recorded in each trace (the playground sets it)
        self._sop_text_numbers = allowed_numbers([s.source for s in sops] + list(grounding_text or []))
        answers = next((a.env.answers for a in agents.values()), None)  # one reading of values, the agents' own
        self.reader = RuleReader(self.sops, self._sop_agent, brain, commerce, answers)  # what a message says
        self.processor = CommandProcessor(sops=self.sops, agent_of=self._sop_agent, gateway=gateway,
                                          max_steps=settings.max_steps_per_turn, commerce=commerce, greeting=greeting,
                                          handoff=handoff)
        self.processor.tools.before_change = lambda t, tool, args, key: self.store.note_side_effect(
            t.state.session_id, t.state.turn, key, tool, args, turn_id=t.trace.turn_id)
        self.processor.tools.after_change = lambda t, call: self.store.side_effect_outcome(
            t.state.session_id, t.trace.turn_id, call.key, call_outcome(call))

    def settle_side_effects(self) -> int:
        """Settle the tool runs that turns cut off left (a process killed mid-turn) in every session no turn is
        running in now: each stays under its own turn, a run cut off before its call returned marked unknown
        for a person to check. A session a turn holds is settled when its next turn opens it. Returns how
        many runs were settled."""
        count = 0
        for session_id in self.store.unsettled_side_effect_sessions():
            try:
                with self.store.session_lock(session_id, 0.0):
                    count += len(self.store.settle_side_effects(session_id))
            except SessionBusyError:
                continue  # a turn of it is running: its next turn settles it
        return count

    # ------------------------------------------------------------------ public API
    def handle_message(self, session_id: str, text: str, customer_id: str | None = None, *,
                       script: ToolScript | None = None) -> str:
        """Run one turn and return the reply (ARCHITECTURE.md §3)."""
        return self.respond(session_id, text, customer_id, script=script).reply

    def respond(self, session_id: str, text: str, customer_id: str | None = None, *,
                script: ToolScript | None = None) -> TurnOutcome:
        """Run one turn: the reply and, when the turn was committed, its number and the state it left
        (``taken`` False: the customer is asked to send the message again and nothing changed)."""
        started = time.perf_counter()
        cleaned = _sanitise(text)
        text = last_part(cleaned)
        cut = len(cleaned) if len(cleaned) > MAX_MESSAGE_CHARS else 0
        try:
            with self.store.session_lock(session_id, self.settings.turn_wait_s) as waited:
                return self._run_turn(session_id, text, customer_id, script, cut, started, waited)
        except SessionBusyError as exc:  # another turn of this session ran for too long: nothing changed
            return TurnOutcome(self._not_now(session_id, said=text, kind="busy", why=str(exc)), kind="busy")

    def _run_turn(self, session_id: str, text: str, customer_id: str | None, script: ToolScript | None,
                  cut: int, started: float, waited: float) -> TurnOutcome:
        """The turn under its session's lock: attempts (re-run from the stored state after a conflict, with
        this turn's tool results reused) until one commits."""
        cache: dict[str, list[ToolCall]] = {}
        deadline = time.monotonic() + self.settings.turn_deadline_s  # one per turn: its tool calls share it
        turn_id = uuid.uuid4().hex  # files this message's tool runs under it, whichever attempt commits
        self.store.settle_side_effects(session_id, turn_id)  # runs of turns cut off, filed under their own turns
        for attempt in range(1, MAX_CONFLICT_RETRIES + 2):
            try:
                with one_vector_per_words():  # the message is embedded once, whoever reads its words
                    turn = self._attempt(session_id, text, customer_id, script, cache, cut, deadline,
                                         turn_id=turn_id)
            except LLMUnavailableError as exc:  # before the turn did anything: nothing is saved
                log.warning("session %s: turn abandoned: %s", session_id, exc)
                return TurnOutcome(exc.chat_message, kind="llm_unavailable")
            finally:
                reset_voice()  # the turn's language stays with the turn
            turn.trace.attempts = attempt
            turn.trace.latency_ms = round((time.perf_counter() - started) * 1000, 2)
            if waited >= SLOW_LOCK_S:
                turn.trace.decisions.append(f"waited {waited:.2f}s for the session's previous turn")
            expected = turn.state.version
            turn.state.version += 1
            retire_finished(turn.state)  # finished goals the next turns no longer read: kept beside the session
            write_preferences(self.memory, turn, text)  # before the commit: a crash between them never loses it
            try:
                self.store.save(turn.state, expected, turn.trace)
            except StateConflictError as exc:
                if attempt > MAX_CONFLICT_RETRIES:
                    calls = [c.tool for runs in cache.values() for c in runs]
                    return TurnOutcome(self._not_now(session_id, said=text, kind="conflict", why=str(exc),
                                                     tool_calls=calls), kind="conflict")
                continue
            return TurnOutcome(turn.trace.reply, taken=True, state=turn.state, attempts=attempt)
        raise AssertionError("unreachable")

    def _not_now(self, session_id: str, *, said: str, kind: str, why: str, tool_calls: list[str] | None = None) -> str:
        """A turn that could not run or commit: the customer is asked to send the message again, and the
        session's incidents say what happened (the session itself is unchanged)."""
        log.warning("session %s: turn not taken (%s): %s", session_id, kind, why)
        try:
            self.store.note_incident(session_id, kind, {"message": said[:500], "why": why,
                                                        "tool_calls": tool_calls or []})
        except Exception as exc:  # noqa: BLE001 - the reply matters more than the note
            log.warning("session %s: incident not recorded: %s", session_id, exc)
        return say("busy", language_of(said))

    def close(self) -> None:
        """Release the brain's connections (an LLM server's); the stores are closed by their owner."""
        close = getattr(self.brain, "close", None)
        if callable(close):
            close()

    def load_state(self, session_id: str) -> SessionState | None:
        """The saved SessionState of a session, its retired goals included (None if unknown)."""
        return whole_session(self.store, session_id)

    def last_trace(self, session_id: str) -> dict[str, Any] | None:
        """The trace of the latest committed turn."""
        return self.store.last_trace(session_id)

    def preferences(self, customer_id: str) -> dict[str, Any]:
        """The preference summary agents receive (the last known one while the store is unreachable)."""
        try:
            return self.memory.summary(customer_id).model_dump()
        except MemoryUnavailableError as exc:
            return (exc.fallback or PreferenceSummary()).model_dump()

    # ------------------------------------------------------------------ one attempt
    def _attempt(self, session_id: str, text: str, customer_id: str | None, script: ToolScript | None,
                 cache: dict[str, list[ToolCall]], cut: int = 0, deadline: float = math.inf, *,
                 turn_id: str = "") -> Turn:
        """One try at the turn (re-run from the stored state after a conflict). ``cut``: the length of a
        message longer than MAX_MESSAGE_CHARS, of which only the last part is read (the reply says so)."""
        state = self.store.load(session_id) or SessionState(session_id=session_id, workspace_id=self.workspace_id,
                                                            customer_id=customer_id or "")
        if customer_id and not state.customer_id:
            state.customer_id = customer_id
        state.turn += 1
        cust = customer_key(state)
        prefs, memory_notes = safe_summary(self.memory, cust)
        trace = Trace(session_id=session_id, turn=state.turn, user=text, version=self.version, turn_id=turn_id)
        for run in self.store.side_effect_runs(session_id, state.turn):  # this turn's number, cut off before
            if run["turn_state"] != "lost":
                continue
            trace.decisions.append(f"an earlier attempt (turn {run['turn']}, never committed) called {run['tool']} "
                                   f"{json.dumps(run['args'], default=str)}: {_CUT_OFF[run['state']]} "
                                   f"(idempotency key {run['key']})")
        said, text = text, self.aliases.apply(text)  # the store's own words for the customer's ("เมาส์" -> Mouse)
        if text != said:
            trace.decisions.append(f"read with the store's words: {text!r}")
        update = extract_preferences(text, self.vocab)
        prefs = apply_update(prefs, update)
        begin_turn(self.brain, TurnContext(state, trace))
        trace.memory = {"customer_id": cust, "summary": prefs.model_dump(), "update": update.model_dump(),
                        **memory_notes}
        active = state.active_goal
        need_intents = not self.reader.clear_answer(active, text)
        perception = self.brain.perceive(text, list(self.sops.values()), need_intents=need_intents)
        trace.perception = perception.as_dict()
        language = _language(said, state)
        if self.languages and language not in self.languages:
            language = self.languages[0]
        t = Turn(state, trace, GoalOps(state), prefs, perception, script, cache, reading=Reading(language),
                 deadline=deadline)
        use_voice(language, self.polite_particle)  # every sentence of the turn in the customer's language
        if cut:
            trace.decisions.append(f"message of {cut} characters: only the last {len(text):,} read")
        state.history.append(Message(role="user", text=said, turn=state.turn))
        before = {gid: dict(g.slots) for gid, g in state.goals.items()}
        reconcile(t, self.sops)
        if readable(said, self.languages):
            self._route(t)
        else:  # written in a language the store does not take: say which it does, keep every goal as it is
            trace.act = "unsupported_language"
            names = language_names(self.languages)
            t.messages.append(say_to(t, "unsupported_language", languages=" / ".join(names)))
            if active is not None and active.next_question:
                t.messages.append(active.next_question)
        for goal in state.goals.values():
            if not goal.sop_version and goal.type in self.sops:
                goal.sop_version = self.sops[goal.type].version
        reply = finish_reply(t, self.brain, self.currency, self._sop_text_numbers)
        if cut:  # after the grounding check: the limit is the engine's number, not a claim about the store
            reply = f"{say_to(t, 'message_cut', limit=f'{len(said):,}')}\n\n{reply}"
        state.history.append(Message(role="assistant", text=reply, turn=state.turn))
        state.history = state.history[-HISTORY_LIMIT:]
        state.updated_at = utcnow()
        trace.reply = reply
        trace.reading = t.reading.as_dict()
        trace.stack_ops = t.ops.ops
        trace.slots = _slot_changes(before, state)
        trace.why = explain(trace.model_dump(mode="json"))
        return t

    # ------------------------------------------------------------------ reading, then acting
    def _route(self, t: Turn) -> None:
        """Read the message once into commands, then act on them (ARCHITECTURE.md §3a, docs/turn.md): a
        model's checked commands when it read the message (made whole by the rule reader), else the rule
        reader's. When the context drops every command a model read, the rules read the message."""
        c = self._context(t)
        commands: list[Command] = []
        if t.perception.commands:
            t.reading.reader = "model"
            kept = self.processor.check(t, t.perception.commands)
            if kept:
                commands = self.reader.complete(kept, c)
            else:
                t.trace.decisions.append("every command the model read was dropped: the rules read the message")
                t.reading.reader = "rules"
        if t.reading.reader == "rules":
            commands = self.reader.read_weighed(c)
        self.processor.act(t, commands)

    def _context(self, t: Turn) -> ReadContext:
        """What the rule reader may know of this turn besides the message."""
        state = t.state
        active = state.active_goal
        below = state.goals[state.goal_stack[-1]] if state.goal_stack else None
        said = [m.text for m in state.history[:-1] if m.role == "assistant"]
        goals, kb = self.processor.new_goals, self.processor.knowledge
        return ReadContext(t.perception, active, t.reading, t.trace.decisions, self.settings.intent_threshold,
                           just_finished=goals.just_finished(state),
                           last=goals.last_completed(state), below=below,
                           offered_more=bool(said) and T.offers_more(said[-1]),
                           kb_tool=self.gateway.tools.get(KB_TOOL) is not None,
                           kb_knows=lambda: kb.knows(t, self.reader.doubt_query(t.perception, active)),
                           kb_similarity=lambda: kb.similarity(t, self.reader.doubt_query(t.perception, active)),
                           prepared=lambda sop: goals.prepared(state, sop))

    def already_told(self, state: SessionState, sop: Sop) -> dict[str, Any]:
        """What the customer already said in this session that a new goal of ``sop`` asks for
        (:meth:`core.engine.processor.new_goals.NewGoals.already_told`)."""
        return self.processor.new_goals.already_told(state, sop)

    def _sop_agent(self, sop_id: str) -> SpecialistAgent | None:
        """The agent that runs an SOP (None when no agent is mapped to it)."""
        name = self.sop_agent.get(sop_id)
        return self.agents.get(name) if name else None


_CUT_OFF = {"unknown": "it may have gone through", "done": "it went through", "failed": "it failed",
            "not_sent": "it was not sent"}

MAX_MESSAGE_CHARS = 12_000  # a message is read whole up to this length (the README states it)


def last_part(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message as it is read: whole up to ``limit`` characters, else its last ``limit`` at most, from the start
    of a word (what is asked usually comes last)."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    if not text[-limit - 1].isspace():
        space = re.search(r"\s", tail[:200])
        tail = tail[space.end():] if space else tail
    return tail.lstrip()


def _slot_changes(before: dict[str, dict[str, Any]], state: SessionState) -> dict[str, dict[str, Any]]:
    """The slot values a turn set or changed, per goal type (the engine's own keys left out)."""
    out: dict[str, dict[str, Any]] = {}
    for gid, goal in state.goals.items():
        old = before.get(gid, {})
        changed = {k: v for k, v in goal.slots.items() if not k.startswith("_") and k != OFFERED
                   and (k not in old or old[k] != v)}
        if changed:
            out.setdefault(goal.type, {}).update(changed)
    return out


def _sanitise(text: str) -> str:
    """Strip control characters and bound the length of a customer message."""
    cleaned = "".join(ch for ch in str(text) if ch.isprintable() or ch in "\n\t")
    return cleaned.strip()


def _language(said: str, state: SessionState) -> str:
    """The language of a message, by its script; a message of nothing but names, ids and numbers in Latin
    letters ("Samsung Galaxy A15", "SP-1002", "15000") keeps the conversation's language."""
    for text in [said, *(m.text for m in reversed(state.history) if m.role == "user")]:
        language = language_of(text)
        if language != "en" or any(w in T.STOPWORDS or w in T.GENERAL_WORDS for w in T.words(text)):
            return language
    return "en"
