"""The failure rules (paper §3): a step runs at most ``MAX_ATTEMPTS`` times without progress; a tool's "invalid
input" goes back to the ask whose answer it names; a denied tool, one not available here (not trusted, its server or
sheet unreachable), or one that changes things and failed after its request may have been sent (a timeout, a server
error, an answer too large, a crash mid-call), ends the goal; any other error retries the step (a change only when
nothing was sent, with the same idempotency key)."""

from __future__ import annotations

import re

from core.engine.flow.contract import AgentRunResponse
from core.engine.flow.messages import end
from core.engine.flow.moves import asker_for, clear_from
from core.language import text as T
from core.language.replies import say
from core.shared.models import Goal, ToolCall
from core.sop.graph import Node, Sop
from core.sop.progress import last_success

MAX_ATTEMPTS = 3


def count_attempt(goal: Goal, node: Node, resp: AgentRunResponse) -> bool:
    """Count a run of a step; the paper's limit: a 4th run without progress ends the goal."""
    n = goal.attempts.get(node.id, 0) + 1
    if n > MAX_ATTEMPTS:
        resp.decisions.append(f"{node.label!r} ran {MAX_ATTEMPTS} times without progress: ending gracefully")
        end(goal, None, resp, "failed", say("graceful_end", resp.language))
        return False
    goal.attempts[node.id] = n
    return True


def on_failure(agent: str, goal: Goal, sop: Sop, node: Node, call: ToolCall, resp: AgentRunResponse) -> None:
    """Paper §3: invalid input -> back to the ask that filled it; other errors -> retry at once."""
    if call.error_kind == "denied":
        resp.decisions.append(f"{call.tool} denied for agent {agent}: ending gracefully")
        end(goal, None, resp, "failed", say("not_allowed_here", resp.language))
        return
    if call.error_kind == "unavailable":  # a tool not run here (not trusted, its server or sheet unreachable)
        resp.decisions.append(f"{call.tool} is not available ({call.error}): ending gracefully, nothing retried")
        end(goal, None, resp, "failed", say("tool_unavailable", resp.language))
        return
    if call.outcome_unknown:  # a change that may have gone through: never sent twice, a person checks it
        resp.decisions.append(f"{call.tool} changes things and failed after it may have been sent "
                              f"({call.error_kind}): not tried again; it may or may not have gone through, "
                              "recorded as unknown for a person to check")
        end(goal, None, resp, "failed", say("side_effect_unsure", resp.language))
        return
    if call.error_kind == "invalid_input":
        asker = asker_for_error(goal, sop, node, call)
        if asker is not None:
            if goal.attempts.get(node.id, 0) >= MAX_ATTEMPTS:
                resp.decisions.append(f"{node.label!r} ran {MAX_ATTEMPTS} times without progress: "
                                      "ending gracefully")
                end(goal, None, resp, "failed", say("graceful_end", resp.language))
                return
            clear_from(goal, sop, asker)
            resp.decisions.append(f"{call.tool} said the input is invalid: back to {asker.label!r}")
            resp.messages.append(say("tool_rejected", resp.language, reason=call.public_error) if call.public_error
                                 else say("tool_rejected_plain", resp.language))
            goal.step = asker.id
            return
    resp.decisions.append(f"{call.tool} failed ({call.error_kind}): retrying {node.label!r}")
    # goal.step stays on the node: the loop runs it again (counted by count_attempt)


def asker_for_error(goal: Goal, sop: Sop, node: Node, call: ToolCall) -> Node | None:
    """The ask to return to after an "invalid input" error: the one whose slot the error names
    (by the slot's name or the API param it was passed as), else the one answered most recently."""
    said = " ".join(T.words(call.error.replace("_", " ")))
    best: tuple[tuple[float, float, int, int], Node] | None = None
    for p in node.params:
        asker = asker_for(sop, p.name, before=node.id)
        if asker is None:
            continue
        names = [p.name] + [k for k, v in call.args.items() if v == goal.slots.get(p.name) and k != p.name]
        key = max((_named_in(name, said) for name in names), default=(0.0, 0.0, 0))
        ranked = (*key, last_success(goal, asker.label))
        if best is None or ranked > best[0]:
            best = (ranked, asker)
    return best[1] if best else None


def _named_in(name: str, text: str) -> tuple[float, float, int]:
    """How plainly a text names a slot or param: (whole name as a phrase, share of its words, words
    matched), so "old email otp" beats "old email" in "the old email otp is invalid"."""
    words = T.words(name.replace("_", " "))
    if not words:
        return 0.0, 0.0, 0
    phrase = float(re.search(rf"\b{re.escape(' '.join(words))}\b", text) is not None)
    hits = sum(w in text.split() for w in words)
    return phrase, hits / len(words), hits
