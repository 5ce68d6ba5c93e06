"""Specialist agents: run the SOP step loop for the active goal; request tools, never execute them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from core.engine.offers import forget_offers, offer_question, remembered_range
from core.language import render
from core.language import text as T
from core.language.replies import say
from core.shared.models import Goal, GoalStatus, MemoryEntry, ToolCall, utcnow
from core.sop.expr import parse, paths, strip_context
from core.sop.expr_eval import EvalError, evaluate, lookup
from core.sop.expr_templates import TEMPLATE_REF
from core.sop.graph import Node, Sop
from core.sop.progress import last_success
from core.state.memory.base import PreferenceSummary
from core.understanding.answers import GENERIC_KINDS, AnswerReader, AnswerReading, unknown
from core.understanding.brains.base import Brain
from core.understanding.domain.commerce import Commerce
from core.workspace.config import AgentDecl
from core.workspace.slots import (
    SlotType,
)

MAX_ATTEMPTS = 3


@dataclass
class ToolRequest:
    """A tool the agent wants the orchestrator to run."""

    tool: str
    args: dict[str, Any]
    node: str


@dataclass
class AgentRunRequest:
    """PRD §8.2: the active goal, the preference summary, and this pass's tool results."""

    goal: Goal
    sop: Sop
    preferences: PreferenceSummary
    tool_results: list[ToolCall] = field(default_factory=list)
    turn: int = 0
    others_waiting: bool = False  # another request is waiting on the stack: no "anything else?" offer now
    language: str = "en"  # the customer's language: the engine's own sentences are said in it


@dataclass
class AgentRunResponse:
    """PRD §8.2: the message, tool requests, and what changed."""

    messages: list[str] = field(default_factory=list)
    tool_requests: list[ToolRequest] = field(default_factory=list)
    done: bool = False
    outcome: str = ""
    actions: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    asked: bool = False
    path: list[str] = field(default_factory=list)  # ids of the nodes this run visited, in order
    language: str = "en"  # the language the run's own sentences are said in (the request's)
    call: str = ""  # the SOP a ``call`` step runs before this goal goes on (its id)
    handoff: str = ""  # a hand-off step was reached (its words): the conversation goes to the team
    computed: list[str] = field(default_factory=list)  # figures its messages' expressions gave ({qty * price})


@dataclass
class AgentEnv:
    """What an agent needs from the workspace."""

    brain: Brain
    slot_types: dict[str, dict[str, SlotType]]  # sop id -> slot -> type
    currency: str
    max_steps: int
    tool_params: dict[str, set[str]]
    today: Callable[[], date] = date.today  # "tomorrow" is a weekday relative to this
    result_values: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # sop id -> tool field -> values
    commerce: Commerce | None = None  # the store's item behaviour, when it sells from an inventory
    changing_tools: frozenset[str] = frozenset()  # tools declared with side effects (they change the world)
    answers: AnswerReader = field(init=False)  # reads messages against these SOPs (shared by the agents)

    def __post_init__(self) -> None:
        self.answers = AnswerReader(self.brain, self.slot_types, lambda: self.today(), self.result_values)


