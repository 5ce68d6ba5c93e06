"""Where the flow goes in an SOP's graph: moving from a step to the next (asking a loop's questions again), what
going back to an ask forgets, which step asks for a slot, and what the goal still misses."""

from __future__ import annotations

from core.shared.models import Goal
from core.sop.graph import Node, Sop


def move(goal: Goal, sop: Sop, node: Node, target: str | None) -> None:
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


def clear_from(goal: Goal, sop: Sop, ask: Node) -> None:
    """Forget what an ask and every ask after it collected: the flow runs again from that ask."""
    for nid in sop.reachable(ask.id):
        later = sop.nodes[nid]
        for p in later.fills if later.asks else []:
            goal.slots.pop(p.name, None)


def asker_for(sop: Sop, slot: str, before: str | None = None) -> Node | None:
    """The step that asks for a slot; with ``before``, preferably the closest one on a path to that step."""
    askers = [sop.nodes[n] for n in sop.walk()
              if sop.nodes[n].asks and any(p.name == slot for p in sop.nodes[n].fills)]
    if before is not None:
        upstream = [a for a in askers if a.id != before and before in sop.reachable(a.id)]
        askers = upstream[-1:] or askers
    return askers[0] if askers else None


def first_user(sop: Sop, names: set[str]) -> str | None:
    """The first step (in the flow's order) that fills or takes one of these slots."""
    order = sop.walk()
    for nid in order:
        node = sop.nodes[nid]
        if {p.name for p in node.fills + node.params} & names:
            return nid
    return None


def is_behind(sop: Sop, goal: Goal, nid: str) -> bool:
    """Whether a step comes before where the goal stands (or either is off the flow's order)."""
    order = sop.walk()
    cur = goal.pending or goal.step
    if cur not in order or nid not in order:
        return True
    return order.index(nid) < order.index(cur)


def refresh_missing(goal: Goal, sop: Sop) -> None:
    """Missing = required params of the next api_call not yet known, plus the pending ask's slots."""
    missing: list[str] = []
    pending = sop.node(goal.pending)
    if pending is not None:
        missing += [p.name for p in pending.fills if goal.slots.get(p.name) in (None, "")]
    api = next_api(sop, goal.pending or goal.step)
    if api is not None:
        missing += [p.name for p in api.params if not p.optional and goal.slots.get(p.name) in (None, "")
                    and p.name not in missing]
    goal.missing = missing if goal.pending else []
    if not goal.pending:
        goal.next_question = ""


def next_api(sop: Sop, start: str | None) -> Node | None:
    """The first step calling a tool from ``start`` on, through action steps only (None past a decision)."""
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
