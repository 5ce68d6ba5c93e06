"""Starting a goal: the SOP asked for starts (or its waiting goal comes forward) with the values the message gives
it, ahead of or behind the running goal by priority; an answer given beside the request is kept first, the SOPs
asked for after it wait their turn, and a request that points back to a result is filled from it."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import SpecialistAgent
from core.engine.processor.new_goals import NewGoals
from core.engine.processor.running import GoalRunner
from core.engine.processor.turn import Turn, first
from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding import Answer, Command, CorrectSlot, SetSlots, StartGoal, find_option


class Starting:
    """Starts the SOP a message asks for."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 new_goals: NewGoals, runner: GoalRunner) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.new_goals = new_goals
        self.runner = runner

    def start(self, t: Turn, c: StartGoal, commands: list[Command], active: Goal | None) -> None:
        """Start the SOP asked for (or bring its waiting goal forward) with the values the message gives it;
        an answer to the running goal's pending question given beside the request is kept first."""
        answer = first(commands, Answer)
        if answer is not None and active is not None and active.pending:
            self.keep_answer(t, active, answer)
        for sop_id in reversed(c.deferred):  # the earliest named resumes first
            t.ops.defer(self.new_goals.fresh(t, self.sops[sop_id]))
            t.trace.decisions.append(f"also asked for {sop_id}: it waits until {c.sop} is done")
        t.reading.add(c)
        given = [s for s in commands if isinstance(s, SetSlots) and s.sop == c.sop]
        sop = self.sops[c.sop]
        waiting = t.state.waiting_goal(sop.id)
        if waiting is not None:
            t.ops.bring_forward(waiting)
            t.trace.decisions.append(f"customer returned to {sop.id}")
            self.given(t, waiting, sop, given, opening=False)
            if waiting.pending:
                t.trace.act = "reprompt"
                self.runner.reprompt(t, waiting)
            else:
                self.runner.run_active(t)
            return
        goal = self.new_goals.fresh(t, sop)
        self.given(t, goal, sop, given, opening=True)
        if c.points_back:
            self.referred_result(t, goal, sop, active, c)
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
        self.runner.run_active(t)

    def keep_answer(self, t: Turn, goal: Goal, answer: Answer) -> None:
        """"2pm is good. Also, what's the weather?": the answer is kept, so the question is not asked again
        when the goal comes back."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None or answer.reading is None or answer.reading.ask != goal.pending:
            return
        if agent.take_answer(goal, sop, answer.reading, t.state.turn):
            goal.next_question, goal.missing = "", []
            t.reading.add(answer)
            t.trace.decisions.append(f"answer kept for {goal.type}: {', '.join(sorted(answer.reading.values))}")

    def given(self, t: Turn, goal: Goal, sop: Sop, given: list[SetSlots], *, opening: bool) -> None:
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

    def referred_result(self, t: Turn, goal: Goal, sop: Sop, active: Goal | None, c: StartGoal) -> None:
        """"Please reserve the one you found" after a search found the Cedar Rest: a start that points back
        fills the new goal's listed questions from what the current goal's tools (else the goal finished
        last) found."""
        agent = self.agent_of(sop.id)
        source = active if active is not None else self.new_goals.last_completed(t.state)
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

