"""What a run says: a step's message (items found, fixes from the knowledge base, a filled template, a record), the
goal's last words when it ends, and the message steps that only invite values the customer already gave."""

from __future__ import annotations

from core.engine.flow.contract import AgentEnv, AgentRunResponse
from core.engine.flow.results import facts
from core.language import render
from core.language import text as T
from core.shared.models import Goal, utcnow
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import Commerce, slot_unknown


def step_message(env: AgentEnv, goal: Goal, sop: Sop, node: Node, prefs: PreferenceSummary,
                 computed: list[str] | None = None) -> str:
    """The words a step says: the items or fixes its tool found, else its template filled, else its record."""
    from core.understanding import fill_template

    obs = goal.memory[-1].observation if goal.memory else None
    short = prefs.communication_style == "short"
    if render.is_item_list(obs):
        Commerce.remember(goal, obs, 1 if short else 3)
        return render.render_items(obs, env.currency, short=short)
    if render.is_kb_hits(obs):
        goal.slots["kb_refs"] = [h.get("ref") for h in obs]
        goal.slots["answer_sent"] = True
        subject = next((goal.slots[n] for n, st in env.types(sop).items() if st.kind == "model"
                        and isinstance(goal.slots.get(n), str)), "")  # "what to try for your Dell XPS 13"
        return render.render_fix(obs, subject, short=short)
    values = {**facts(goal), **goal.slots}
    if isinstance(obs, dict) and "api_call" in node.kinds:  # a step that calls a tool and speaks names what the
        values.update({k: v for k, v in obs.items() if v not in (None, "")})  # tool made of the customer's words
    text = fill_template(node.message, values, computed) if node.message else ""
    if isinstance(obs, dict) and "api_call" in node.kinds and not node.message:
        text = render.render_record(obs)
    if isinstance(obs, list) and not obs and env.commerce is not None:
        near = env.commerce.nothing_matched(goal)  # what nothing had, and the nearest item
        text = f"{near}\n{text}".strip() if near else text
    return text


def end(goal: Goal, node: Node | None, resp: AgentRunResponse, outcome: str, message: str = "") -> None:
    """End the goal with ``outcome``: the end step's message (or ``message``) is said, and the last message
    makes no offer of more help."""
    from core.understanding import fill_template

    if node is not None and node.message:
        message = fill_template(node.message, goal.slots)
    if message:
        resp.messages.append(message)
    if resp.messages:
        resp.messages[-1] = render.strip_help_offer(resp.messages[-1]) or resp.messages[-1]
    resp.done = True
    resp.outcome = outcome
    goal.updated_at = utcnow()


def invited_values_given(goal: Goal, sop: Sop, node: Node) -> list[str]:
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
    return [p.name for p in named if not slot_unknown(goal, p.name)]