class SpecialistAgent:
    """Runs the SOP step loop for goals it owns (paper §2, PRD §3.3)."""

    def __init__(self, decl: AgentDecl, env: AgentEnv) -> None:
        self.decl = decl
        self.env = env
        self.reader = env.answers  # what a message gives the SOP (core.understanding.answers)

    @property
    def name(self) -> str:
        return self.decl.name

    def types(self, sop: Sop) -> dict[str, SlotType]:
        return self.env.slot_types.get(sop.id, {})

    def changed_world(self, goal: Goal, sop: Sop) -> bool:
        """Whether a step of the goal ran a tool that changes the world (a booking made, a ticket opened)
        and it succeeded: doing the goal again would do that twice."""
        done = {e.action for e in goal.memory if e.feedback == "success"}
        return any(n.tool in self.env.changing_tools and n.label in done for n in sop.nodes.values())

    # ------------------------------------------------------------------ answers
    def accept_answer(self, goal: Goal, sop: Sop, text: str, turn: int) -> bool | None:
        """Interpret a reply to the pending ask: True valid, False invalid, None when nothing is pending."""
        reading = self.reader.read_answer(goal, sop, text)
        return None if reading is None else self.take_answer(goal, sop, reading, turn)

    def take_answer(self, goal: Goal, sop: Sop, reading: AnswerReading, turn: int) -> bool:
        """Act on a reply read by :meth:`read_answer`: the execution memory notes it; a complete answer
        fills its slots (and what it gave ahead) and moves the flow past the ask. True when it did."""
        node = sop.nodes[reading.ask]
        if reading.declined:
            forget_offers(goal.slots, [p.name for p in node.fills])
        goal.memory.append(MemoryEntry(action=node.label, observation=reading.heard,
                                       feedback="success" if reading.ok else "fail", turn=turn))
        types = self.types(sop)
        if not reading.ok and len(node.fills) > 1:  # part of a question asking several values: kept, the rest
            goal.slots.update({k: v for k, v in reading.values.items()  # asked again
                               if k in types and types[k].kind not in GENERIC_KINDS})
        if reading.ok:
            goal.slots.update(reading.values)
            goal.slots.update(reading.enriched)
            goal.slots.update({k: v for k, v in reading.ahead.items() if unknown(goal, k)})
            goal.attempts.pop(node.id, None)
            goal.pending = None
            goal.step = node.next
        return reading.ok

    def skip_unanswerable(self, goal: Goal, sop: Sop, text: str, turn: int) -> bool:
        """The customer cannot give what the pending question asks ("I've forgotten the passcode"). When the SOP
        says what happens then, go there with the slot empty and return True; otherwise the question
        stays pending."""
        node = sop.node(goal.pending)
        if node is None or not self._missing_way(sop, node):
            return False
        self._pass_unanswered(goal, node, self.env.brain.correct(text), turn)
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
        return node is not None and self._missing_way(sop, node)

    def _missing_way(self, sop: Sop, node: Node) -> bool:
        """Whether the SOP says what happens when an ask gets no answer: a decision right after it reads
        its slot (a yes/no question excepted: "I'm not sure" is no answer there, not a "no")."""
        nxt = sop.node(node.next)
        if not node.asks or not node.fills or nxt is None or nxt.kind != "decision":
            return False
        names = {p.name for p in node.fills}
        types = self.types(sop)
        if any(types.get(n) is not None and types[n].kind == "boolean" for n in names):
            return False
        return bool(names & {k for b in nxt.branches if b.condition and b.expr for k in paths(parse(b.condition))})

    @staticmethod
    def _pass_unanswered(goal: Goal, node: Node, observation: str, turn: int) -> None:
        for p in node.fills:
            goal.slots.pop(p.name, None)
            if p.name not in goal.unavailable:
                goal.unavailable.append(p.name)
        goal.memory.append(MemoryEntry(action=node.label, observation=observation, feedback="fail", turn=turn))
        goal.attempts.pop(node.id, None)
        goal.pending, goal.step = None, node.next
        goal.status = GoalStatus.ACTIVE

    def apply_correction(self, goal: Goal, sop: Sop, changes: dict[str, Any]) -> list[str]:
        """New values for slots the flow already used: update and rewind to where they are first needed."""
        changed = [k for k, v in changes.items() if goal.slots.get(k) != v]
        if not changed:
            return []
        goal.slots.update({k: changes[k] for k in changed})
        start = self._first_user(sop, set(changed))
        if start is not None and self._is_behind(sop, goal, start):
            goal.step = start
            goal.pending = None
            Commerce.forget(goal, self.types(sop))
        return changed

    def _first_user(self, sop: Sop, names: set[str]) -> str | None:
        order = sop.walk()
        for nid in order:
            node = sop.nodes[nid]
            if {p.name for p in node.fills + node.params} & names:
                return nid
        return None

    @staticmethod
    def _is_behind(sop: Sop, goal: Goal, nid: str) -> bool:
        order = sop.walk()
        cur = goal.pending or goal.step
        if cur not in order or nid not in order:
            return True
        return order.index(nid) < order.index(cur)

    # ------------------------------------------------------------------ step loop
    def run(self, req: AgentRunRequest) -> AgentRunResponse:
        """Execute steps until the goal needs the customer, needs a tool, or ends."""
        goal, sop = req.goal, req.sop
        resp = AgentRunResponse(language=req.language)
        if req.tool_results:
            self._apply_results(goal, sop, req, resp)
        steps = 0
        while not resp.done and not resp.asked and not resp.tool_requests and not resp.call:
            if goal.status == GoalStatus.DONE:
                break
            steps += 1
            if steps > self.env.max_steps:
                resp.decisions.append(f"stopped after {self.env.max_steps} steps this turn")
                break
            if SEARCH_KEY in goal.slots and self._search_on(goal, sop, resp):
                continue
            node = sop.node(goal.step)
            if node is not None:
                resp.path.append(node.id)
            if node is None or node.kind == "end":
                self._end(goal, node, resp, "completed")
                break
            if node.kind == "decision":
                self._decide(goal, sop, node, resp)
                continue
            self._action(goal, sop, node, req, resp)
        self._refresh_missing(goal, sop)
        return resp

    # ------------------------------------------------------------------ searching over values
    def only_offers_left(self, goal: Goal, sop: Sop) -> bool:
        """Whether all a goal still has to do is offer more help ("Is there anything else?"): its steps run on
        a copy."""
        resp = self.run(AgentRunRequest(goal.model_copy(deep=True), sop, PreferenceSummary()))
        return resp.done and not resp.tool_requests and bool(resp.messages) and all(
            T.offers_more(m) for m in resp.messages)

    def start_search(self, goal: Goal, sop: Sop, named: dict[str, Any],
                     given: dict[str, Any] | None = None) -> str | None:
        """"When is it going to clear up?": look the next values of an ordered slot of the goal's tool up
        (days of the week, times of day), one call each, until a result answers the customer: it has a
        value the message names ("sunny" -> Sunny), or else differs from the one just given. Returns the
        slot searched over, or None when the goal has no such slot or no value to start from. ``named``:
        the listed values the message names (:meth:`named_values`), ``given``: the values it gives."""
        types = self.types(sop)
        for node in sop.nodes.values():
            if not node.tool:
                continue
            for src in node.arg_map.values():
                name = src[len("context."):] if src.startswith("context.") else ""
                name = name.rstrip("?")
                st = types.get(name)
                current = goal.slots.get(name)
                if st is None or st.kind != "option" or not _ordered(st.vocab) or current not in st.vocab \
                        or name in (given or {}):  # "and on Friday?" names the value: no search
                    continue
                last = goal.slots.get(node.result_key) if sop.format == "json" else None
                # a value the last request used is changed ("when will Chicago next be sunny?"); a value
                # it did not use is what a result must show ("sunny"), not a filter
                shown = {**named, **{k: v for k, v in (given or {}).items()
                                     if k in types and types[k].kind == "option"}}
                want = {k: v for k, v in shown.items() if k != name and unknown(goal, k)}
                goal.slots.update({k: v for k, v in shown.items() if k != name and k not in want})
                args = {T.squash(a) for a, src in node.arg_map.items()  # the inputs the last call sent
                        if not (src.startswith("context.") and unknown(goal, strip_context(src)))}
                avoid = {k: v for k, v in (last or {}).items() if isinstance(v, str) and T.squash(k) not in args}
                goal.slots[SEARCH_KEY] = {"node": node.id, "slot": name, "tried": [current], "want": want,
                                          "avoid": avoid}
                goal.slots[name] = _after(st.vocab, current)
                goal.step, goal.pending = node.id, None
                return name
        return None

    def _search_on(self, goal: Goal, sop: Sop, resp: AgentRunResponse) -> bool:
        """After each call of a search: stop when the result answers, else call again with the next
        value. True when the step was sent back to the tool."""
        search = goal.slots[SEARCH_KEY]
        node = sop.node(search["node"])
        if node is None or goal.step is None or goal.step not in (node.id, *sop.reachable(node.id)):
            goal.slots.pop(SEARCH_KEY, None)  # the flow went elsewhere: the search is over
            return False
        if goal.step != node.next:  # the call is still to come
            return False
        result = goal.slots.get(node.result_key) if sop.format == "json" else (
            goal.memory[-1].observation if goal.memory else None)
        st = self.types(sop).get(search["slot"])
        current = goal.slots.get(search["slot"])
        tried = [*search["tried"], current]
        nxt = _after(st.vocab, current) if st is not None and current in st.vocab else None
        if _answers(result, search["want"], search["avoid"]) or nxt is None or nxt in tried:
            resp.decisions.append(f"search over {search['slot']} ends at {current}")
            goal.slots.pop(SEARCH_KEY, None)
            return False
        resp.decisions.append(f"search over {search['slot']}: {current} does not answer, trying {nxt}")
        goal.slots[SEARCH_KEY] = {**search, "tried": tried}
        goal.slots[search["slot"]] = nxt
        goal.step = node.id
        return True

    def _decide(self, goal: Goal, sop: Sop, node: Node, resp: AgentRunResponse) -> None:
        obs = goal.memory[-1].observation if goal.memory else None
        seen: dict[str, str] = {}  # what the conditions were judged on, for the trace
        for b in node.branches:
            if b.condition is None:
                taken = True
            elif b.expr:
                tree = parse(b.condition)
                context = {**self._facts(goal), **goal.slots} if sop.format == "json" \
                    else self._results_context(goal, sop, obs)  # a JSON SOP's context holds its results' fields
                seen.update({path: _brief(lookup(context, path)) for path in paths(tree)})
                try:
                    taken = bool(evaluate(tree, context, self.env.today()))
                except EvalError as exc:  # "a * b" on a missing key or a word, a division by zero: false
                    resp.decisions.append(f"{node.label}: could not evaluate {b.condition!r} ({exc.reason}): else")
                    taken = False
            else:
                seen.setdefault("the last result", _brief(obs))
                taken = self.env.brain.branch(b.condition, obs)
            if taken:
                saw = f" (saw {', '.join(f'{k} = {v}' for k, v in seen.items())})" if seen else ""
                resp.decisions.append(f"{node.label}: {b.condition or 'else'} -> {b.target}{saw}")
                self._move(goal, sop, node, b.target)
                return
        goal.step = None

    @staticmethod
    def _move(goal: Goal, sop: Sop, node: Node, target: str | None) -> None:
        """Go from ``node`` to ``target``. A step that sends the flow back to an earlier one (a decision's
        branch, or a message such as "the limit is $500" whose next step is the ask again) asks the
        questions from there to here again."""
        goal.step = target
        order = sop.walk()
        if target not in order or node.id not in order or order.index(target) > order.index(node.id) \
                or node.id not in sop.reachable(target):
            return  # forward (or a join after a branch): nothing is asked again
        for nid in sorted(sop.reachable(target)):  # the loop: every ask on the way from there back to here
            if sop.nodes[nid].asks and node.id in sop.reachable(nid):
                for p in sop.nodes[nid].fills:
                    goal.slots.pop(p.name, None)

    def _action(self, goal: Goal, sop: Sop, node: Node, req: AgentRunRequest, resp: AgentRunResponse) -> None:
        if node.asks:
            missing = [p.name for p in node.fills if not p.optional and unknown(goal, p.name)]
            if not missing and node.fills:
                resp.decisions.append(f"skip {node.label!r}: already known")
                known = {p.name: goal.slots.get(p.name) for p in node.fills if not unknown(goal, p.name)}
                # remembered as answered: a decision right after it is judged on these values
                goal.memory.append(MemoryEntry(action=node.label, observation=known, feedback="success",
                                               turn=req.turn))
                goal.step = node.next
                return
            if missing and set(missing) <= set(goal.unavailable) and self._missing_way(sop, node):
                resp.decisions.append(f"skip {node.label!r}: the customer said they cannot give it")
                self._pass_unanswered(goal, node, "said before that they cannot give it", req.turn)
                return
            if "api_call" not in node.kinds:
                self._ask(goal, sop, node, resp, req)
                return
        if "api_call" in node.kinds:
            self._request_tool(goal, sop, node, req, resp)
            return
        if node.hands_off:  # the processor reaches the team (the store's hand-off tool); the goal ends here
            resp.actions.append(node.label)
            resp.handoff = node.text
            goal.memory.append(MemoryEntry(action=node.label, observation="handed off", feedback="success",
                                           turn=req.turn))
            self._end(goal, node, resp, "handed_off")
            return
        if node.call:  # the called SOP runs as a goal of its own; this one goes on when it ends
            if self._count_attempt(goal, node, resp):
                resp.actions.append(node.label)
                resp.call = node.call
            return
        if req.others_waiting and not node.tool and T.offers_more(node.message):
            resp.decisions.append(f"skip {node.label!r}: another request is waiting")
            goal.step = node.next
            return
        given = _invited_values_given(goal, sop, node)
        if given:  # "I can narrow the search by name, location, price or rating" after "a premium bike at the Harbour"
            resp.decisions.append(f"skip {node.label!r}: the customer already gave {', '.join(given)}")
            goal.step = node.next
            return
        if not self._count_attempt(goal, node, resp):
            return
        resp.actions.append(node.label)
        msg = self._message(goal, sop, node, req.preferences, resp.computed)
        if msg:
            resp.messages.append(msg)
        goal.memory.append(MemoryEntry(action=node.label, observation="done", feedback="success", turn=req.turn))
        goal.attempts.pop(node.id, None)
        self._move(goal, sop, node, node.next)

    def _request_tool(self, goal: Goal, sop: Sop, node: Node, req: AgentRunRequest, resp: AgentRunResponse) -> None:
        """Ask for a missing input first; else request the step's tool (one counted run of the step)."""
        facts = self._facts(goal)  # a tool takes what earlier tools returned by the param's name ("context.total")
        found = {p.name: facts[p.name] for p in node.params if unknown(goal, p.name)
                 and facts.get(p.name) not in (None, "")}
        if found:
            goal.slots.update(found)
            resp.decisions.append(f"{', '.join(found)} for {node.label!r} from an earlier result")
        missing = [p.name for p in node.params if not p.optional and unknown(goal, p.name)]
        if missing:
            asker = self._asker_for(sop, missing[0], before=node.id)
            if asker is not None:
                self._ask(goal, sop, asker, resp, req)
                return
            what = missing[0].replace("_", " ")
            resp.decisions.append(f"{node.label!r} needs {missing[0]}, which no step asks for: ending gracefully")
            self._end(goal, None, resp, "failed", say("cannot_without", resp.language, action=node.label, what=what))
            return
        if not self._count_attempt(goal, node, resp):
            return
        resp.actions.append(node.label)
        resp.tool_requests.append(ToolRequest(node.tool, self._args(goal, node, req.preferences), node.id))
        goal.status = GoalStatus.ACTIVE

    def _ask(self, goal: Goal, sop: Sop, node: Node, resp: AgentRunResponse, req: AgentRunRequest, *,
             counted: bool = False) -> None:
        """Put the step's question to the customer; ``counted`` when this run was already counted
        (a step that called its API first)."""
        if not counted:
            if not self._count_attempt(goal, node, resp):
                return
            resp.actions.append(node.label)
        context = {**self._facts(goal), **goal.slots} if node.message else goal.slots  # "{context.minutesLate}"
        question = self._own_examples(sop, node, self.env.brain.question(node, context))
        offer = self._remembered_offer(goal, sop, node, req.preferences)
        question = f"{question} {offer}" if offer else question
        goal.pending = node.id
        goal.next_question = question
        goal.status = GoalStatus.BLOCKED
        resp.messages.append(question)
        resp.asked = True

    def _own_examples(self, sop: Sop, node: Node, question: str) -> str:
        """Examples in a question ("e.g. laptop, mouse or headset") that this store's own data has none of
        (an SOP copied from another store) are replaced by the first values of that data, so a pet
        store never suggests laptops."""
        found = EXAMPLES.search(question)
        if found is None:
            return question
        given = [w.strip().lower() for w in re.split(r",|\bor\b|\band\b", found.group(2)) if w.strip()]
        types = self.types(sop)
        for p in node.fills:
            st = types.get(p.name)
            own = [str(v) for v in (st.vocab or [])] if st is not None and st.kind in ("category", "brand") else []
            known = {T.singular(v.lower()) for v in own}
            if own and given and not any(T.singular(g) in known for g in given):
                picks = own[:3]
                listed = picks[0] if len(picks) == 1 else f"{', '.join(picks[:-1])} or {picks[-1]}"
                return question[:found.start(2)] + listed.lower() + question[found.end(2):]
        return question

    def _remembered_offer(self, goal: Goal, sop: Sop, node: Node, prefs: PreferenceSummary) -> str:
        """A remembered value offered as the default answer (a known budget: "Still around ฿30,000–฿40,000?")."""
        types = self.types(sop)
        for p in node.fills:
            st = types.get(p.name)
            about = f"{p.name} {node.expects}"
            rng = remembered_range(st.kind, about, prefs) if st is not None and unknown(goal, p.name) else None
            if rng is not None:
                return offer_question(goal.slots, p.name, rng, self.env.currency)
        return ""

    def _count_attempt(self, goal: Goal, node: Node, resp: AgentRunResponse) -> bool:
        """Count a run of a step; the paper's limit: a 4th run without progress ends the goal."""
        n = goal.attempts.get(node.id, 0) + 1
        if n > MAX_ATTEMPTS:
            resp.decisions.append(f"{node.label!r} ran {MAX_ATTEMPTS} times without progress: ending gracefully")
            self._end(goal, None, resp, "failed", say("graceful_end", resp.language))
            return False
        goal.attempts[node.id] = n
        return True

    @staticmethod
    def _asker_for(sop: Sop, slot: str, before: str | None = None) -> Node | None:
        """The step that asks for a slot; with ``before``, preferably the closest one on a path to that step."""
        askers = [sop.nodes[n] for n in sop.walk()
                  if sop.nodes[n].asks and any(p.name == slot for p in sop.nodes[n].fills)]
        if before is not None:
            upstream = [a for a in askers if a.id != before and before in sop.reachable(a.id)]
            askers = upstream[-1:] or askers
        return askers[0] if askers else None

    def _asker_for_error(self, goal: Goal, sop: Sop, node: Node, call: ToolCall) -> Node | None:
        """The ask to return to after an "invalid input" error: the one whose slot the error names
        (by the slot's name or the API param it was passed as), else the one answered most recently."""
        said = " ".join(T.words(call.error.replace("_", " ")))
        best: tuple[tuple[float, float, int, int], Node] | None = None
        for p in node.params:
            asker = self._asker_for(sop, p.name, before=node.id)
            if asker is None:
                continue
            names = [p.name] + [k for k, v in call.args.items() if v == goal.slots.get(p.name) and k != p.name]
            key = max((_named_in(name, said) for name in names), default=(0.0, 0.0, 0))
            ranked = (*key, last_success(goal, asker.label))
            if best is None or ranked > best[0]:
                best = (ranked, asker)
        return best[1] if best else None

    def rewind(self, goal: Goal, sop: Sop, target: Node, turn: int = 0, said: str = "") -> None:
        """Go back to an earlier ask the customer wants to redo (the reader chose it, see
        :func:`core.understanding.go_back.go_back_target`): its slots and those of every ask after it are cleared, so the flow runs
        again from there. ``said``: the customer's words, kept in the execution memory."""
        self.note_detour(goal, sop, said, turn)
        for nid in sop.reachable(target.id):
            goal.attempts.pop(nid, None)
        _clear_from(goal, sop, target)
        goal.step, goal.pending = target.id, None

    def note_detour(self, goal: Goal, sop: Sop, text: str, turn: int, action: str = "") -> None:
        """Record a reply that was a question or a request rather than an answer (feedback fail),
        and the step taken for it (e.g. seeking external knowledge), in execution memory."""
        node = sop.node(goal.pending)
        if node is not None:
            goal.memory.append(MemoryEntry(action=node.label, observation=self.env.brain.correct(text),
                                           feedback="fail", turn=turn))
        if action:
            goal.memory.append(MemoryEntry(action=action, observation="done", feedback="success", turn=turn))

    def _args(self, goal: Goal, node: Node, prefs: PreferenceSummary) -> dict[str, Any]:
        from core.understanding.brains.rule import fill_template

        if node.arg_map:
            optional = {p.name for p in node.params if p.optional}
            args = {}
            for k, src in node.arg_map.items():
                if src.startswith("context.") and strip_context(src) in optional \
                        and unknown(goal, strip_context(src)):
                    continue  # an optional input left out of the call while unknown
                args[k] = lookup(goal.slots, src) if src.startswith("context.") \
                    else fill_template(src, goal.slots) if TEMPLATE_REF.search(src) else src
        else:
            args = {p.name: goal.slots[p.name] for p in node.params if not unknown(goal, p.name)}
        commerce = self.env.commerce
        if commerce is not None and node.tool == commerce.search_tool:
            return commerce.search_args(args, self.env.tool_params.get(node.tool, set()), prefs, goal)
        return args

    # ------------------------------------------------------------------ tool results
    def _apply_results(self, goal: Goal, sop: Sop, req: AgentRunRequest, resp: AgentRunResponse) -> None:
        for call in req.tool_results:
            node = sop.node(goal.step)
            if node is None:
                return
            if call.ok:
                goal.memory.append(MemoryEntry(action=node.label, observation=call.result, feedback="success",
                                               turn=req.turn))
                if sop.format == "json":
                    goal.slots[node.result_key] = call.result
                if node.asks:  # api_call|ask_user_input: the API ran, now its question (same run of the step)
                    self._ask(goal, sop, node, resp, req, counted=True)
                    return
                goal.attempts.pop(node.id, None)
                if "message_to_user" in node.kinds:
                    msg = self._message(goal, sop, node, req.preferences, resp.computed)
                    if msg:
                        resp.messages.append(msg)
                goal.step = node.next
                continue
            goal.memory.append(MemoryEntry(action=node.label, observation=call.error, feedback="fail",
                                           turn=req.turn))
            self._on_failure(goal, sop, node, call, resp)

    def _on_failure(self, goal: Goal, sop: Sop, node: Node, call: ToolCall, resp: AgentRunResponse) -> None:
        """Paper §3: invalid input -> back to the ask that filled it; other errors -> retry at once."""
        if call.error_kind == "denied":
            resp.decisions.append(f"{call.tool} denied for agent {self.name}: ending gracefully")
            self._end(goal, None, resp, "failed", say("not_allowed_here", resp.language))
            return
        if call.side_effects and call.error_kind == "timeout":  # it may have gone through: never sent twice
            resp.decisions.append(f"{call.tool} changes things and timed out: not tried again, it may have "
                                  "gone through")
            self._end(goal, None, resp, "failed", say("side_effect_unsure", resp.language))
            return
        if call.error_kind == "invalid_input":
            asker = self._asker_for_error(goal, sop, node, call)
            if asker is not None:
                if goal.attempts.get(node.id, 0) >= MAX_ATTEMPTS:
                    resp.decisions.append(f"{node.label!r} ran {MAX_ATTEMPTS} times without progress: "
                                          "ending gracefully")
                    self._end(goal, None, resp, "failed", say("graceful_end", resp.language))
                    return
                _clear_from(goal, sop, asker)
                resp.decisions.append(f"{call.tool} said the input is invalid: back to {asker.label!r}")
                resp.messages.append(say("tool_rejected", resp.language, reason=call.public_error) if call.public_error
                                     else say("tool_rejected_plain", resp.language))
                goal.step = asker.id
                return
        resp.decisions.append(f"{call.tool} failed ({call.error_kind}): retrying {node.label!r}")
        # goal.step stays on the node: the loop runs it again (counted by _count_attempt)

    # ------------------------------------------------------------------ messages
    @staticmethod
    def _facts(goal: Goal) -> dict[str, Any]:
        """The fields of what the goal's tools returned so far, the latest winning."""
        facts: dict[str, Any] = {}
        for entry in goal.memory:
            if entry.feedback == "success" and isinstance(entry.observation, dict):
                facts.update(entry.observation)
        return facts

    def _results_context(self, goal: Goal, sop: Sop, last: Any) -> dict[str, Any]:
        """What a text SOP's written condition reads: slots, the fields of earlier results (``status``),
        the last result (``result.status``) and each result under the words of its step and tool
        (``loan.renewals`` after "look up the loan" or a tool ``loans.lookup``)."""
        named: dict[str, Any] = {}
        steps = {n.label: n for n in sop.nodes.values() if n.tool}
        for entry in goal.memory:
            node = steps.get(entry.action)
            if node is None or entry.feedback != "success" or not isinstance(entry.observation, dict):
                continue
            named.update(dict.fromkeys(node.result_names(), entry.observation))
        return {**named, **self._facts(goal), **goal.slots, "result": last}

    def returned(self, goal: Goal, sop: Sop, callee: Goal, turn: int) -> bool:
        """A goal whose ``call`` step's SOP has ended: what the called goal learned (its slots, and the fields of
        its tools' results) joins this goal's, and the flow goes past the call step. False (the flow stays)
        when the called goal did not complete."""
        node = sop.node(goal.step)
        if node is None or not node.call:
            return False
        learned = {**self._facts(callee), **{k: v for k, v in callee.slots.items() if v not in (None, "")}}
        ok = callee.outcome == "completed"
        goal.memory.append(MemoryEntry(action=node.label, observation=learned if ok else callee.outcome or "ended",
                                       feedback="success" if ok else "fail", turn=turn))
        if not ok:
            return False
        goal.slots.update({k: v for k, v in callee.slots.items() if v not in (None, "")})
        goal.attempts.pop(node.id, None)
        goal.status = GoalStatus.ACTIVE
        self._move(goal, sop, node, node.next)
        return True

    def _message(self, goal: Goal, sop: Sop, node: Node, prefs: PreferenceSummary,
                 computed: list[str] | None = None) -> str:
        from core.understanding.brains.rule import fill_template

        obs = goal.memory[-1].observation if goal.memory else None
        short = prefs.communication_style == "short"
        if render.is_item_list(obs):
            Commerce.remember(goal, obs, 1 if short else 3)
            return render.render_items(obs, self.env.currency, short=short)
        if render.is_kb_hits(obs):
            goal.slots["kb_refs"] = [h.get("ref") for h in obs]
            goal.slots["answer_sent"] = True
            subject = next((goal.slots[n] for n, st in self.types(sop).items() if st.kind == "model"
                            and isinstance(goal.slots.get(n), str)), "")  # "what to try for your Dell XPS 13"
            return render.render_fix(obs, subject, short=short)
        values = {**self._facts(goal), **goal.slots}
        text = fill_template(node.message, values, computed) if node.message else ""
        if isinstance(obs, dict) and "api_call" in node.kinds and not node.message:
            text = render.render_record(obs)
        return text

    def _end(self, goal: Goal, node: Node | None, resp: AgentRunResponse, outcome: str, message: str = "") -> None:
        from core.understanding.brains.rule import fill_template

        if node is not None and node.message:
            message = fill_template(node.message, goal.slots)
        if message:
            resp.messages.append(message)
        if resp.messages:
            resp.messages[-1] = render.strip_help_offer(resp.messages[-1]) or resp.messages[-1]
        resp.done = True
        resp.outcome = outcome
        goal.updated_at = utcnow()

    def _refresh_missing(self, goal: Goal, sop: Sop) -> None:
        """Missing = required params of the next api_call not yet known, plus the pending ask's slots."""
        missing: list[str] = []
        pending = sop.node(goal.pending)
        if pending is not None:
            missing += [p.name for p in pending.fills if goal.slots.get(p.name) in (None, "")]
        api = _next_api(sop, goal.pending or goal.step)
        if api is not None:
            missing += [p.name for p in api.params if not p.optional and goal.slots.get(p.name) in (None, "")
                        and p.name not in missing]
        goal.missing = missing if goal.pending else []
        if not goal.pending:
            goal.next_question = ""


