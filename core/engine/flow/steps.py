"""The step loop: run a goal's SOP steps until the goal needs the customer, needs a tool, calls another SOP, or
ends; and what one action step does (ask, request its tool, hand off, call, or say its message)."""

from __future__ import annotations

from core.engine.flow.asking import ask
from core.engine.flow.contract import AgentEnv, AgentRunRequest, AgentRunResponse
from core.engine.flow.decisions import decide, implied_answer
from core.engine.flow.failures import count_attempt
from core.engine.flow.messages import end, invited_values_given, step_message
from core.engine.flow.moves import move, next_api, refresh_missing
from core.engine.flow.replies import missing_way, pass_unanswered
from core.engine.flow.search import SEARCH_KEY, search_on
from core.engine.flow.tool_calls import apply_results, request_tool
from core.language import text as T
from core.language.replies import say
from core.shared.models import Goal, GoalStatus, MemoryEntry
from core.sop.graph import Node, Sop
from core.understanding import slot_unknown


def run_steps(env: AgentEnv, agent: str, req: AgentRunRequest) -> AgentRunResponse:
    """Execute steps until the goal needs the customer, needs a tool, or ends. ``agent``: the agent's name
    (the trace says which agent a tool was denied to)."""
    goal, sop = req.goal, req.sop
    resp = AgentRunResponse(language=req.language)
    if req.tool_results:
        apply_results(env, agent, goal, sop, req, resp)
    steps = 0
    while not resp.done and not resp.asked and not resp.tool_requests and not resp.call:
        if goal.status == GoalStatus.DONE:
            break
        steps += 1
        if steps > env.max_steps:
            resp.decisions.append(f"stopped after {env.max_steps} steps this turn")
            break
        if SEARCH_KEY in goal.slots and search_on(env.types(sop), goal, sop, resp):
            continue
        node = sop.node(goal.step)
        if node is not None:
            resp.path.append(node.id)
        if node is None or node.kind == "end":
            end(goal, node, resp, "completed")
            break
        if went_round(node, req.visited, resp):
            end(goal, None, resp, "failed", say("went_round", resp.language))
            break
        req.visited.append(node.id)
        if node.kind == "decision":
            decide(env, goal, sop, node, resp)
            continue
        take_action(env, goal, sop, node, req, resp)
    refresh_missing(goal, sop)
    return resp


def leads_to_off_tool(goal: Goal, sop: Sop, node: Node, req: AgentRunRequest, resp: AgentRunResponse) -> bool:
    """Whether the ask ``node`` only gathers what a tool that is off this turn needs: the goal then ends with one
    sentence at once, rather than asking questions whose answers nothing can use (an inventory search whose
    sheet was never read, a tool of an untrusted workspace)."""
    api = next_api(sop, node.id)
    if api is None or api.tool not in req.off:
        return False
    resp.decisions.append(f"{api.tool} is not available: {node.label!r} is not asked, the goal ends")
    end(goal, None, resp, "failed", say("tool_unavailable", resp.language))
    return True


def went_round(node: Node, visited: list[str], resp: AgentRunResponse) -> bool:
    """Whether running ``node`` again this turn would go round a cycle of steps: it ran before in this turn, not
    just now (a failed step tried again is not a cycle), and it does not wait for the customer. The goal then ends
    with one sentence, never a message said again (lint reports such a cycle as an error)."""
    if node.asks or node.id not in visited or visited[-1] == node.id:
        return False
    ring = visited[visited.index(node.id):]
    resp.decisions.append(f"{node.label!r} came round again this turn without waiting for the customer (a cycle of "
                          f"{len(ring)} step{'s' if len(ring) != 1 else ''}): the goal ends here")
    return True


def take_action(env: AgentEnv, goal: Goal, sop: Sop, node: Node, req: AgentRunRequest,
                resp: AgentRunResponse) -> None:
    """Run an action step: an ask already answered (or that the customer cannot answer) is passed, else asked;
    a tool is requested; a hand-off ends the goal; a call starts the called SOP; a message is said (or skipped
    when another request waits, or it only invites values the customer already gave)."""
    if node.asks:
        missing = [p.name for p in node.fills if not p.optional and slot_unknown(goal, p.name)]
        if not missing and node.fills:
            resp.decisions.append(f"skip {node.label!r}: already known")
            known = {p.name: goal.slots.get(p.name) for p in node.fills if not slot_unknown(goal, p.name)}
            # remembered as answered: a decision right after it is judged on these values
            goal.memory.append(MemoryEntry(action=node.label, observation=known, feedback="success",
                                           turn=req.turn))
            goal.step = node.next
            return
        implied = implied_answer(env, goal, sop, node) if missing else None
        if implied is not None:
            said = f"{implied.slot} = {str(implied.answer).lower()}, the only answer" if implied.answer is not None \
                else f"{implied.slot} is not needed: the only way"
            resp.decisions.append(f"skip {node.label!r}: {said} whose next question ({implied.answered.label!r}) "
                                  f"the customer already answered")
            if implied.answer is not None:
                goal.slots[implied.slot] = implied.answer
            goal.memory.append(MemoryEntry(action=node.label, observation={implied.slot: implied.answer},
                                           feedback="success", turn=req.turn))
            goal.step = implied.go_to
            return
        if missing and set(missing) <= set(goal.unavailable) and missing_way(env.types(sop), sop, node):
            resp.decisions.append(f"skip {node.label!r}: the customer said they cannot give it")
            pass_unanswered(goal, node, "said before that they cannot give it", req.turn)
            return
        if "api_call" not in node.kinds:
            if not leads_to_off_tool(goal, sop, node, req, resp):
                ask(env, goal, sop, node, resp, req)
            return
    if "api_call" in node.kinds:
        request_tool(env, goal, sop, node, req, resp)
        return
    if node.hands_off:  # the processor reaches the team (the store's hand-off tool); the goal ends here
        resp.actions.append(node.label)
        resp.handoff = node.text
        goal.memory.append(MemoryEntry(action=node.label, observation="handed off", feedback="success",
                                       turn=req.turn))
        end(goal, node, resp, "handed_off")
        return
    if node.call:  # the called SOP runs as a goal of its own; this one goes on when it ends
        if count_attempt(goal, node, resp):
            resp.actions.append(node.label)
            resp.call = node.call
        return
    if req.others_waiting and not node.tool and T.offers_more(node.message):
        resp.decisions.append(f"skip {node.label!r}: another request is waiting")
        goal.step = node.next
        return
    given = invited_values_given(goal, sop, node)
    if given:  # "I can narrow the search by name, location, price or rating" after "a premium bike at the Harbour"
        resp.decisions.append(f"skip {node.label!r}: the customer already gave {', '.join(given)}")
        goal.step = node.next
        return
    if not count_attempt(goal, node, resp):
        return
    resp.actions.append(node.label)
    msg = step_message(env, goal, sop, node, req.preferences, resp.computed)
    if msg:
        resp.messages.append(msg)
    goal.memory.append(MemoryEntry(action=node.label, observation="done", feedback="success", turn=req.turn))
    goal.attempts.pop(node.id, None)
    move(goal, sop, node, node.next)
