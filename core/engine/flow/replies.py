"""What the customer's replies do to the flow: an answer taken (its slots filled, the flow past the ask), a question
they cannot answer passed the SOP's way, a correction rewinding to where the value is first needed, going back to
an earlier ask, and a reply that was no answer noted in the execution memory."""

from __future__ import annotations

from typing import Any

from core.engine.flow.moves import clear_from, first_user, is_behind
from core.engine.offers import forget_offers
from core.shared.models import Goal, GoalStatus, MemoryEntry
from core.sop.expr import parse, paths
from core.sop.graph import Node, Sop
from core.understanding import GENERIC_KINDS, AnswerReading, Brain, Commerce, slot_unknown
from core.workspace.slots import SlotType


def take_answer(types: dict[str, SlotType], goal: Goal, sop: Sop, reading: AnswerReading, turn: int) -> bool:
    """Act on a reply read by :meth:`core.understanding.answers.AnswerReader.read_answer`: the execution memory
    notes it; a complete answer fills its slots (and what it gave ahead) and moves the flow past the ask. True
    when it did."""
    node = sop.nodes[reading.ask]
    if reading.declined:
        forget_offers(goal.slots, [p.name for p in node.fills])
    goal.memory.append(MemoryEntry(action=node.label, observation=reading.heard,
                                   feedback="success" if reading.ok else "fail", turn=turn))
    if not reading.ok and len(node.fills) > 1:  # part of a question asking several values: kept, the rest
        goal.slots.update({k: v for k, v in reading.values.items()  # asked again; free text only when it is
                           if k in types and (types[k].kind not in GENERIC_KINDS  # one account name ("username:
                                              or types[k].handle)})  # tkoval88"), never any words
    if reading.ok:
        goal.slots.update(reading.values)
        goal.slots.update(reading.enriched)
        goal.slots.update({k: v for k, v in reading.ahead.items() if slot_unknown(goal, k)})
        goal.attempts.pop(node.id, None)
        goal.pending = None
        goal.step = node.next
    return reading.ok


def missing_way(types: dict[str, SlotType], sop: Sop, node: Node) -> bool:
    """Whether the SOP says what happens when an ask gets no answer: a decision right after it reads
    its slot (a yes/no question excepted: "couldn't tell you" is no answer there, not a "no")."""
    nxt = sop.node(node.next)
    if not node.asks or not node.fills or nxt is None or nxt.kind != "decision":
        return False
    names = {p.name for p in node.fills}
    if any(types.get(n) is not None and types[n].kind == "boolean" for n in names):
        return False
    return bool(names & {k for b in nxt.branches if b.condition and b.expr for k in paths(parse(b.condition))})


def pass_unanswered(goal: Goal, node: Node, observation: str, turn: int) -> None:
    """Go past an ask the customer cannot answer, its slots empty and noted as unavailable."""
    for p in node.fills:
        goal.slots.pop(p.name, None)
        if p.name not in goal.unavailable:
            goal.unavailable.append(p.name)
    goal.memory.append(MemoryEntry(action=node.label, observation=observation, feedback="fail", turn=turn))
    goal.attempts.pop(node.id, None)
    goal.pending, goal.step = None, node.next
    goal.status = GoalStatus.ACTIVE


def apply_correction(types: dict[str, SlotType], goal: Goal, sop: Sop, changes: dict[str, Any],
                     search: tuple[str, set[str]] = ("", set())) -> list[str]:
    """New values for slots the flow already used: update and rewind to where they are first needed.
    ``search``: a store's item search and the slots it reads besides its params (the shopper's wishes)."""
    changed = [k for k, v in changes.items() if goal.slots.get(k) != v]
    if not changed:
        return []
    goal.slots.update({k: changes[k] for k in changed})
    start = first_user(sop, set(changed))
    if start is None and search[0] and set(changed) & search[1]:
        start = next((nid for nid in sop.walk() if sop.nodes[nid].tool == search[0]), None)
    if start is not None and is_behind(sop, goal, start):
        goal.step = start
        goal.pending = None
        Commerce.forget(goal, types)
    return changed


def rewind(brain: Brain, goal: Goal, sop: Sop, target: Node, turn: int = 0, said: str = "") -> None:
    """Go back to an earlier ask the customer wants to redo (the reader chose it, see
    :func:`core.understanding.go_back.go_back_target`): its slots and those of every ask after it are cleared,
    so the flow runs again from there. ``said``: the customer's words, kept in the execution memory."""
    note_detour(brain, goal, sop, said, turn)
    for nid in sop.reachable(target.id):
        goal.attempts.pop(nid, None)
    clear_from(goal, sop, target)
    goal.step, goal.pending = target.id, None


def note_detour(brain: Brain, goal: Goal, sop: Sop, text: str, turn: int, action: str = "") -> None:
    """Record a reply that was a question or a request rather than an answer (feedback fail),
    and the step taken for it (e.g. seeking external knowledge), in execution memory."""
    node = sop.node(goal.pending)
    if node is not None:
        goal.memory.append(MemoryEntry(action=node.label, observation=brain.correct(text),
                                       feedback="fail", turn=turn))
    if action:
        goal.memory.append(MemoryEntry(action=action, observation="done", feedback="success", turn=turn))
