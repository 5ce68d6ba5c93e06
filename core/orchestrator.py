"""The orchestrator: loads state, perceives, schedules goals, runs agents, executes tools, commits."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from core import render
from core import text as T
from core.agents import AgentRunRequest, AgentRunResponse, SpecialistAgent
from core.brains.base import Brain, Perception, TurnContext, begin_turn, phrase
from core.domain.commerce import Commerce
from core.errors import LLMUnavailableError, StateConflictError
from core.goals import GoalOps
from core.grounding import allowed_numbers, session_sources, ungrounded, ungrounded_facts
from core.lexicons import language_names, language_of, readable
from core.memory.base import (
    MemoryUnavailableError,
    PreferenceMemory,
    PreferenceSummary,
    PreferenceUpdate,
    apply_update,
)
from core.models import Goal, GoalStatus, Message, SessionState, ToolCall, Trace, utcnow
from core.preferences import extract_preferences
from core.replies import say
from core.slots import Vocabulary, find_option
from core.sop.expr import lookup
from core.sop.graph import SESSION_SLOTS, Node, Sop
from core.store.base import StateStore
from core.tools.gateway import ToolGateway, ToolScript
from core.understanding import (
    Answer,
    CancelGoal,
    Command,
    CorrectSlot,
    FollowUp,
    GoBack,
    HumanHandoff,
    KnowledgeQuestion,
    Reading,
    SetSlots,
    Skip,
    SmallTalk,
    StartGoal,
    Unclear,
    value_words,
)
from core.understanding.rule_reader import ReadContext, RuleReader, explained_by

log = logging.getLogger(__name__)
MAX_CONFLICT_RETRIES = 3
HISTORY_LIMIT = 40
INTENT_MARGIN = 0.05
STRONG_INTENT = 0.75
KB_TOOL = "knowledge_base.search"
EXTERNAL_KNOWLEDGE = "seek external knowledge"  # the paper's action for answering a doubt from the KB


@dataclass
class Settings:
    """Engine settings (store.yaml ``settings`` may override them)."""

    max_steps_per_turn: int = 8
    intent_threshold: float = 0.5
    tool_timeout_s: float = 5.0


@dataclass
class Turn:
    """Working data of one turn attempt."""

    state: SessionState
    trace: Trace
    ops: GoalOps
    prefs: PreferenceSummary
    perception: Perception
    script: ToolScript | None
    cache: dict[str, list[ToolCall]]
    messages: list[str] = field(default_factory=list)
    reading: Reading = field(default_factory=Reading)
    requested: dict[str, int] = field(default_factory=dict)  # tool calls of this attempt, by tool and args
    kb: dict[str, ToolCall] = field(default_factory=dict)  # the knowledge base's answers, by query


class Orchestrator:
    """The only component that loads/saves state, manages goals and executes tools."""

    def __init__(self, *, workspace_id: str, sops: list[Sop], agents: dict[str, SpecialistAgent],
                 sop_agent: dict[str, str], brain: Brain, gateway: ToolGateway, store: StateStore,
                 memory: PreferenceMemory, vocab: Vocabulary, currency: str, settings: Settings,
                 store_name: str = "", grounding_text: list[str] | None = None,
                 commerce: Commerce | None = None, greeting: str = "", languages: tuple[str, ...] = (),
                 aliases: dict[str, str] | None = None) -> None:
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
        self._sop_text_numbers = allowed_numbers([s.source for s in sops] + list(grounding_text or []))
        self.reader = RuleReader(self.sops, self._sop_agent, brain, commerce)  # what a message says, by the rules

    # ------------------------------------------------------------------ public API
    def handle_message(self, session_id: str, text: str, customer_id: str | None = None, *,
                       script: ToolScript | None = None) -> str:
        """Run one turn and return the reply (ARCHITECTURE.md §3)."""
        started = time.perf_counter()
        cleaned = _sanitise(text)
        text = cleaned[:MAX_MESSAGE_CHARS]
        cut = len(cleaned) if len(cleaned) > MAX_MESSAGE_CHARS else 0
        cache: dict[str, list[ToolCall]] = {}
        for attempt in range(1, MAX_CONFLICT_RETRIES + 2):
            try:
                turn = self._attempt(session_id, text, customer_id, script, cache, cut)
            except LLMUnavailableError as exc:  # before the turn did anything: nothing is saved
                log.warning("session %s: turn abandoned: %s", session_id, exc)
                return exc.chat_message
            turn.trace.attempts = attempt
            turn.trace.latency_ms = round((time.perf_counter() - started) * 1000, 2)
            expected = turn.state.version
            turn.state.version += 1
            try:
                self.store.save(turn.state, expected, turn.trace)
            except StateConflictError:
                if attempt > MAX_CONFLICT_RETRIES:
                    raise
                continue
            self._write_preferences(turn, text)
            return turn.trace.reply
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Release the brain's connections (an LLM server's); the stores are closed by their owner."""
        close = getattr(self.brain, "close", None)
        if callable(close):
            close()

    def load_state(self, session_id: str) -> SessionState | None:
        """The saved SessionState of a session (None if unknown)."""
        return self.store.load(session_id)

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
                 cache: dict[str, list[ToolCall]], cut: int = 0) -> Turn:
        """One try at the turn (re-run from the stored state after a conflict). ``cut``: the length of a
        message longer than MAX_MESSAGE_CHARS, of which only the first part is read (the reply says so)."""
        state = self.store.load(session_id) or SessionState(session_id=session_id, workspace_id=self.workspace_id,
                                                            customer_id=customer_id or "")
        if customer_id and not state.customer_id:
            state.customer_id = customer_id
        state.turn += 1
        cust = self._customer(state)
        prefs, memory_notes = self._safe_summary(cust)
        trace = Trace(session_id=session_id, turn=state.turn, user=text)
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
        language = language_of(said)
        if self.languages and language not in self.languages:
            language = self.languages[0]
        t = Turn(state, trace, GoalOps(state), prefs, perception, script, cache, reading=Reading(language))
        if cut:
            trace.decisions.append(f"message of {cut} characters: only the first {MAX_MESSAGE_CHARS} read")
        state.history.append(Message(role="user", text=said, turn=state.turn))
        self._reconcile(t)
        if readable(said, self.languages):
            self._route(t)
        else:  # written in a language the store does not take: say which it does, keep every goal as it is
            trace.act = "unsupported_language"
            names = language_names(self.languages)
            t.messages.append(self._say(t, "unsupported_language", languages=" / ".join(names)))
            if active is not None and active.next_question:
                t.messages.append(active.next_question)
        for goal in state.goals.values():
            if not goal.sop_version and goal.type in self.sops:
                goal.sop_version = self.sops[goal.type].version
        reply = self._finish_reply(t)
        if cut:  # after the grounding check: the limit is the engine's number, not a claim about the store
            reply = f"{self._say(t, 'message_cut', limit=f'{MAX_MESSAGE_CHARS:,}')}\n\n{reply}"
        state.history.append(Message(role="assistant", text=reply, turn=state.turn))
        state.history = state.history[-HISTORY_LIMIT:]
        state.updated_at = utcnow()
        trace.reply = reply
        trace.reading = t.reading.as_dict()
        trace.stack_ops = t.ops.ops
        return t

    def _reconcile(self, t: Turn) -> None:
        """Bring open goals in line with SOPs edited since they started (the playground saves SOPs live).

        A goal whose SOP is gone ends; a goal whose SOP changed restarts its walk at the
        start node with its slots kept, so answered questions are not asked again.
        """
        for goal in t.state.goals.values():
            if goal.status == GoalStatus.DONE or not goal.sop_version:
                continue
            sop = self.sops.get(goal.type)
            if sop is None:
                if goal.id == t.state.active_goal_id:
                    t.ops.mark_done("sop removed")
                else:
                    goal.status = GoalStatus.DONE
                    goal.outcome = "sop removed"
                    t.state.goal_stack = [g for g in t.state.goal_stack if g != goal.id]
                t.trace.decisions.append(f"goal {goal.type} ended: its SOP no longer exists")
            elif goal.sop_version != sop.version:
                goal.sop_version = sop.version
                same_ask = next((n for n in sop.nodes.values() if goal.pending and n.asks
                                 and {f.name for f in n.fills} & set(goal.missing)), None)
                goal.attempts = {}
                if same_ask is not None:  # the pending question still exists: the reply answers it
                    goal.step = goal.pending = same_ask.id
                    t.trace.decisions.append(f"goal {goal.type} moved to {same_ask.label!r}: its SOP changed")
                else:
                    goal.step, goal.pending = sop.start, None
                    t.trace.decisions.append(f"goal {goal.type} restarted: its SOP changed (slots kept)")

    def _customer(self, state: SessionState) -> str:
        return state.customer_id or f"session:{state.session_id}"

    def _safe_summary(self, customer_id: str) -> tuple[PreferenceSummary, dict[str, Any]]:
        """Step 2: the customer's preference summary, and notes for ``trace.memory``.

        Updates earlier turns could not write are retried first. A memory outage never
        breaks a turn: the summary is then the store's last known one (or empty) and the
        notes say what failed and how many updates still wait.
        """
        notes: dict[str, Any] = {"store": self.memory.label}
        try:
            retried = self.memory.retry_pending(customer_id)
            if retried:
                notes["retried_updates"] = retried
        except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
            notes.update(error=str(exc), pending_updates=getattr(exc, "pending", 0))
        try:
            return self.memory.summary(customer_id), notes
        except MemoryUnavailableError as exc:
            notes.update(error=exc.message, pending_updates=exc.pending, summary_from="last known" if exc.fallback
                         else "none")
            return exc.fallback or PreferenceSummary(), notes
        except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
            notes.update(error=f"{type(exc).__name__}: {exc}", summary_from="none")
            return PreferenceSummary(), notes

    # ------------------------------------------------------------------ routing
    def _route(self, t: Turn) -> None:
        """Act on the message by precedence (ARCHITECTURE.md §3a); each branch records the command it read.
        A model's checked reading is acted on as it is (:meth:`_follow`)."""
        p = t.perception
        active = t.state.active_goal
        if p.commands and self._follow(t, p.commands):
            return
        c = self._context(t)
        lead = self.reader.lead(c)
        if isinstance(lead, CancelGoal) and active is not None:
            t.reading.add(lead)
            then = self.reader.asked_after_cancel(p, active, lead.evidence)
            self._cancel(t, active, resume=then is None)
            if then is not None:  # "forget it then. What's the weather in Chicago?": the new request next
                t.reading.add(StartGoal(evidence=p.text, sop=then.id, score=round(p.score(then.id), 3)))
                self._start_or_resume(t, then, t.state.active_goal)
            return
        if isinstance(lead, SmallTalk):
            t.reading.add(lead)
            self._leave(t)
            return
        if isinstance(lead, HumanHandoff):
            t.reading.add(lead)
            self._hand_off(t, active)
            return
        if active is None and T.asks_when(p.text) and self._search_follow_up(t):
            t.reading.add(FollowUp(evidence=p.text, about="search"))
            return
        wanted = self.reader.new_intent(c)
        target = self.sops[wanted[0]] if wanted is not None else None
        if target is not None:
            deferred: tuple[str, ...] = ()
            if active is None:
                target, deferred = self._several_requests(t, target)
            t.reading.add(StartGoal(evidence=p.text, sop=target.id, score=round(p.score(target.id), 3),
                                    deferred=deferred))
            self._start_or_resume(t, target, active)
            return
        if active is not None:
            self._continue(t, active)
            return
        self._no_goal(t)

    # ------------------------------------------------------------------ a model's commands
    def _follow(self, t: Turn, commands: list[Command]) -> bool:
        """Act on the commands a model read (each already checked against the SOPs, the GAR's slots and
        the tools) by the same precedence as the rules, without reading the message again: a command
        the context rules out is dropped with the reason; an answer to the pending question comes
        first; a cancel, a go-back or a hand-off that comes with an answer is dropped. False when
        nothing was left to act on (the rules read the message then)."""
        t.reading.reader = "model"
        active = t.state.active_goal
        kept = [c for c in commands if not self._refuse(t, c, active, commands)]
        first = next((c for c in kept if isinstance(c, CancelGoal | HumanHandoff)), None)
        if first is not None:
            t.reading.add(first)
            if isinstance(first, CancelGoal) and active is not None:
                self._cancel(t, active)
            else:
                self._hand_off(t, active)
            return True
        if active is not None and any(isinstance(c, SmallTalk) and c.act == "goodbye" for c in kept) \
                and not any(isinstance(c, Answer) for c in kept):
            t.reading.add(next(c for c in kept if isinstance(c, SmallTalk)))
            self._leave(t)
            return True
        moved = self._take_values(t, active, kept) if active is not None else None
        start = next((c for c in kept if isinstance(c, StartGoal)), None)
        if start is not None:
            t.reading.add(start)
            given: dict[str, Any] = {}
            for c in kept:
                if isinstance(c, SetSlots) and c.sop == start.sop:
                    given.update(c.values)
                    t.reading.add(c)
            self._start_or_resume(t, self.sops[start.sop], t.state.active_goal, given=given)
            return True
        if moved is not None:
            return moved
        return self._follow_rest(t, active, kept)

    def _refuse(self, t: Turn, c: Command, active: Goal | None, commands: list[Command]) -> bool:
        """Whether the context rules a model's command out; if so it is dropped, with the reason."""
        answers = any(isinstance(o, Answer) for o in commands)
        reason = ""
        if isinstance(c, Answer | CorrectSlot | SetSlots | GoBack | Skip | CancelGoal) and active is None:
            reason = "no request is running"
        elif isinstance(c, CancelGoal | GoBack | HumanHandoff | Skip) and answers:
            reason = "the message answers the pending question"
        elif isinstance(c, GoBack) and any(isinstance(o, CorrectSlot) for o in commands):
            reason = "the message gives the new value"
        elif isinstance(c, StartGoal) and (why := self._refuse_start(c, active)):
            reason = why
        elif isinstance(c, SmallTalk | Unclear) and any(not isinstance(o, SmallTalk | Unclear) for o in commands):
            reason = "the message also does something else"
        elif isinstance(c, SetSlots) and c.sop and (active is None or c.sop != active.type) and not any(
                isinstance(o, StartGoal) and o.sop == c.sop and not self._refuse_start(o, active) for o in commands):
            reason = "the SOP these values are for does not start"
        if reason:
            t.reading.drop(c, reason)
        return bool(reason)

    def _refuse_start(self, c: StartGoal, active: Goal | None) -> str:
        """Why a model's start_goal cannot be acted on ('' when it can)."""
        if active is not None and c.sop == active.type:
            return "that request is the one running"
        if self._sop_agent(c.sop) is None:
            return "no agent runs that SOP"
        return ""

    def _take_values(self, t: Turn, goal: Goal, kept: list[Command]) -> bool | None:
        """The values a model read for the running goal: corrections keep the place in the flow, values
        for later questions wait for them, an answer moves the flow on. True when the goal ran (or was
        asked again), None when the commands held no value for it."""
        sop, agent = self.sops.get(goal.type), self._agent(goal)
        if sop is None or agent is None:
            return None
        changed: list[str] = []
        for c in kept:
            if isinstance(c, CorrectSlot):
                changed += agent.apply_correction(goal, sop, {c.slot: c.value})
                t.reading.add(c)
            elif isinstance(c, SetSlots) and c.sop in ("", goal.type):
                new = {k: v for k, v in c.values.items() if goal.slots.get(k) in (None, "")}
                goal.slots.update(new)
                changed += list(new)
                t.reading.add(c)
        if changed:
            t.trace.decisions.append(f"values from the model's reading: {', '.join(changed)}")
        starts = any(isinstance(c, StartGoal) for c in kept)
        answer = next((c for c in kept if isinstance(c, Answer)), None)
        if answer is not None and goal.pending:
            if agent.accept_answer(goal, sop, t.perception.text, t.state.turn) is False:
                t.reading.drop(answer, "its values do not complete the pending question")
                if not starts:
                    self._invalid(t, goal, sop)
                    return True
            else:
                t.reading.add(answer)
        elif not changed:
            return None
        if not starts:
            self._run_active(t)
        return True

    def _follow_rest(self, t: Turn, active: Goal | None, kept: list[Command]) -> bool:
        """A go-back, a skip, a side question, a follow-up or small talk, read by a model."""
        c = kept[0] if kept else None
        sop = self.sops.get(active.type) if active is not None else None
        agent = self._agent(active) if active is not None else None
        if c is None:
            t.trace.decisions.append("every command the model read was dropped: the rules read the message")
            t.reading.reader = "rules"
            return False
        if active is not None and sop is not None and agent is not None and isinstance(c, GoBack | Skip):
            if isinstance(c, GoBack):  # the question to go back to: the one the command names, else the reader's
                target = next((n for n in sop.nodes.values() if n.asks and c.target in (n.id, n.label)), None) \
                    if c.target else None
                target = target or self.reader.go_back_target(active, c.evidence or t.perception.text)
                t.reading.add(GoBack(evidence=c.evidence, target=target.label) if target is not None else c)
                if target is not None:
                    agent.rewind(active, sop, target, t.state.turn, c.evidence)
                    t.trace.decisions.append(f"customer asked to go back: returning to {target.label!r}")
                    t.messages.append(self._say(t, "go_back"))
                    self._run_active(t)
                else:
                    self._reprompt(t, active)
            else:
                t.reading.add(c)
                if agent.skip_unanswerable(active, sop, t.perception.text, t.state.turn):
                    t.trace.decisions.append("customer cannot answer the pending question: taking the SOP's way "
                                             "for that")
                    self._run_active(t)
                else:
                    self._invalid(t, active, sop)
            return True
        if isinstance(c, KnowledgeQuestion | FollowUp) and active is not None and sop is not None and active.pending:
            self._doubt(t, active, sop)  # records the command it answers
            return True
        if isinstance(c, KnowledgeQuestion) and self.gateway.tools.get(KB_TOOL) is not None:
            t.reading.add(c)
            t.trace.act = "kb_answer"
            self._kb_answer(t, self._doubt_query(t, active), "orchestrator")
            return True
        if isinstance(c, FollowUp) and active is None and (self._search_follow_up(t) or self._reopen(t)):
            t.reading.add(c)
            return True
        t.reading.add(c)
        if active is not None and sop is not None and active.pending:
            self._invalid(t, active, sop)  # small talk while a question waits: answered, and asked again
        elif active is not None:
            self._run_active(t)
        else:
            self._no_goal(t)
        return True

    def _context(self, t: Turn) -> ReadContext:
        """What the rule reader may know of this turn besides the message."""
        last = self._last_completed(t)
        active = t.state.active_goal
        return ReadContext(t.perception, active, t.reading, t.trace.decisions, self.settings.intent_threshold,
                           just_finished=self._just_finished(t), finished=last[0].type if last is not None else "",
                           kb_knows=lambda: self._kb_knows(t, active))

    def _several_requests(self, t: Turn, target: Sop) -> tuple[Sop, tuple[str, ...]]:
        """A message asking for two things ("I'd like a canoe on Sunday. But first, how are the trails?"): the
        one wanted first (else the one chosen) starts now, the others wait on the stack in order."""
        now, later = self.reader.several_requests(t.perception.text, target.id)
        for sop_id in reversed(later):  # the earliest named resumes first
            t.ops.defer(self._fresh_goal(t, self.sops[sop_id]))
            t.trace.decisions.append(f"also asked for {sop_id}: it waits until {now} is done")
        return self.sops[now], later

    def _start_or_resume(self, t: Turn, sop: Sop, active: Goal | None, given: dict[str, Any] | None = None) -> None:
        """Start ``sop`` (or bring its waiting goal forward). ``given``: the values a model read for it (the
        rules read them from the message otherwise)."""
        waiting = next((t.state.goals[g] for g in t.state.goal_stack if t.state.goals[g].type == sop.id), None)
        if waiting is not None:
            t.ops.bring_forward(waiting)
            t.trace.decisions.append(f"customer returned to {sop.id}")
            self._volunteered(t, waiting, sop, opening=False, given=given)
            if waiting.pending:
                t.trace.act = "reprompt"
                self._reprompt(t, waiting)
            else:
                self._run_active(t)
            return
        goal = self._fresh_goal(t, sop)
        self._volunteered(t, goal, sop, opening=True, given=given)
        if given is None:
            self._referred_result(t, goal, sop, active)
        t.trace.decisions.append(f"new goal {sop.id} (priority {sop.priority})")
        if active is None:
            t.ops.activate(goal)
        elif goal.priority > active.priority:
            t.ops.suspend_and_activate(goal)
            t.trace.decisions.append(f"{sop.id} outranks {active.type}: suspend {active.type}")
        else:  # as a person would: the new request now, the current one waits where it was
            if active.pending:
                self._keep_answer(t, active)
            t.ops.suspend_and_activate(goal)
            why = "asked for while a question was pending" if active.pending else f"{active.type} waits for no answer"
            t.trace.decisions.append(f"{sop.id} now ({why}): suspend {active.type}")
        self._run_active(t)

    def _fresh_goal(self, t: Turn, sop: Sop) -> Goal:
        """A new goal of ``sop`` at its start, with what the session already told it (signed-in customer,
        earlier answers)."""
        goal = t.ops.new_goal(sop.id, sop.priority)
        goal.step = sop.start
        if t.state.customer_id:
            goal.slots.update({k: t.state.customer_id for k in SESSION_SLOTS & set(sop.slot_names())})
        told = self.already_told(t.state, sop)
        if told:
            goal.slots.update(told)
            for k in told:
                t.state.told.pop(k, None)
            t.trace.decisions.append(f"already told in this session: {', '.join(sorted(told))}")
        return goal

    def _referred_result(self, t: Turn, goal: Goal, sop: Sop, active: Goal | None) -> None:
        """"Please reserve the one you found" after a search found the Cedar Rest: a message that points back
        fills the new goal's listed questions from what the current goal's tools (else the goal finished last) found."""
        agent = self._sop_agent(sop.id)
        pointer = T.REFERS_BACK.search(t.perception.text)
        if agent is None or pointer is None:
            return
        source = active if active is not None else (found[0] if (found := self._last_completed(t)) else None)
        results = [v for v in source.slots.values() if isinstance(v, dict)] if source is not None else []
        if source is None or not results:
            return
        shown = [str(v) for r in results[-1:] for v in r.values() if isinstance(v, str) and v]
        filled: dict[str, str] = {}
        for name, st in agent.types(sop).items():
            if st.kind != "option" or goal.slots.get(name) not in (None, ""):
                continue
            hits = {hit for v in shown if (hit := find_option(v, st.vocab))}
            if len(hits) == 1:
                filled[name] = hits.pop()
        if filled:
            goal.slots.update(filled)
            t.reading.add(SetSlots(evidence=t.perception.text, values=dict(filled),
                                   words={k: pointer.group(0).strip() for k in filled}))
            t.trace.decisions.append(f"{', '.join(sorted(filled))} from what {source.type} found "
                                     f"(the message points back to it)")

    def _keep_answer(self, t: Turn, goal: Goal) -> None:
        """A message that answers the pending question and asks for something else ("2pm is good. Also,
        what's the weather?"): the answer is kept, so the question is not asked again on return."""
        sop, agent = self.sops.get(goal.type), self._agent(goal)
        node = sop.node(goal.pending) if sop is not None else None
        if sop is None or agent is None or node is None:
            return
        values = agent.answer_values(goal, sop, t.perception.text, typed_only=True)
        types = agent.types(sop)
        values = {k: v for k, v in values.items() if k in types and types[k].kind != "text"}
        merged = {**goal.slots, **values}
        if values and all(lookup(merged, p.name) not in (None, "") for p in node.fills if not p.optional):
            goal.slots.update(values)
            goal.pending, goal.next_question, goal.missing = None, "", []
            t.trace.decisions.append(f"answer kept for {goal.type}: {', '.join(sorted(values))}")

    def already_told(self, state: SessionState, sop: Sop) -> dict[str, Any]:
        """What the customer already said in this session that a new goal of ``sop`` asks for: their
        answers to this SOP's questions last time ("and what about Detroit?" keeps the day), yes/no
        confirmations and picks excepted, and their own name from any goal."""
        agent = self._sop_agent(sop.id)
        if agent is None:
            return {}
        types = agent.types(sop)
        asked = {p.name for n in sop.nodes.values() if n.asks for p in n.fills}
        keep = {k for k in asked if k in types and types[k].kind not in ("boolean", "choice")}
        names = [k for k in asked if k in types and types[k].person]
        out: dict[str, Any] = {}
        for old in sorted(state.goals.values(), key=lambda g: g.updated_at):  # the latest answer wins
            old_sop, old_agent = self.sops.get(old.type), self._agent(old)
            if old_sop is None or old_agent is None:
                continue
            given = {k: v for k, v in old.slots.items() if v not in (None, "")}
            if old.type == sop.id:
                out.update({k: v for k, v in given.items() if k in keep})
            old_types = old_agent.types(old_sop)
            person = next((v for k, v in given.items() if k in old_types and old_types[k].person), None)
            if person is not None:
                out.update({k: person for k in names})
        out.update({k: v for k, v in state.told.items() if k in keep and k not in out})
        return out

    def _keep_for_later(self, t: Turn, active: Goal) -> None:
        """Values the message gives for questions only other SOPs ask (:meth:`RuleReader.kept_for_later`):
        kept in the session for the goal that will ask for them."""
        for sop_id, kept in self.reader.kept_for_later(active, t.perception.text).items():
            t.state.told.update(kept)
            t.reading.add(SetSlots(evidence=t.perception.text, values=dict(kept),
                                   words=value_words(t.perception.text, kept)))
            t.trace.decisions.append(f"kept for {sop_id}: {', '.join(sorted(kept))}")

    def _volunteered(self, t: Turn, goal: Goal, sop: Sop, *, opening: bool,
                     given: dict[str, Any] | None = None) -> None:
        """The values the message gives for ``goal``: read by the rules, or ``given`` by a model's reading.
        A new value for a slot a waiting goal already used is a correction: the goal goes back to the step
        that first used it ("could we try booking again, but at the Hilton?")."""
        agent = self._agent(goal)
        if given is not None or agent is None:
            found = dict(given or {})
        else:
            found, unavailable = self.reader.values_for(goal, t.perception.text, opening=opening)
            goal.unavailable += [k for k in unavailable if k not in goal.unavailable]
        fixes = {k: v for k, v in found.items() if goal.slots.get(k) not in (None, "") and goal.slots.get(k) != v}
        if fixes and agent is not None and not opening:
            for k in agent.apply_correction(goal, sop, fixes):
                t.reading.add(CorrectSlot(evidence=t.perception.text, slot=k, value=goal.slots.get(k)))
            found = {k: v for k, v in found.items() if k not in fixes}
        goal.slots.update(found)
        if found and given is None:
            t.reading.add(SetSlots(evidence=t.perception.text, values=dict(found),
                                   words=value_words(t.perception.text, found)))

    def _continue(self, t: Turn, goal: Goal) -> None:
        """A message to the running goal: read first (:meth:`RuleReader.read_reply`), then acted on in the
        order of precedence: a go-back, a question the customer cannot answer, a side question, then
        corrections and the answer itself."""
        sop = self.sops[goal.type]
        agent = self._agent(goal)
        if agent is None:
            return
        p = t.perception
        if not goal.pending and self.reader.moves_on(p, goal) and _only_offers_left(agent, goal, sop):
            t.trace.decisions.append(f"{goal.type} done: the customer asks for more before it could offer it")
            t.ops.mark_done("completed")
            self._route(t)
            return
        self._keep_for_later(t, goal)
        r = self.reader.read_reply(goal, p)
        if r.go_back is not None:
            t.reading.add(GoBack(evidence=p.text, target=r.go_back.label))
            agent.rewind(goal, sop, r.go_back, t.state.turn, p.text)
            t.trace.decisions.append(f"customer asked to go back: returning to {r.go_back.label!r}")
            t.messages.append(self._say(t, "go_back"))
            self._run_active(t)
            return
        if r.unable and agent.skip_unanswerable(goal, sop, p.text, t.state.turn):
            t.reading.add(Skip(evidence=p.text, question=goal.pending or ""))
            t.trace.decisions.append("customer cannot answer the pending question: taking the SOP's way for that")
            self._run_active(t)
            return
        if r.doubt:
            self._doubt(t, goal, sop)
            return
        goal.unavailable += [k for k in r.unavailable if k not in goal.unavailable]
        accepted = agent.take_answer(goal, sop, r.answer, t.state.turn) if r.answer is not None else None
        pending = sop.node(r.answer.ask) if r.answer is not None else None
        if accepted and pending is not None:
            got = {f.name: goal.slots.get(f.name) for f in pending.fills if goal.slots.get(f.name) is not None}
            t.reading.add(Answer(evidence=p.text, question=pending.label, value=_plain(got)))
        if r.corrections:
            changed = agent.apply_correction(goal, sop, r.corrections)
            if changed:
                for k in changed:  # a filled slot changed, or a later step's slot given early
                    t.reading.add(CorrectSlot(evidence=p.text, slot=k, value=goal.slots.get(k)) if k in r.fixes
                                  else SetSlots(evidence=p.text, values={k: goal.slots.get(k)},
                                                words=value_words(p.text, {k: goal.slots.get(k)})))
                t.trace.decisions.append(f"correction: {', '.join(changed)} updated")
                accepted = True
        if accepted is False:
            t.reading.add(Unclear(evidence=p.text, why="does not answer the pending question"))
            self._invalid(t, goal, sop)
            return
        self._run_active(t)

    def _invalid(self, t: Turn, goal: Goal, sop: Sop) -> None:
        node = sop.node(goal.pending)
        p = t.perception
        social = _social_reply(p.text, p.greeting, p.thanks)
        if social:
            t.messages.append(social)
            t.trace.act = "reprompt"
            t.trace.decisions.append("small talk while a question is pending: asking it again")
            self._reprompt(t, goal)
            return
        if node is not None:
            expects = node.expects or "an answer to my question"
            t.messages.append(self._say(t, "didnt_catch", expects=_article(expects)))
        t.trace.decisions.append("answer did not fit the pending question: asking again")
        if node is not None:
            goal.step = node.id
            goal.pending = None
        self._run_active(t)

    def _cancel(self, t: Turn, goal: Goal, *, resume: bool = True) -> None:
        """End ``goal`` as the customer asked; the goal waiting under it comes back (asked again when
        ``resume``; not when the message goes on to ask for something else)."""
        sop = self.sops.get(goal.type)
        title = sop.title.lower() if sop else goal.type
        t.trace.decisions.append(f"customer cancelled {goal.type}")
        t.trace.act = "cancelled"
        t.messages.append(self._say(t, "cancelled", title=title))
        resumed = t.ops.mark_done("cancelled")
        if resumed is not None and resume:
            self._resume(t, resumed)

    def _hand_off(self, t: Turn, active: Goal | None) -> None:
        """The customer asks for a person: the session is marked for the team, every goal is kept as it is
        (the person picks up with what the customer said), and the customer is told so."""
        t.state.handoff_turn = t.state.turn
        t.trace.act = "human_handoff"
        t.trace.decisions.append("customer asked for a person: handed over to the team"
                                 + (f" with {active.type} open" if active is not None else ""))
        sop = self.sops.get(active.type) if active is not None else None
        t.messages.append(self._say(t, "handoff_with", title=sop.title.lower()) if sop is not None and sop.title
                          else self._say(t, "handoff"))

    def _leave(self, t: Turn) -> None:
        """The customer says goodbye with a request still open: close it and say goodbye."""
        while t.state.active_goal is not None:
            t.trace.decisions.append(f"customer left: {t.state.active_goal.type} closed")
            t.ops.mark_done("left")
        t.trace.act = "goodbye"
        t.messages.append(self._say(t, "goodbye"))

    def _resume(self, t: Turn, goal: Goal) -> None:
        if not self._announce_resume(t, goal):
            self._run_active(t)

    def _announce_resume(self, t: Turn, goal: Goal) -> bool:
        """Tell the customer we are back to a resumed goal; re-ask its question. True when it waits on one."""
        sop = self.sops.get(goal.type)
        if goal.memory or goal.pending or sop is None:
            back = self._say(t, "back_to")
            if not t.messages or t.messages[-1] != back:  # one goal resumed on the way to another: said once
                t.messages.append(back)
        else:  # a request that waited its turn and has not started yet
            t.messages.append(self._say(t, "other_request", title=sop.title.lower()))
        node = sop.node(goal.pending) if sop is not None and goal.pending else None
        if goal.pending:
            if node is not None and goal.next_question:
                t.trace.actions.append(node.label)  # the pending question, asked again
            self._reprompt(t, goal)
            return True
        return False

    def _reprompt(self, t: Turn, goal: Goal) -> None:
        if goal.next_question:
            t.messages.append(goal.next_question)

    # ------------------------------------------------------------------ doubts and follow-ups
    def _doubt(self, t: Turn, goal: Goal, sop: Sop) -> None:
        """Paper §3: answer a question asked instead of an answer, then ask the pending question again."""
        agent = self._agent(goal)
        text = t.perception.text
        pending = sop.node(goal.pending)
        question = (self.commerce.read(goal, text) if self.commerce is not None and agent is not None
                    and self.gateway.allowed(agent.name, self.commerce.search_tool) else None)
        if question is not None and agent is not None and self.commerce is not None:
            t.reading.add(FollowUp(evidence=text, about="items"))
            t.trace.actions.append(f"follow-up: {self.commerce.search_tool}")
            t.messages.append(self.commerce.answer(
                question, lambda tool, args: self._call(t, agent.name, tool, args), t.reading.language))
            step = ""
        else:
            query = self._doubt_query(t, goal)
            t.reading.add(KnowledgeQuestion(evidence=text, query=query))
            self._kb_answer(t, query, agent_name="orchestrator")
            t.trace.actions.append(EXTERNAL_KNOWLEDGE)
            step = EXTERNAL_KNOWLEDGE
        if agent is not None:
            agent.note_detour(goal, sop, text, t.state.turn, step)
        t.trace.decisions.append("doubt answered; pending question asked again")
        if pending is not None and goal.next_question:
            t.trace.actions.append(pending.label)
        self._reprompt(t, goal)

    def _kb_answer(self, t: Turn, text: str, agent_name: str) -> None:
        call = self._kb_search(t, text, agent_name)
        if call.ok and call.result:
            t.messages.append(render.render_kb_answer(call.result))
        else:
            t.messages.append(self._say(t, "kb_unsure"))

    def _kb_search(self, t: Turn, query: str, agent_name: str) -> ToolCall:
        """The knowledge base searched once per turn and query (a question is weighed, then answered)."""
        if query not in t.kb:
            t.kb[query] = self._call(t, agent_name, KB_TOOL, {"query": query}, system=True)
        return t.kb[query]

    def _kb_knows(self, t: Turn, goal: Goal | None) -> bool:
        """Whether the knowledge base answers the message as a doubt about ``goal``'s pending question."""
        if self.gateway.tools.get(KB_TOOL) is None:
            return False
        call = self._kb_search(t, self._doubt_query(t, goal), "orchestrator")
        return call.ok and bool(call.result)

    def _doubt_query(self, t: Turn, goal: Goal | None) -> str:
        """The message as a knowledge-base query, 'it' read as what the pending question asks for."""
        sop = self.sops.get(goal.type) if goal is not None else None
        pending = sop.node(goal.pending) if sop is not None and goal is not None and goal.pending else None
        return t.perception.search_query or search_query(t.perception.text, pending)

    def _no_goal(self, t: Turn) -> None:
        p = t.perception
        if T.is_hostile(p.text):
            t.trace.act = "capabilities"
            t.messages.append(self._say(t, "frustrated", capabilities=self._capabilities(t)))
        elif T.is_farewell(p.text) or (self._offered_more(t) and (p.thanks or T.declines_more(p.text))):
            t.trace.act = "goodbye"
            t.messages.append(self._say(t, "goodbye"))
        elif self._reopen(t):
            return
        elif p.greeting or T.GREETING.match(p.text):  # "Hello, I need some help!": no request yet
            t.trace.act = "greeting"
            t.messages.append(f"{self.greeting} {self._capabilities(t)}" if self.greeting
                              else self._say(t, "hello", capabilities=self._capabilities(t)))
        elif p.thanks and self._just_finished(t):  # the request is done and its SOP offered nothing more
            t.trace.act = "goodbye"
            t.messages.append(self._say(t, "welcome_bye"))
        elif p.thanks:
            t.trace.act = "thanks"
            t.messages.append(self._say(t, "welcome_more"))
        elif p.question and self.gateway.tools.get(KB_TOOL) is not None:
            t.trace.act = "kb_answer"
            self._kb_answer(t, self._doubt_query(t, None), "orchestrator")
        elif not p.question and self._just_finished(t):  # a reaction to what we just did ("Good idea.")
            t.trace.act = "offer_more"
            t.messages.append(self._say(t, "glad_more"))
        else:
            t.trace.act = "capabilities"
            t.messages.append(self._say(t, "not_sure", capabilities=self._capabilities(t)))

    @staticmethod
    def _just_finished(t: Turn) -> bool:
        """Whether a goal ended in the previous turn (the customer is likely answering its result)."""
        return any(g.status == GoalStatus.DONE and g.memory and g.memory[-1].turn >= t.state.turn - 1
                   for g in t.state.goals.values())

    @staticmethod
    def _offered_more(t: Turn) -> bool:
        """Whether our last message asked "anything else?" (a "no, thanks" to it closes the chat)."""
        said = [m.text for m in t.state.history[:-1] if m.role == "assistant"]
        return bool(said) and T.offers_more(said[-1])

    def _last_completed(self, t: Turn) -> tuple[Goal, Sop, SpecialistAgent] | None:
        """The goal completed last in this session, its SOP and its agent."""
        done = [g for g in t.state.goals.values() if g.status == GoalStatus.DONE and g.outcome == "completed"]
        last = max(done, key=lambda g: g.updated_at, default=None)
        sop = self.sops.get(last.type) if last is not None else None
        agent = self._agent(last) if last is not None else None
        return (last, sop, agent) if last is not None and sop is not None and agent is not None else None

    def _reopen(self, t: Turn) -> bool:
        """A follow-up that changes what the goal finished last used ("and for Friday?", "what about
        Detroit?") runs that SOP again with the change and everything else it knew. True when it did."""
        found = self._last_completed(t)
        p = t.perception
        if found is None or p.greeting or p.thanks:
            return False
        last, sop, agent = found
        said = agent.extract_volunteered(last, sop, p.text, opening=False)
        if not (p.question or T.is_request(p.text) or explained_by(p.text, said)):
            return False  # "well at least it's better in LA tomorrow": a comment, not a new request
        types = agent.types(sop)
        changed = sorted(k for k, v in said.items() if last.slots.get(k) != v and (
            last.slots.get(k) not in (None, "") or (k in types and types[k].kind not in ("text", "boolean"))))
        if not changed:
            return False
        goal = t.ops.new_goal(sop.id, sop.priority)
        names = set(sop.slot_names())
        goal.slots = {**{k: v for k, v in last.slots.items() if k in names}, **said}
        goal.step = sop.start
        t.ops.activate(goal)
        t.trace.decisions.append(f"follow-up to the finished {sop.id}: {', '.join(changed)} changed, running it again")
        self._run_active(t)
        return True

    def _search_follow_up(self, t: Turn) -> bool:
        """"When will it be nice again?" after a result: the SOP finished last runs again from its tool,
        over the next days or times, until a result answers (see ``SpecialistAgent.start_search``)."""
        found = self._last_completed(t)
        if found is None:
            return False
        last, sop, agent = found
        said = agent.extract_volunteered(last, sop, t.perception.text, opening=False)
        goal = t.ops.draft(sop.id, sop.priority)
        goal.slots = {k: v for k, v in last.slots.items() if not k.startswith("_")}
        wanted = agent.start_search(goal, sop, t.perception.text, given=said)
        if wanted is None:
            return False
        t.ops.add(goal)
        t.ops.activate(goal)
        t.trace.decisions.append(f"follow-up to the finished {sop.id}: looking up the next {wanted} values")
        self._run_active(t)
        return True

    def _capabilities(self, t: Turn | None = None) -> str:
        titles = [s.title[0].lower() + s.title[1:] for s in self.sops.values() if s.title]
        lang = t.reading.language if t is not None else "en"
        if not titles:
            return say("capabilities_none", lang)
        listed = ", ".join(titles[:-1]) + (" or " if len(titles) > 1 else "") + titles[-1]
        return say("capabilities", lang, titles=listed)

    @staticmethod
    def _say(t: Turn, key: str, **values: Any) -> str:
        """The engine's own sentence for a message intent, in the customer's language."""
        return say(key, t.reading.language, **values)

    # ------------------------------------------------------------------ running agents
    def _agent(self, goal: Goal) -> SpecialistAgent | None:
        return self._sop_agent(goal.type)

    def _sop_agent(self, sop_id: str) -> SpecialistAgent | None:
        """The agent that runs an SOP (None when no agent is mapped to it)."""
        name = self.sop_agent.get(sop_id)
        return self.agents.get(name) if name else None

    def _run_active(self, t: Turn) -> None:
        """Run the active goal; when it ends, resume the previous one (bounded)."""
        for _ in range(len(t.state.goals) + 2):
            goal = t.state.active_goal
            if goal is None:
                return
            resp = self._run_goal(t, goal)
            if not resp.done:
                return
            resumed = t.ops.mark_done(resp.outcome)
            if resumed is None or self._announce_resume(t, resumed):
                return

    def _run_goal(self, t: Turn, goal: Goal) -> AgentRunResponse:
        sop = self.sops[goal.type]
        agent = self._agent(goal)
        if agent is None:
            t.messages.append(self._say(t, "nobody"))
            return AgentRunResponse(done=True, outcome="failed")
        req = AgentRunRequest(goal, sop, t.prefs, turn=t.state.turn, others_waiting=bool(t.state.goal_stack))
        resp = agent.run(req)
        self._collect(t, resp, goal)
        passes = 0
        while resp.tool_requests and not resp.done and passes < self.settings.max_steps_per_turn:
            passes += 1
            results = [self._call(t, agent.name, r.tool, r.args) for r in resp.tool_requests]
            resp = agent.run(AgentRunRequest(goal, sop, t.prefs, tool_results=results, turn=t.state.turn,
                                             others_waiting=req.others_waiting))
            self._collect(t, resp, goal)
        if resp.tool_requests and not resp.done:
            goal.step = resp.tool_requests[0].node
        return resp

    def _collect(self, t: Turn, resp: AgentRunResponse, goal: Goal) -> None:
        t.messages += resp.messages
        t.trace.actions += resp.actions
        t.trace.path += [{"sop": goal.type, "goal": goal.id, "node": nid} for nid in resp.path]
        t.trace.decisions += resp.decisions

    def _call(self, t: Turn, agent: str, tool: str, args: dict[str, Any], system: bool = False) -> ToolCall:
        """One tool call through the gateway; on a re-run after a conflict, reuse this turn's result."""
        import json

        key = f"{tool}|{json.dumps(args, sort_keys=True, default=str)}"
        used = t.requested.get(key, 0)
        t.requested[key] = used + 1
        earlier = t.cache.get(key, [])
        if used < len(earlier):
            call = earlier[used].model_copy(update={"reused": True})
        else:
            call = self.gateway.call(agent, tool, args, script=t.script, system=system)
            t.cache.setdefault(key, []).append(call)
        if call.error_kind == "denied":
            t.trace.denied.append({"tool": tool, "agent": agent, "error": call.error})
        else:
            t.trace.tool_calls.append(call)
        return call

    # ------------------------------------------------------------------ reply and memory
    def _finish_reply(self, t: Turn) -> str:
        reply = "\n\n".join(m.strip() for m in t.messages if m and m.strip())
        if not reply:
            reply = self._say(t, "rephrase")
        sources = session_sources(t.state) + [c.result for c in t.trace.tool_calls]
        allowed = allowed_numbers(sources) | self._sop_text_numbers
        bad = ungrounded(reply, allowed)
        t.trace.grounding = {"checked": True, "ungrounded": bad}
        if bad:
            t.trace.grounding["replaced"] = True
            reply = self._grounded_fallback(t)
        reply = self._worded(t, reply, allowed, sources)
        if t.prefs.communication_style == "short":
            reply = reply.replace("\n\n", "\n")
        return reply

    def _worded(self, t: Turn, draft: str, allowed: set[float], sources: list[Any]) -> str:
        """An LLM brain may word the reply for the customer (their language). The grounding guard is
        code: a figure, id, email, link or menu path that neither the draft nor a tool result holds
        sends the draft (the template answer built from the tool results) instead, and the trace says so."""
        worded = phrase(self.brain, draft, ending=t.state.active_goal is None)
        if not worded or worded == draft:
            return draft
        bad: list[Any] = [*ungrounded(worded, allowed), *ungrounded_facts(worded, [draft, *sources])]
        t.trace.grounding["llm_reply"] = {"replaced": bool(bad), "ungrounded": bad}
        if bad:
            t.trace.grounding["llm_reply"]["text"] = worded
            return draft
        return worded

    def _grounded_fallback(self, t: Turn) -> str:
        for call in reversed(t.trace.tool_calls):
            if call.ok and render.is_item_list(call.result):
                return render.render_items(call.result, self.currency)
            if call.ok and render.is_kb_hits(call.result):
                return render.render_kb_answer(call.result)
        goal = t.state.active_goal
        return goal.next_question if goal and goal.next_question else "Let me check that and get back to you."

    def _write_preferences(self, t: Turn, text: str) -> None:
        """Step 9 (after the commit): write what the turn learned; an empty update is a no-op.

        A failure never breaks the turn. A store that queues updates (Zep) keeps this one and
        delivers it on a later turn (``_safe_summary`` retries and notes it in that turn's trace).
        """
        update = PreferenceUpdate(**{k: v for k, v in t.trace.memory.get("update", {}).items()})
        if update.is_empty():
            return
        try:
            self.memory.write(self._customer(t.state), update, session_id=t.state.session_id, turn=t.state.turn,
                              message=text)
        except Exception as exc:  # noqa: BLE001 - a memory outage never breaks a turn
            log.warning("preference update of session %s turn %d not written now: %s", t.state.session_id,
                        t.state.turn, exc)