SEARCH_KEY = "_search"
"""Slot holding a search over an ordered slot's values in progress (see ``start_search``)."""


def _ordered(vocab: list[str]) -> bool:
    """Whether a list of values is a cycle in time: days of the week, or clock times."""
    days = {d.lower() for d in T.WEEKDAYS}
    return len(vocab) > 2 and (all(v.lower() in days for v in vocab) or all(T.CLOCK.fullmatch(v.strip())
                                                                           for v in vocab))


def _after(vocab: list[str], value: str) -> str:
    return vocab[(vocab.index(value) + 1) % len(vocab)]


def _answers(result: Any, want: dict[str, str], avoid: dict[str, str]) -> bool:
    """Whether a search's result answers the customer: it has every wanted value, or (nothing wanted)
    one of its values differs from where the search started."""
    if not isinstance(result, dict) or not result or result.get("found") is False:
        return False
    values = {T.squash(k): str(v).lower() for k, v in result.items()}
    if want:
        return all(values.get(T.squash(k)) == str(v).lower() for k, v in want.items())
    return any(values.get(T.squash(k)) != str(v).lower() for k, v in avoid.items()) if avoid else True


def _invited_values_given(goal: Goal, sop: Sop, node: Node) -> list[str]:
    """The values a message step only invites, when the customer already gave some: a message with no
    placeholders right before a tool, naming optional inputs of it and no required one ("you can narrow
    it down by location or price" before a search taking location? and cost?). Such a message is
    skipped (a clerk who was told "a premium one, not at the Old Mill" searches at once)."""
    nxt = sop.node(node.next) if node.next else None
    if nxt is None or not nxt.tool or not nxt.params or "{" in (node.message or "") or node.fills:
        return []
    said = {T.stem(w) for w in T.words(node.message or node.label)}
    named = [p for p in nxt.params if {T.stem(w) for w in p.name.split("_")} & said]
    if not named or any(not p.optional for p in named):
        return []
    return [p.name for p in named if not unknown(goal, p.name)]


