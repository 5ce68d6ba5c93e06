"""A step's tool: requesting it (asking first for a missing input, the arguments filled from the goal) and taking
what it returned, a failure going to the failure rules (:mod:`core.engine.flow.failures`). The agent requests
tools; the orchestrator runs them."""

from __future__ import annotations

from typing import Any

from core.engine.flow.asking import ask
from core.engine.flow.contract import AgentEnv, AgentRunRequest, AgentRunResponse, ToolRequest
from core.engine.flow.failures import count_attempt, on_failure
from core.engine.flow.messages import end, step_message
from core.engine.flow.moves import asker_for
from core.engine.flow.results import facts
from core.language.replies import say
from core.shared.models import Goal, GoalStatus, MemoryEntry
from core.sop.expr import strip_context
from core.sop.expr_eval import lookup
from core.sop.expr_templates import TEMPLATE_REF
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import slot_unknown


def request_tool(env: AgentEnv, goal: Goal, sop: Sop, node: Node, req: AgentRunRequest,
                 resp: AgentRunResponse) -> None:
    """Ask for a missing input first; else request the step's tool (one counted run of the step)."""
    known = facts(goal)  # a tool takes what earlier tools returned by the param's name ("context.total")
    found = {p.name: known[p.name] for p in node.params if slot_unknown(goal, p.name)
             and known.get(p.name) not in (None, "")}
    if found:
        goal.slots.update(found)
        resp.decisions.append(f"{', '.join(found)} for {node.label!r} from an earlier result")
    missing = [p.name for p in node.params if not p.optional and slot_unknown(goal, p.name)]
    if missing:
        asker = asker_for(sop, missing[0], before=node.id)
        if asker is not None:
            ask(env, goal, sop, asker, resp, req)
            return
        what = missing[0].replace("_", " ")
        resp.decisions.append(f"{node.label!r} needs {missing[0]}, which no step asks for: ending gracefully")
        end(goal, None, resp, "failed", say("cannot_without", resp.language, action=node.label, what=what))
        return
    if not count_attempt(goal, node, resp):
        return
    resp.actions.append(node.label)
    resp.tool_requests.append(ToolRequest(node.tool, tool_args(env, goal, node, req.preferences), node.id))
    goal.status = GoalStatus.ACTIVE


def tool_args(env: AgentEnv, goal: Goal, node: Node, prefs: PreferenceSummary) -> dict[str, Any]:
    """The arguments of a step's tool: its argument map filled from the goal (an optional input left out while
    unknown), or its params by name; a store's item search adds what the customer prefers."""
    from core.understanding import fill_template

    if node.arg_map:
        optional = {p.name for p in node.params if p.optional}
        args = {}
        for k, src in node.arg_map.items():
            if src.startswith("context.") and strip_context(src) in optional \
                    and slot_unknown(goal, strip_context(src)):
                continue  # an optional input left out of the call while unknown
            args[k] = lookup(goal.slots, src) if src.startswith("context.") \
                else fill_template(src, goal.slots) if TEMPLATE_REF.search(src) else src
    else:
        args = {p.name: goal.slots[p.name] for p in node.params if not slot_unknown(goal, p.name)}
    commerce = env.commerce
    if commerce is not None and node.tool == commerce.search_tool:
        return commerce.search_args(args, env.tool_params.get(node.tool, set()), prefs, goal)
    return args


def apply_results(env: AgentEnv, agent: str, goal: Goal, sop: Sop, req: AgentRunRequest,
                  resp: AgentRunResponse) -> None:
    """Take this pass's tool results: a success is remembered and the flow goes on (a step that also asks puts
    its question now); a failure goes to the failure rules."""
    for call in req.tool_results:
        node = sop.node(goal.step)
        if node is None:
            return
        if call.ok:
            result = call.result
            if env.commerce is not None and node.tool == env.commerce.search_tool:
                result = env.commerce.keep_matches(goal, result)  # a near miss is no match
            goal.memory.append(MemoryEntry(action=node.label, observation=result, feedback="success",
                                           turn=req.turn))
            if sop.format == "json":
                goal.slots[node.result_key] = result
            if node.asks:  # api_call|ask_user_input: the API ran, now its question (same run of the step)
                ask(env, goal, sop, node, resp, req, counted=True)
                return
            goal.attempts.pop(node.id, None)
            if "message_to_user" in node.kinds:
                msg = step_message(env, goal, sop, node, req.preferences, resp.computed)
                if msg:
                    resp.messages.append(msg)
            goal.step = node.next
            continue
        goal.memory.append(MemoryEntry(action=node.label, observation=call.error, feedback="fail",
                                       turn=req.turn))
        on_failure(agent, goal, sop, node, call, resp)
