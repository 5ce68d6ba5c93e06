"""The command processor: acts on the commands a message was read into, the only code that changes goals.

Both readers hand it the same typed commands (``core.understanding``): the rule reader's, or a model's
after the checks of ``core.understanding.brains.commands`` and :meth:`CommandProcessor.check` (which drops, with the
reason, a command the context rules out). It never looks at the customer's text: what it needs to act
(an answer's values, the question a go-back returns to, a follow-up's values, a side question's query)
the reader put in the command. It starts, suspends, resumes and ends goals through ``GoalOps``, runs the
active goal's steps through its agent (the flow executor, ``core.engine.flow``) with tools through the
gateway, and writes message intents as sentences from the reply catalogue of the customer's language.
Precedence: ARCHITECTURE.md §3a and docs/turn.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.engine.flow import AgentRunRequest, AgentRunResponse, SpecialistAgent
from core.engine.goals import GoalOps
from core.language import render
from core.language import text as T
from core.language.replies import say
from core.shared.models import Goal, GoalStatus, SessionState, ToolCall, Trace
from core.sop.graph import SESSION_SLOTS, Node, Sop
from core.state.memory.base import PreferenceSummary
from core.tools.gateway import ToolGateway, ToolScript
from core.tools.kb import KB_TOOL
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
)
from core.understanding.brains.base import Perception
from core.understanding.domain.commerce import Commerce
from core.understanding.mentions import find_option
from core.understanding.signals import NOT_KEPT
from core.workspace.slots import PERSONAL_KINDS

EXTERNAL_KNOWLEDGE = "seek external knowledge"  # the paper's action for answering a doubt from the KB


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
    computed: list[str] = field(default_factory=list)  # figures the SOP's own expressions computed from sources
    partial: list[str] = field(default_factory=list)  # values a partial answer gave to a question asking several


class CommandProcessor:
    """Acts on one message's commands for a workspace: its SOPs, the agents that run them, the gateway."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 gateway: ToolGateway, max_steps: int, commerce: Commerce | None = None, greeting: str = "",
                 handoff: str = "") -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.gateway = gateway
        self.max_steps = max_steps
        self.commerce = commerce
        self.greeting = greeting
        self.handoff = handoff  # the tool that reaches a person (store.yaml ``handoff:``); "" when none
        # records a side-effecting call as intended before it runs (the orchestrator's store)
        self.before_change: Callable[[Turn, str, dict[str, Any], str], None] | None = None

    # ------------------------------------------------------------------ checking a model's commands
    def check(self, t: Turn, commands: list[Command]) -> list[Command]:
        """A model's commands the context allows; the others are dropped, with the reason."""
        active = t.state.active_goal
        return [c for c in commands if not self._refuse(t, c, active, commands)]

    def _refuse(self, t: Turn, c: Command, active: Goal | None, commands: list[Command]) -> bool:
        answers = any(isinstance(o, Answer) for o in commands)
        reason = ""
        if isinstance(c, Answer | CorrectSlot | GoBack | Skip | CancelGoal) and active is None \
                or isinstance(c, SetSlots) and active is None and not c.sop:
            reason = "no request is running"
        elif isinstance(c, CancelGoal | GoBack | HumanHandoff | Skip) and answers:
            reason = "the message answers the pending question"
        elif isinstance(c, GoBack) and any(isinstance(o, CorrectSlot) for o in commands):
            reason = "the message gives the new value"
        elif isinstance(c, StartGoal) and (why := self._refuse_start(c, active)):
            reason = why
        elif isinstance(c, SmallTalk | Unclear) and any(not isinstance(o, SmallTalk | Unclear) for o in commands):
            reason = "the message also does something else"
        elif isinstance(c, SetSlots) and c.sop and c.sop not in self.sops:
            reason = "no such SOP"
        if reason:
            t.reading.drop(c, reason)
        return bool(reason)

    def _refuse_start(self, c: StartGoal, active: Goal | None) -> str:
        """Why a start_goal cannot be acted on ('' when it can)."""
        if active is not None and c.sop == active.type:
            return "that request is the one running"
        if self.agent_of(c.sop) is None:
            return "no agent runs that SOP"
        return ""

    # ------------------------------------------------------------------ acting, by precedence
    def act(self, t: Turn, commands: list[Command]) -> None:
        """Act on one message's commands in the order of precedence: a cancellation or a hand-off, a
        goodbye, a follow-up to the request finished last, a request for an SOP, then what the message
        does to the running goal (or, with none running, its small talk or question)."""
        active = t.state.active_goal
        if t.reading.closes and active is not None and active.type == t.reading.closes:
            t.trace.decisions.append(f"{active.type} done: the customer asks for more before it could offer it")
            t.ops.mark_done("completed")
            active = t.state.active_goal
        start = _first(commands, StartGoal)
        lead = next((c for c in commands if isinstance(c, CancelGoal | HumanHandoff)), None)
        if isinstance(lead, CancelGoal) and active is not None:
            t.reading.add(lead)
            self._cancel(t, active, resume=start is None)
            if start is not None:  # "forget it then. What's the weather in Chicago?": the new request next
                self._start(t, start, commands, t.state.active_goal)
            return
        if isinstance(lead, HumanHandoff):
            t.reading.add(lead)
            self._hand_off(t, active)
            return
        goodbye = next((c for c in commands if isinstance(c, SmallTalk) and c.act == "goodbye"), None)
        if active is not None and goodbye is not None and _first(commands, Answer) is None:
            t.reading.add(goodbye)
            self._leave(t)
            return
        follow = next((c for c in commands if isinstance(c, FollowUp) and c.about in ("reopen", "search")), None)
        if follow is not None and active is None and self._follow_up(t, follow):
            t.reading.add(follow)
            return
        self._keep_for_later(t, commands, start)
        if start is not None:
            self._start(t, start, commands, active)
        elif active is not None:
            self._continue(t, active, commands)
        else:
            self._no_goal(t, commands)

    def _keep_for_later(self, t: Turn, commands: list[Command], start: StartGoal | None) -> None:
        """Values for an SOP neither running nor starting: kept in the session for the goal that will ask
        for them (listed options, dates, numbers, ids; not free text, a yes/no or a pick)."""
        active = t.state.active_goal
        for c in commands:
            if not isinstance(c, SetSlots) or not c.sop or c.sop in (start.sop if start else "",
                                                                       active.type if active else ""):
                continue
            agent = self.agent_of(c.sop)
            types = agent.types(self.sops[c.sop]) if agent is not None else {}
            kept = {k: v for k, v in c.values.items() if k in types and types[k].kind not in NOT_KEPT}
            if not kept:
                t.reading.drop(c, "the SOP these values are for does not start, and keeps no such values")
                continue
            t.state.told.update(kept)
            t.reading.add(c)
            t.trace.decisions.append(f"kept for {c.sop}: {', '.join(sorted(kept))}")

    # ------------------------------------------------------------------ starting a goal
    def _start(self, t: Turn, c: StartGoal, commands: list[Command], active: Goal | None) -> None:
        """Start the SOP asked for (or bring its waiting goal forward) with the values the message gives it;
        an answer to the running goal's pending question given beside the request is kept first."""
        answer = _first(commands, Answer)
        if answer is not None and active is not None and active.pending:
            self._keep_answer(t, active, answer)
        for sop_id in reversed(c.deferred):  # the earliest named resumes first
            t.ops.defer(self._fresh_goal(t, self.sops[sop_id]))
            t.trace.decisions.append(f"also asked for {sop_id}: it waits until {c.sop} is done")
        t.reading.add(c)
        given = [s for s in commands if isinstance(s, SetSlots) and s.sop == c.sop]
        sop = self.sops[c.sop]
        waiting = t.state.waiting_goal(sop.id)
        if waiting is not None:
            t.ops.bring_forward(waiting)
            t.trace.decisions.append(f"customer returned to {sop.id}")
            self._given(t, waiting, sop, given, opening=False)
            if waiting.pending:
                t.trace.act = "reprompt"
                self._reprompt(t, waiting)
            else:
                self._run_active(t)
            return
        goal = self._fresh_goal(t, sop)
        self._given(t, goal, sop, given, opening=True)
        if c.points_back:
            self._referred_result(t, goal, sop, active, c)
        t.trace.decisions.append(f"new goal {sop.id} (priority {sop.priority})")
        if active is None:
            t.ops.activate(goal)
        elif goal.priority > active.priority:
            t.ops.suspend_and_activate(goal)
            t.trace.decisions.append(f"{sop.id} outranks {active.type}: suspend {active.type}")
        else:  # as a person would: the new request now, the current one waits where it was
            why = "asked for while a question was pending" if active.pending else f"{active.type} waits for no answer"
            t.ops.suspend_and_activate(goal)
            t.trace.decisions.append(f"{sop.id} now ({why}): suspend {active.type}")
        self._run_active(t)

    def _keep_answer(self, t: Turn, goal: Goal, answer: Answer) -> None:
        """"2pm is good. Also, what's the weather?": the answer is kept, so the question is not asked again
        when the goal comes back."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None or answer.reading is None or answer.reading.ask != goal.pending:
            return
        if agent.take_answer(goal, sop, answer.reading, t.state.turn):
            goal.next_question, goal.missing = "", []
            t.reading.add(answer)
            t.trace.decisions.append(f"answer kept for {goal.type}: {', '.join(sorted(answer.reading.values))}")

    def _fresh_goal(self, t: Turn, sop: Sop) -> Goal:
        """A new goal of ``sop`` at its start, with what the session already told it (signed-in customer,
        earlier answers)."""
        goal = t.ops.new_goal(sop.id, sop.priority)
        goal.step = sop.start
        known = self._draft(t.state, sop).slots
        goal.slots.update(known)
        for k in known:
            t.state.told.pop(k, None)
        if set(known) - SESSION_SLOTS:
            t.trace.decisions.append(f"already told in this session: {', '.join(sorted(set(known) - SESSION_SLOTS))}")
        return goal

    def prepared(self, state: SessionState, sop: Sop) -> Goal:
        """The goal of ``sop`` the next request for it would work on: the one waiting on the stack, or a new
        one (not yet part of the session, id '') with what the session already told it."""
        return state.waiting_goal(sop.id) or self._draft(state, sop)

    def _draft(self, state: SessionState, sop: Sop) -> Goal:
        """A new goal of ``sop`` (not part of the session, id '') with what the session already told it."""
        goal = Goal(id="", type=sop.id, priority=sop.priority)
        if state.customer_id:
            goal.slots.update({k: state.customer_id for k in SESSION_SLOTS & set(sop.slot_names())})
        goal.slots.update(self.already_told(state, sop))
        return goal

    def already_told(self, state: SessionState, sop: Sop) -> dict[str, Any]:
        """What the customer already said in this session that a new goal of ``sop`` asks for: their
        answers to this SOP's questions last time ("and what about Detroit?" keeps the day), yes/no
        confirmations and picks excepted, their own name from any goal, and an identifying value (a card
        number, an email) another SOP asked for under the same slot name and kind."""
        agent = self.agent_of(sop.id)
        if agent is None:
            return {}
        types = agent.types(sop)
        asked = {p.name for n in sop.nodes.values() if n.asks for p in n.fills}
        keep = {k for k in asked if k in types and types[k].kind not in ("boolean", "choice")}
        names = [k for k in asked if k in types and types[k].person]
        out: dict[str, Any] = {}
        for old in sorted(state.goals.values(), key=lambda g: g.updated_at):  # the latest answer wins
            old_sop, old_agent = self.sops.get(old.type), self.agent_of(old.type)
            if old_sop is None or old_agent is None:
                continue
            given = {k: v for k, v in old.slots.items() if v not in (None, "")}
            old_types = old_agent.types(old_sop)
            if old.type == sop.id:
                out.update({k: v for k, v in given.items() if k in keep})
            else:  # the customer's own card number, email or phone (not a record's id: which order?), asked by
                #       another SOP under the same name
                out.update({k: v for k, v in given.items() if k in keep and k in old_types
                            and types[k].kind in PERSONAL_KINDS and old_types[k].kind == types[k].kind})
            person = next((v for k, v in given.items() if k in old_types and old_types[k].person), None)
            if person is not None:
                out.update({k: person for k in names})
        out.update({k: v for k, v in state.told.items() if k in keep and k not in out})
        return out

    def _given(self, t: Turn, goal: Goal, sop: Sop, given: list[SetSlots], *, opening: bool) -> None:
        """The values the message gives a goal it starts or resumes. A new value for a slot a waiting goal
        already used is a correction: the goal goes back to the step that first used it ("could we try
        booking again, but at the Hilton?")."""
        agent = self.agent_of(sop.id)
        for c in given:
            goal.unavailable += [k for k in c.unavailable if k not in goal.unavailable]
            found = dict(c.values)
            fixes = {k: v for k, v in found.items() if goal.slots.get(k) not in (None, "") and goal.slots.get(k) != v}
            if fixes and agent is not None and not opening:
                for k in agent.apply_correction(goal, sop, fixes):
                    t.reading.add(CorrectSlot(evidence=c.evidence, slot=k, value=goal.slots.get(k)))
                found = {k: v for k, v in found.items() if k not in fixes}
            goal.slots.update(found)
            if found or c.unavailable:
                t.reading.add(SetSlots(evidence=c.evidence, values=found, words={k: w for k, w in c.words.items()
                                                                               if k in found},
                                       sop=c.sop, unavailable=c.unavailable))

    def _referred_result(self, t: Turn, goal: Goal, sop: Sop, active: Goal | None, c: StartGoal) -> None:
        """"Please reserve the one you found" after a search found the Cedar Rest: a start that points back
        fills the new goal's listed questions from what the current goal's tools (else the goal finished
        last) found."""
        agent = self.agent_of(sop.id)
        source = active if active is not None else self.last_completed(t.state)
        results = [v for v in source.slots.values() if isinstance(v, dict)] if source is not None else []
        if agent is None or source is None or not results:
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
            t.reading.add(SetSlots(evidence=c.evidence, values=dict(filled), words={k: c.points_back for k in filled}))
            t.trace.decisions.append(f"{', '.join(sorted(filled))} from what {source.type} found "
                                     f"(the message points back to it)")

    # ------------------------------------------------------------------ the running goal
    def _continue(self, t: Turn, goal: Goal, commands: list[Command]) -> None:
        """What the message does to the running goal, by precedence: a go-back, a question the customer
        cannot answer, a side question, then the answer, corrections and values for later questions."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return
        for c in commands:
            if isinstance(c, GoBack):
                self._go_back(t, goal, sop, agent, c)
                return
            if isinstance(c, Skip):
                t.reading.add(c)
                if agent.skip_unanswerable(goal, sop, c.evidence, t.state.turn):
                    t.trace.decisions.append("customer cannot answer the pending question: taking the SOP's way "
                                             "for that")
                    self._run_active(t)
                else:
                    self._invalid(t, goal, sop, commands)
                return
        side: list[Command] = [c for c in commands if isinstance(c, KnowledgeQuestion)
                or isinstance(c, FollowUp) and c.about == "items"]
        answer = _first(commands, Answer)
        if side and goal.pending and not (answer is not None and answer.reading is not None
                                          and answer.reading.ask == goal.pending):
            self._doubt(t, goal, sop, side)
            return
        if side and goal.pending:  # an answer and a side question: the side question's answer, then the flow
            if self._take_values(t, goal, sop, agent, commands):
                question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
                if question is not None and self.gateway.tools.get(KB_TOOL) is not None:
                    t.reading.add(question)
                    self._kb_answer(t, question.query or question.evidence, "orchestrator")
                    t.trace.actions.append(EXTERNAL_KNOWLEDGE)
                    t.trace.decisions.append("answer taken, and the side question beside it answered")
                self._run_active(t)
            else:
                self._doubt(t, goal, sop, side)
            return
        accepted = self._take_values(t, goal, sop, agent, commands)
        if accepted is False or (accepted is None and goal.pending and any(
                isinstance(c, SmallTalk | Unclear) for c in commands)):
            self._invalid(t, goal, sop, commands)
            return
        if accepted is None and side:  # a side question while no question waits
            self._knowledge(t, side, goal)
            return
        self._run_active(t)

    def _take_values(self, t: Turn, goal: Goal, sop: Sop, agent: SpecialistAgent,
                     commands: list[Command]) -> bool | None:
        """The answer, corrections, values for later questions and slots the customer cannot give: True when
        the goal took a value, False when the answer does not complete the pending question, None when the
        message gave the goal nothing."""
        answer = _first(commands, Answer)
        accepted: bool | None = None
        changed: list[str] = []
        for c in commands:
            if isinstance(c, SetSlots) and c.sop in ("", goal.type) and c.unavailable:
                goal.unavailable += [k for k in c.unavailable if k not in goal.unavailable]
        if answer is not None and answer.reading is not None and goal.pending == answer.reading.ask:
            asked = sop.node(goal.pending)
            had = {p.name: goal.slots.get(p.name) for p in (asked.fills if asked is not None else [])}
            accepted = agent.take_answer(goal, sop, answer.reading, t.state.turn)
            t.partial = [k for k, v in had.items() if v in (None, "") and goal.slots.get(k) not in (None, "")]
            if accepted:
                t.reading.add(answer)
            elif t.partial:
                t.reading.drop(answer, f"it gives part of what the pending question asks ({', '.join(t.partial)}); "
                                       "the rest is asked for")
            else:
                t.reading.drop(answer, "its values do not complete the pending question")
        for c in commands:
            if isinstance(c, CorrectSlot):
                for k in agent.apply_correction(goal, sop, {c.slot: c.value}):
                    changed.append(k)
                    t.reading.add(CorrectSlot(evidence=c.evidence, slot=k, value=goal.slots.get(k)))
            elif isinstance(c, SetSlots) and c.sop in ("", goal.type) and c.values:
                new = {k: v for k, v in c.values.items() if goal.slots.get(k) in (None, "")}
                got = agent.apply_correction(goal, sop, new)
                changed += got
                if got:
                    t.reading.add(SetSlots(evidence=c.evidence, values={k: goal.slots.get(k) for k in got},
                                           words={k: w for k, w in c.words.items() if k in got}))
        if changed:
            t.trace.decisions.append(f"correction: {', '.join(changed)} updated")
            accepted = True
        return accepted

    def _go_back(self, t: Turn, goal: Goal, sop: Sop, agent: SpecialistAgent, c: GoBack) -> None:
        target = next((n for n in sop.nodes.values() if n.asks and c.target == n.label), None) if c.target else None
        if target is None:
            t.reading.drop(c, "no earlier question to go back to")
            self._reprompt(t, goal)
            return
        t.reading.add(c)
        agent.rewind(goal, sop, target, t.state.turn, c.evidence)
        t.trace.decisions.append(f"customer asked to go back: returning to {target.label!r}")
        t.messages.append(self._say(t, "go_back"))
        self._run_active(t)

    def _invalid(self, t: Turn, goal: Goal, sop: Sop, commands: list[Command]) -> None:
        """The message does not answer the pending question: say so (or answer its small talk) and ask
        again."""
        node = sop.node(goal.pending)
        social = next((c for c in commands if isinstance(c, SmallTalk) and c.act in SOCIAL), None)
        if social is not None:
            t.reading.add(social)
            t.messages.append(self._say(t, SOCIAL[social.act]))
            t.trace.act = "reprompt"
            t.trace.decisions.append("small talk while a question is pending: asking it again")
            self._reprompt(t, goal)
            return
        if not t.partial:
            t.reading.add(next((c for c in commands if isinstance(c, Unclear)), None)
                          or Unclear(evidence=t.perception.text, why="does not answer the pending question"))
        if node is not None and t.partial:  # "ann@example.com" to "your name and email": thanks, then the rest
            t.messages.append(self._say(t, "got_part"))
            t.trace.decisions.append(f"part of the pending question answered ({', '.join(t.partial)}): "
                                     "asking for the rest")
        elif node is not None:
            t.messages.append(self._say(t, "didnt_catch"))
            t.trace.decisions.append("answer did not fit the pending question: asking again")
        else:
            t.trace.decisions.append("answer did not fit the pending question: asking again")
        if node is not None:
            goal.step = node.id
            goal.pending = None
        at = len(t.messages)
        self._run_active(t)
        if node is not None and not t.partial and goal.pending == node.id:
            self._say_what_fits(t, node, at)

    def _say_what_fits(self, t: Turn, node: Node, at: int) -> None:
        """A question asked again (the messages from ``at`` on; "didn't catch that" just before them) says what
        answer fits once, in a sentence: a hint the question already shows is not repeated; one that names what
        is needed ("the 8-digit account number") is said as "I need ..."; any other is shown after the
        question, as the first ask would."""
        asked = t.messages[at:]
        hint = T.flat_hint(node.expects)
        if not hint or any(_shows(q, hint) for q in asked):
            return
        if t.reading.language == "en" and not _article(hint).startswith(("a ", "an ", "the ", "one ", "your ")) \
                and asked and asked[-1].rstrip().endswith("?"):
            t.messages[-1] = f"{asked[-1].rstrip()} ({hint})"
            return
        t.messages[at - 1] = self._say(t, "didnt_catch_need", expects=_article(hint))

    def _doubt(self, t: Turn, goal: Goal, sop: Sop, side: list[Command]) -> None:
        """Paper §3: answer a question asked instead of an answer, then ask the pending question again."""
        agent = self.agent_of(goal.type)
        pending = sop.node(goal.pending)
        items = next((c for c in side if isinstance(c, FollowUp) and c.question is not None), None)
        question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
        evidence = (items or question or side[0]).evidence
        if items is not None and not (self.commerce is not None and agent is not None
                                      and self.gateway.allowed(agent.name, self.commerce.search_tool)):
            t.reading.drop(items, "the agent may not search the items")
            items = None
        if items is not None and agent is not None and self.commerce is not None:
            t.reading.add(items)
            if question is not None:
                t.reading.drop(question, "the question is about the items offered")
            t.trace.actions.append(f"follow-up: {self.commerce.search_tool}")
            t.messages.append(self.commerce.answer(
                items.question, lambda tool, args: self._call(t, agent.name, tool, args), t.reading.language))
            step = ""
        else:
            query = question.query if question is not None and question.query else evidence
            t.reading.add(KnowledgeQuestion(evidence=evidence, query=query))
            self._kb_answer(t, query, agent_name="orchestrator")
            t.trace.actions.append(EXTERNAL_KNOWLEDGE)
            step = EXTERNAL_KNOWLEDGE
        if agent is not None:
            agent.note_detour(goal, sop, evidence, t.state.turn, step)
        t.trace.decisions.append("doubt answered; pending question asked again")
        if pending is not None and goal.next_question:
            t.trace.actions.append(pending.label)
        self._reprompt(t, goal)

    def _knowledge(self, t: Turn, side: list[Command], goal: Goal | None) -> None:
        """A knowledge question while no question waits: answered from the knowledge base when there is one."""
        question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
        if question is None or self.gateway.tools.get(KB_TOOL) is None:
            t.reading.add(side[0])
            if goal is not None:
                self._run_active(t)
            else:
                self._unclear(t)
            return
        t.reading.add(question)
        t.trace.act = "kb_answer"
        self._kb_answer(t, question.query or question.evidence, "orchestrator")

    # ------------------------------------------------------------------ ending, leaving, handing off
    def _cancel(self, t: Turn, goal: Goal, *, resume: bool = True) -> None:
        """End ``goal`` as the customer asked; the goal waiting under it comes back (asked again when
        ``resume``; not when the message goes on to ask for something else)."""
        requested = goal  # a procedure another one called is part of the customer's request: both end
        while requested.caller and requested.caller in t.state.goals:
            requested = t.state.goals[requested.caller]
        sop = self.sops.get(requested.type)
        title = sop.title.lower() if sop else requested.type
        t.trace.decisions.append(f"customer cancelled {requested.type}")
        t.trace.act = "cancelled"
        t.messages.append(self._say(t, "cancelled", title=title))
        resumed = self._end_with_callers(t, goal, "cancelled")
        if resumed is not None and resume:
            self._resume(t, resumed)

    def _end_with_callers(self, t: Turn, goal: Goal, outcome: str) -> Goal | None:
        """End the active ``goal`` with ``outcome``, and the goals that called it, waiting on the stack, with
        it; returns the goal that comes back (None when none waits)."""
        callers = self._callers(t, goal)
        resumed = t.ops.mark_done(outcome)
        while resumed is not None and resumed.id in callers:
            resumed = t.ops.mark_done(outcome)
        return resumed

    @staticmethod
    def _callers(t: Turn, goal: Goal) -> set[str]:
        """The goals that called ``goal``, directly or through others."""
        out: set[str] = set()
        while goal.caller and goal.caller in t.state.goals and goal.caller not in out:
            out.add(goal.caller)
            goal = t.state.goals[goal.caller]
        return out

    def _hand_off(self, t: Turn, active: Goal | None) -> None:
        """The customer asks for a person: the session is marked for the team, every goal is kept as it is
        (the person picks up with what the customer said), and the customer is told so."""
        t.trace.act = "human_handoff"
        t.trace.decisions.append("customer asked for a person: handed over to the team"
                                 + (f" with {active.type} open" if active is not None else ""))
        self._handed_over(t, active, "customer")

    def _hand_off_step(self, t: Turn, goal: Goal, resp: AgentRunResponse) -> None:
        """An SOP step hands the conversation to the team (``hand off to a person``): the session is marked, the
        store's hand-off tool is called, and the customer is told (after the step's own message, if it has one).
        The goal ends; its callers end with it; other requests wait on the stack for the person."""
        t.trace.decisions.append(f"{goal.type} hands the conversation to the team ({resp.handoff!r})")
        self._handed_over(t, goal, "sop", step=resp.handoff, told=bool(resp.messages))
        self._end_with_callers(t, goal, "handed_off")  # other requests wait on the stack for the person

    def _handed_over(self, t: Turn, goal: Goal | None, by: str, *, step: str = "", told: bool = False) -> None:
        """Mark the session for the team, reach them through the store's hand-off tool, and tell the customer
        what it returned (a ticket, a queue place), or, unless the SOP's step said its own words, that the team
        will take over."""
        t.state.handoff_turn = t.state.turn
        sop = self.sops.get(goal.type) if goal is not None else None
        reached = self._reach_a_person(t, goal, sop)
        t.trace.handoff = {"by": by, "request": goal.type if goal is not None else "", "step": step,
                           "tool": self.handoff if reached else "", "sent": reached}
        if reached:
            t.messages.append(self._say(t, "handoff_sent", detail=reached))
        elif not told:
            t.messages.append(self._say(t, "handoff_with", title=sop.title.lower()) if sop is not None and sop.title
                              else self._say(t, "handoff"))

    def _reach_a_person(self, t: Turn, active: Goal | None, sop: Sop | None) -> str:
        """Call the store's hand-off tool (``handoff:`` in store.yaml) with the open request and a short summary
        (and the session and customer, for a tool that takes them); what it returned, as a phrase for the
        customer ("ticket: HD-1042"), or "" when the store has no such tool or the call failed."""
        impl = self.gateway.tools.get(self.handoff) if self.handoff else None
        if impl is None:
            return ""
        known = {k: v for k, v in (active.slots if active is not None else {}).items()
                 if not k.startswith("_") and v not in (None, "", [], {})}
        offered = {"request": sop.title if sop is not None else "", "summary": "; ".join(
            [f"request: {sop.title}" if sop is not None else "no request open",
             *(f"{k}: {render.as_text(v)}" for k, v in list(known.items())[:8]),
             f"last message: {t.perception.text}"]), "message": t.perception.text}
        declared = {p.name for p in impl.spec.params}
        call = self._call(t, "", self.handoff, {k: v for k, v in offered.items() if k in declared}, system=True)
        if not call.ok:
            t.trace.decisions.append(f"the hand-off tool {self.handoff} failed ({call.error}): the team is told "
                                     "by the session's mark only")
            return ""
        t.trace.decisions.append(f"hand-off sent through {self.handoff}")
        result = call.result
        if isinstance(result, dict):  # its first few plain fields ("ticket: HD-1041; queue position: 1")
            plain = {k: v for k, v in result.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}
            return render.render_record(dict(list(plain.items())[:3])) or "sent"
        return render.as_text(result) if result not in (None, "") else "sent"

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

    @staticmethod
    def _reprompt(t: Turn, goal: Goal) -> None:
        if goal.next_question:
            t.messages.append(goal.next_question)

    # ------------------------------------------------------------------ no goal running
    def _no_goal(self, t: Turn, commands: list[Command]) -> None:
        """Small talk, a question for the knowledge base, or nothing to act on, while no goal runs."""
        c = next((c for c in commands if isinstance(c, SmallTalk | KnowledgeQuestion | Unclear | FollowUp)), None)
        if isinstance(c, KnowledgeQuestion | FollowUp):
            self._knowledge(t, [c], None)
            return
        if c is not None:
            t.reading.add(c)
        act = c.act if isinstance(c, SmallTalk) else ""
        if act == "frustration":
            t.trace.act = "capabilities"
            t.messages.append(self._say(t, "frustrated", capabilities=self.capabilities(t)))
        elif act == "goodbye":
            t.trace.act = "goodbye"
            t.messages.append(self._say(t, "goodbye"))
        elif act == "greeting":
            t.trace.act = "greeting"
            t.messages.append(f"{self.greeting} {self.capabilities(t)}" if self.greeting
                              else self._say(t, "hello", capabilities=self.capabilities(t)))
        elif act == "thanks" and self.just_finished(t.state):  # the request is done and offered nothing more
            t.trace.act = "goodbye"
            t.messages.append(self._say(t, "welcome_bye"))
        elif act == "thanks":
            t.trace.act = "thanks"
            t.messages.append(self._say(t, "welcome_more"))
        elif act == "declined":  # "nah, I don't want the upgrade": nothing is done, something else may be
            t.trace.act = "offer_more"
            t.messages.append(self._say(t, "declined_more"))
        elif act == "reaction" and self.just_finished(t.state):  # a reaction to what we just did ("Good idea.")
            t.trace.act = "offer_more"
            t.messages.append(self._say(t, "glad_more"))
        else:
            self._unclear(t)

    def _unclear(self, t: Turn) -> None:
        t.trace.act = "capabilities"
        t.messages.append(self._say(t, "not_sure", capabilities=self.capabilities(t)))

    @staticmethod
    def just_finished(state: SessionState) -> bool:
        """Whether a goal ended in the previous turn (the customer is likely answering its result)."""
        return any(g.status == GoalStatus.DONE and g.memory and g.memory[-1].turn >= state.turn - 1
                   for g in state.goals.values())

    def last_completed(self, state: SessionState) -> Goal | None:
        """The goal completed last in this session (whose SOP and agent still exist)."""
        done = [g for g in state.goals.values() if g.status == GoalStatus.DONE and g.outcome == "completed"
                and g.type in self.sops and self.agent_of(g.type) is not None]
        return max(done, key=lambda g: g.updated_at, default=None)

    def _follow_up(self, t: Turn, c: FollowUp) -> bool:
        """A follow-up to the request finished last: run again with the changed values ("and for Friday?"),
        or from its tool over the next values until a result answers ("when is it going to clear up?").
        True when it ran."""
        last = self.last_completed(t.state)
        sop = self.sops.get(c.sop)
        agent = self.agent_of(c.sop)
        if last is None or sop is None or agent is None or last.type != c.sop:
            return False
        if c.about == "reopen":
            goal = t.ops.new_goal(sop.id, sop.priority)
            names = set(sop.slot_names())
            goal.slots = {**{k: v for k, v in last.slots.items() if k in names}, **c.values}
            goal.step = sop.start
            t.ops.activate(goal)
            changed = sorted(k for k, v in c.values.items() if last.slots.get(k) != v)
            t.trace.decisions.append(f"follow-up to the finished {sop.id}: {', '.join(changed)} changed, "
                                     "running it again")
            self._run_active(t)
            return True
        goal = t.ops.draft(sop.id, sop.priority)
        goal.slots = {k: v for k, v in last.slots.items() if not k.startswith("_")}
        wanted = agent.start_search(goal, sop, c.named, given=c.values)
        if wanted is None:
            return False
        t.ops.add(goal)
        t.ops.activate(goal)
        t.trace.decisions.append(f"follow-up to the finished {sop.id}: looking up the next {wanted} values")
        self._run_active(t)
        return True

    # ------------------------------------------------------------------ the knowledge base
    def _kb_answer(self, t: Turn, query: str, agent_name: str) -> None:
        call = self.kb_search(t, query, agent_name)
        if call.ok and call.result:
            t.messages.append(render.render_kb_answer(call.result))
        else:
            t.messages.append(self._say(t, "kb_unsure"))

    def kb_search(self, t: Turn, query: str, agent_name: str) -> ToolCall:
        """The knowledge base searched once per turn and query (a question is weighed, then answered)."""
        if query not in t.kb:
            t.kb[query] = self._call(t, agent_name, KB_TOOL, {"query": query}, system=True)
        return t.kb[query]

    def kb_knows(self, t: Turn, query: str) -> bool:
        """Whether the knowledge base has an answer to ``query``."""
        if self.gateway.tools.get(KB_TOOL) is None:
            return False
        call = self.kb_search(t, query, "orchestrator")
        return call.ok and bool(call.result)

    def kb_similarity(self, t: Turn, query: str) -> float:
        """How close the knowledge base's best passage for ``query`` is (its similarity; 0 when it has none)."""
        if self.gateway.tools.get(KB_TOOL) is None:
            return 0.0
        call = self.kb_search(t, query, "orchestrator")
        hits = call.result if call.ok and isinstance(call.result, list) else []
        return max((float(h.get("similarity", 0.0)) for h in hits if isinstance(h, dict)), default=0.0)

    # ------------------------------------------------------------------ running goals (the flow executor)
    def _run_active(self, t: Turn) -> None:
        """Run the active goal; when it ends, resume the previous one (bounded)."""
        for _ in range(2 * len(t.state.goals) + 8):  # a call step adds a goal and comes back
            goal = t.state.active_goal
            if goal is None:
                return
            resp = self._run_goal(t, goal)
            if resp.handoff:  # the team takes it from here: nothing resumes in this turn
                self._hand_off_step(t, goal, resp)
                return
            if resp.call:  # a call step: the called SOP runs now, this goal waits for it on the stack
                self._start_call(t, goal, resp.call)
                continue
            if not resp.done:
                return
            resumed = t.ops.mark_done(resp.outcome)
            if resumed is not None and goal.caller == resumed.id:  # back from a call: the caller goes on
                if self._return_from_call(t, goal, resumed):
                    continue
                resumed = t.ops.mark_done("failed")  # the called procedure did not finish: nor does its caller
            if resumed is None or self._announce_resume(t, resumed):
                return

    def _start_call(self, t: Turn, caller: Goal, sop_id: str) -> None:
        """Run another SOP for a ``call`` step: a goal of it, given the caller's values it asks for, on top of
        the caller (which waits on the stack and goes on when it ends)."""
        sop = self.sops[sop_id]
        callee = self._fresh_goal(t, sop)
        callee.caller = caller.id
        wanted = set(sop.slot_names())
        callee.slots.update({k: v for k, v in caller.slots.items() if k in wanted and v not in (None, "")})
        t.ops.suspend_and_activate(callee)
        t.trace.decisions.append(f"{caller.type} calls {sop_id}" + (f" with {', '.join(sorted(callee.slots))}"
                                                                   if callee.slots else ""))

    def _return_from_call(self, t: Turn, callee: Goal, caller: Goal) -> bool:
        """The called goal ended: its caller takes what it learned and goes on (True), or, when it did not
        complete, stays where it is (False)."""
        agent = self.agent_of(caller.type)
        sop = self.sops.get(caller.type)
        if agent is None or sop is None:
            return False
        ok = agent.returned(caller, sop, callee, t.state.turn)
        t.trace.decisions.append(f"back from {callee.type} to {caller.type}" if ok else
                                 f"{callee.type} ended ({callee.outcome or 'not completed'}): {caller.type} ends too")
        return ok

    def _run_goal(self, t: Turn, goal: Goal) -> AgentRunResponse:
        sop = self.sops[goal.type]
        agent = self.agent_of(goal.type)
        if agent is None:
            t.messages.append(self._say(t, "nobody"))
            return AgentRunResponse(done=True, outcome="failed")
        req = AgentRunRequest(goal, sop, t.prefs, turn=t.state.turn, others_waiting=bool(t.state.goal_stack),
                              language=t.reading.language)
        resp = agent.run(req)
        self._collect(t, resp, goal)
        passes = 0
        while resp.tool_requests and not resp.done and passes < self.max_steps:
            passes += 1
            results = [self._call(t, agent.name, r.tool, r.args) for r in resp.tool_requests]
            resp = agent.run(AgentRunRequest(goal, sop, t.prefs, tool_results=results, turn=t.state.turn,
                                             others_waiting=req.others_waiting, language=req.language))
            self._collect(t, resp, goal)
        if resp.tool_requests and not resp.done:
            goal.step = resp.tool_requests[0].node
        return resp

    @staticmethod
    def _collect(t: Turn, resp: AgentRunResponse, goal: Goal) -> None:
        t.messages += resp.messages
        t.computed += resp.computed
        t.trace.actions += resp.actions
        t.trace.path += [{"sop": goal.type, "goal": goal.id, "node": nid} for nid in resp.path]
        t.trace.decisions += resp.decisions

    def _call(self, t: Turn, agent: str, tool: str, args: dict[str, Any], system: bool = False) -> ToolCall:
        """One tool call through the gateway; on a re-run after a conflict, reuse this turn's result. A call
        that changes the world gets an idempotency key (the same for the same call of the same turn, also
        when the turn is sent again after a crash) and is recorded as intended before it runs."""
        key = f"{tool}|{json.dumps(args, sort_keys=True, default=str)}"
        used = t.requested.get(key, 0)
        t.requested[key] = used + 1
        earlier = t.cache.get(key, [])
        if used < len(earlier):
            call = earlier[used].model_copy(update={"reused": True})
        else:
            spec = getattr(self.gateway.tools.get(tool), "spec", None)
            once = ""
            if spec is not None and spec.side_effects and not (t.script is not None and t.script.has(tool)):
                once = hashlib.sha256(f"{t.state.session_id}|{t.state.turn}|{key}|{used}".encode()).hexdigest()[:32]
                if self.before_change is not None:
                    self.before_change(t, tool, args, once)
            call = self.gateway.call(agent, tool, args, script=t.script, system=system, key=once,
                                     session_id=t.state.session_id, customer_id=t.state.customer_id or None)
            t.cache.setdefault(key, []).append(call)
        if call.error_kind == "denied":
            t.trace.denied.append({"tool": tool, "agent": agent, "error": call.error})
        else:
            t.trace.tool_calls.append(call)
        return call

    # ------------------------------------------------------------------ sentences
    def capabilities(self, t: Turn | None = None) -> str:
        titles = [s.title[0].lower() + s.title[1:] for s in self.sops.values() if s.title]
        lang = t.reading.language if t is not None else "en"
        if not titles:
            return say("capabilities_none", lang)
        listed = ", ".join(titles[:-1]) + (f" {say('list_or', lang)} " if len(titles) > 1 else "") + titles[-1]
        return say("capabilities", lang, titles=listed)

    @staticmethod
    def _say(t: Turn, key: str, **values: Any) -> str:
        """The engine's own sentence for a message intent, in the customer's language."""
        return say(key, t.reading.language, **values)


SOCIAL = {"frustration": "sorry_frustrating", "greeting": "hello_short", "thanks": "welcome_short"}
"""Small talk answered before the pending question is asked again: its sentence in the reply catalogue."""


def _first(commands: list[Command], kind: type[Command]) -> Any:
    return next((c for c in commands if isinstance(c, kind)), None)


def _shows(question: str, hint: str) -> bool:
    """Whether a question already shows a hint: most of the hint's words are in it."""
    words = set(T.tokens(hint))
    return bool(words) and len(words & set(T.tokens(question))) >= 0.8 * len(words)


def _article(phrase: str) -> str:
    p = phrase.strip().rstrip(".")
    if p.lower().startswith(("a ", "an ", "the ", "one ", "your ")):
        return p[0].lower() + p[1:]
    return p