def _clear_from(goal: Goal, sop: Sop, ask: Node) -> None:
    """Forget what an ask and every ask after it collected: the flow runs again from that ask."""
    for nid in sop.reachable(ask.id):
        later = sop.nodes[nid]
        for p in later.fills if later.asks else []:
            goal.slots.pop(p.name, None)


def _named_in(name: str, text: str) -> tuple[float, float, int]:
    """How plainly a text names a slot or param: (whole name as a phrase, share of its words, words
    matched), so "old email otp" beats "old email" in "the old email otp is invalid"."""
    words = T.words(name.replace("_", " "))
    if not words:
        return 0.0, 0.0, 0
    phrase = float(re.search(rf"\b{re.escape(' '.join(words))}\b", text) is not None)
    hits = sum(w in text.split() for w in words)
    return phrase, hits / len(words), hits


def _next_api(sop: Sop, start: str | None) -> Node | None:
    seen: set[str] = set()
    nid = start
    while nid and nid not in seen and nid in sop.nodes:
        seen.add(nid)
        node = sop.nodes[nid]
        if "api_call" in node.kinds:
            return node
        if node.kind != "action":
            return None
        nid = node.next
    return None


EXAMPLES = re.compile(r"\b(e\.g\.|for example|such as)\s+([^()?;]+?)(?=\)|\?|;|$)", re.I)
"""Examples a question gives: "(a product category, e.g. laptop, mouse or headset)" -> the list."""


def _brief(value: Any, limit: int = 60) -> str:
    """A value as the trace shows what a condition saw: JSON-like, cut to ``limit`` characters."""
    import json

    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
