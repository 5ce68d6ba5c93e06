"""The specialist agent: the flow executor the engine and the reader talk to. It runs the SOP step loop for the
goals it owns (:mod:`core.engine.flow.steps`), acts on the customer's replies (:mod:`core.engine.flow.replies`) and
starts searches over ordered values (:mod:`core.engine.flow.search`); it requests tools, never executes them."""

from __future__ import annotations

from typing import Any

from core.engine.flow import replies, search
from core.engine.flow.contract import AgentEnv, AgentRunRequest, AgentRunResponse
from core.engine.flow.results import returned
from core.engine.flow.steps import run_steps
from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import AnswerReading
from core.workspace.config import AgentDecl
from core.workspace.slots import SlotType


class SpecialistAgent:
    """Runs the SOP step loop for goals it owns (paper §2, PRD §3.3); satisfies
    :class:`core.understanding.executor.FlowExecutor`."""

    def __init__(self, decl: AgentDecl, env: AgentEnv) -> None:
        self.decl = decl
        self.env = env
        self.reader = env.answers  # what a message gives the SOP (core.understanding.answers)

    @property
    def name(self) -> str:
        return self.decl.name

    def types(self, sop: Sop) -> dict[str, SlotType]:
        return self.env.types(sop)

    def changed_world(self, goal: Goal, sop: Sop) -> bool:
        """Whether a step of the goal ran a tool that changes the world (a booking made, a ticket opened)
        and it succeeded: doing the goal again would do that twice."""
        done = {e.action for e in goal.memory if e.feedback == "success"}
        return any(n.tool in self.env.changing_tools and n.label in done for n in sop.nodes.values())

    # ------------------------------------------------------------------ answers
    def take_answer(self, goal: Goal, sop: Sop, reading: AnswerReading, turn: int) -> bool:
        """Act on a reply read by :meth:`core.understanding.answers.AnswerReader.read_answer` (see
        :func:`core.engine.flow.replies.take_answer`)."""
        return replies.take_answer(self.types(sop), goal, sop, reading, turn)

    def skip_unanswerable(self, goal: Goal, sop: Sop, text: str, turn: int) -> bool:
        """The customer cannot give what the pending question asks ("I've forgotten the passcode"). When the SOP
        says what happens then, go there with the slot empty and return True; otherwise the question
        stays pending."""
        node = sop.node(goal.pending)
        if node is None or not replies.missing_way(self.types(sop), sop, node):
            return False
        replies.pass_unanswered(goal, node, self.env.brain.correct(text), turn)
        return True

    def note_unavailable(self, goal: Goal, sop: Sop, text: str, given: dict[str, Any]) -> list[str]:
        """Note the slots a message says the customer cannot give (:meth:`unavailable_named`): when the
        flow reaches such a question it takes the SOP's way for a missing answer instead of asking."""
        out = self.reader.unavailable_named(goal, sop, text, given)
        goal.unavailable += out
        return out

    def can_skip(self, goal: Goal, sop: Sop) -> bool:
        """Whether the SOP says what happens when the pending question gets no answer."""
        node = sop.node(goal.pending)
        return node is not None and replies.missing_way(self.types(sop), sop, node)

    def apply_correction(self, goal: Goal, sop: Sop, changes: dict[str, Any]) -> list[str]:
        """New values for slots the flow already used: update and rewind to where they are first needed."""
        shop = self.env.commerce
        search = (shop.search_tool, shop.reads_slots()) if shop is not None else ("", set())
        return replies.apply_correction(self.types(sop), goal, sop, changes, search)

    def rewind(self, goal: Goal, sop: Sop, target: Node, turn: int = 0, said: str = "") -> None:
        """Go back to an earlier ask the customer wants to redo (see :func:`core.engine.flow.replies.rewind`)."""
        replies.rewind(self.env.brain, goal, sop, target, turn, said)

    def note_detour(self, goal: Goal, sop: Sop, text: str, turn: int, action: str = "") -> None:
        """Record a reply that was a question or a request rather than an answer (feedback fail),
        and the step taken for it (e.g. seeking external knowledge), in execution memory."""
        replies.note_detour(self.env.brain, goal, sop, text, turn, action)

    def returned(self, goal: Goal, sop: Sop, callee: Goal, turn: int) -> bool:
        """A goal whose ``call`` step's SOP has ended goes on with what the called goal learned (see
        :func:`core.engine.flow.results.returned`); False when the called goal did not complete."""
        return returned(goal, sop, callee, turn)

    # ------------------------------------------------------------------ step loop
    def run(self, req: AgentRunRequest) -> AgentRunResponse:
        """Execute steps until the goal needs the customer, needs a tool, or ends."""
        return run_steps(self.env, self.name, req)

    # ------------------------------------------------------------------ searching over values
    def only_offers_left(self, goal: Goal, sop: Sop) -> bool:
        """Whether all a goal still has to do is offer more help ("Is there anything else?"): its steps run on
        a copy."""
        resp = self.run(AgentRunRequest(goal.model_copy(deep=True), sop, PreferenceSummary()))
        return resp.done and not resp.tool_requests and bool(resp.messages) and all(
            T.offers_more(m) for m in resp.messages)

    def start_search(self, goal: Goal, sop: Sop, named: dict[str, Any],
                     given: dict[str, Any] | None = None) -> str | None:
        """Start a search over the next values of an ordered slot of the goal's tool; the slot searched over, or
        None when the goal has none (see :func:`core.engine.flow.search.start_search`)."""
        return search.start_search(self.types(sop), goal, sop, named, given)