MAX_MESSAGE_CHARS = 4000


def _plain(value: Any) -> Any:
    """A value as the trace shows it (one slot's value, or all of them)."""
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value.values()))
    return value


def _sanitise(text: str) -> str:
    """Strip control characters and bound the length of a customer message."""
    cleaned = "".join(ch for ch in str(text) if ch.isprintable() or ch in "\n\t")
    return cleaned.strip()


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



def _only_offers_left(agent: SpecialistAgent, goal: Goal, sop: Sop) -> bool:
    """Whether all a goal still has to do is offer more help ("Is there anything else?")."""
    resp = agent.run(AgentRunRequest(goal.model_copy(deep=True), sop, PreferenceSummary()))
    return resp.done and not resp.tool_requests and bool(resp.messages) and all(
        T.offers_more(m) for m in resp.messages)




def _social_reply(text: str, greeting: bool, thanks: bool) -> str:
    if T.is_hostile(text):
        return "I'm sorry this has been frustrating. I'm here to help."
    if greeting:
        return "Hello!"
    if thanks:
        return "You're welcome!"
    return ""



def _article(phrase: str) -> str:
    p = phrase.strip().rstrip(".")
    if p.lower().startswith(("a ", "an ", "the ", "one ", "your ")):
        return p[0].lower() + p[1:]
    return p
