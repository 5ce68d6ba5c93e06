"""Going back: which earlier question a customer wants to answer again ("wait, the date I gave was wrong")."""

from __future__ import annotations

from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.sop.progress import held, last_success

GO_BACK_WORDS = frozenset(T.words("go back change changed wrong previous last question answer step redo re-do enter "
                                   "re-enter reenter retype re-type correct fix edit mistake made gave give given "
                                   "entered typed start over beginning wait sorry oops actually ask user provide "
                                   "send said part earlier before"))


def go_back_target(goal: Goal, sop: Sop, text: str) -> Node | None:
    """The earlier ask a customer wants to redo (paper A.1: search the execution memory): the one whose
    words the message shares most, else the latest answered one. An ask skipped because the customer gave
    its value up front counts as answered. None when no earlier ask was answered."""
    current = goal.pending or goal.step
    answered = [sop.nodes[n] for n in sop.walk() if sop.nodes[n].asks and n != current
                and (last_success(goal, sop.nodes[n].label) >= 0 or held(goal, sop.nodes[n]))
                and (current is None or current in sop.reachable(n))]
    if not answered:
        return None
    said = set(T.tokens(text)) - GO_BACK_WORDS

    def score(node: Node) -> tuple[int, float, int]:
        words = set(T.tokens(" ".join([node.label, *(p.name.replace("_", " ") for p in node.fills)])))
        hit = len(words & said)
        return hit, hit / max(1, len(words)), last_success(goal, node.label)

    target = max(answered, key=score)
    return target if score(target)[0] else max(answered, key=lambda n: last_success(goal, n.label))
