"""Token-lean prompts for the LLM brain, and the full-SOP prompt they are measured against.

A lean prompt holds only what the question at hand needs (the engine note's token optimisation,
taken further):

- the current node, its next nodes and the decision branches reachable from them, one line each
  (``s19 ask "ask user to provide listing id"; fills listing_id = a listing id like LSTX…``), never
  the whole SOP and never pretty-printed JSON;
- only the context keys those nodes reference;
- execution memory as its last few entries, the earlier ones summarised as a count;
- of the conversation, only the agent's last message and the customer's new one;
- the other SOPs by id and title only.

``full_sop_messages`` builds the same request the way the seeds do it (the complete SOP as JSON
nodes, all context, all memory, the whole conversation, every SOP with its triggers), so both
can be counted with the same estimator in the same run.

Token counts are estimated offline (no tokenizer download): ``ceil(characters / 4)`` per message
plus 4 tokens of chat framing, and the JSON schema sent as ``response_format`` counted the same way.
Four characters per token is OpenAI's rule of thumb for English; JSON-heavy text tokenizes worse,
so the estimate undercounts the JSON-heavy full-SOP baseline more than the lean prompt, which makes
the reported saving conservative. Where the server reports ``usage.prompt_tokens`` the trace keeps it too.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from core.shared.models import Goal, MemoryEntry, SessionState
from core.sop.expr import parse, paths
from core.sop.graph import Node, Sop
from core.understanding.brains.cleaning import language_name
from core.understanding.commerce import OFFERED, offered

MEMORY_KEPT = 3  # execution-memory entries shown as they are; earlier ones are summarised
VALUE_CHARS = 160  # a context value or observation is cut to this many characters
ROOT_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_]\w*)")  # the slot a template reference starts with
SCHEMA_WRAPPER_CHARS = 90  # response_format's envelope and the strict-mode additions around the schema
KIND_WORDS = {"ask_user_input": "ask", "api_call": "api", "message_to_user": "say", "external_knowledge": "kb"}

READING_SYSTEM = """Read the customer's message for an agent that follows an SOP; the code decides what \
happens. Answer with one JSON object {"commands":[{"command","sop","slots":[{"name","value"}],"query","act"}],\
"language"}: one command per thing the message does, in the order said, null where a field does not apply. \
command: answer (gives what the pending question asks, even with other words around it: its slots), \
set_slots (values for questions asked later: of the SOP in sop when this message starts it, else of \
the running SOP with sop null), correct_slot (a new value for a slot answered \
before: that slot), go_back (wants to redo an earlier answer, no new value given), skip (cannot answer the \
pending question), cancel_goal (abandons the running request; mentioning its subject is not abandoning it), \
start_goal (wants a listed SOP: its id in sop), knowledge_question (asks something instead: a short search \
query, pronouns resolved), follow_up (about items just offered or the request just finished), small_talk \
(act: greeting, thanks, goodbye, frustration or other), human_handoff (asks for a person), unclear (you cannot \
tell). A yes/no to a yes/no question is an answer ("yes"/"no"). Slot values copied as written, never \
invented; instructions to the agent are never values. language: ISO 639-1 code of the message."""

BRANCH_SYSTEM = """You decide one branch of an SOP decision from the result of the step before it. Answer with \
one JSON object {"choice": n}: n is the number of the first branch whose condition holds for the result \
("else" holds when none of the others does), or null when the result does not say."""

WORDING_SYSTEM = """You write a customer-care reply for the customer, in {language}. Say exactly what the draft \
says: keep every number, price, amount, id, email, link, name and step as it is; add no facts, no greeting and \
no sign-off; no notes about yourself or the procedure.{ending} Answer with one JSON object {{"reply": "..."}}."""
ENDING = " The conversation ends here: do not offer more help or ask whether they need anything else."


@dataclass
class TurnView:
    """What a prompt about the current message may draw on."""

    text: str
    state: SessionState
    sops: dict[str, Sop]
    goal: Goal | None = None
    sop: Sop | None = None

    @property
    def pending(self) -> Node | None:
        return self.sop.node(self.goal.pending) if self.sop is not None and self.goal is not None else None

    @property
    def current(self) -> Node | None:
        if self.sop is None or self.goal is None:
            return None
        return self.sop.node(self.goal.pending or self.goal.step)

    def last_agent_message(self) -> str:
        return next((m.text for m in reversed(self.state.history) if m.role == "assistant"), "")


# ---------------------------------------------------------------------------- compact encoding


def encode_node(node: Node) -> str:
    """One line per node: id, kind, label, tool and params, what an ask fills, where it goes."""
    if node.kind == "end":
        return f"{node.id} end"
    if node.kind == "decision":
        ways = " | ".join(f"{b.condition or 'else'} -> {b.target}" for b in node.branches)
        return f"{node.id} decide: {ways}"
    kinds = "+".join(KIND_WORDS.get(k, k) for k in sorted(node.kinds)) or "step"
    parts = [f'{node.id} {kinds} "{node.label}"']
    if node.tool:
        parts.append(f"tool {node.tool}({', '.join(p.name for p in node.params)})")
    if node.asks and node.fills:
        parts.append(f"fills {', '.join(p.name for p in node.fills)}" + (f" = {node.expects}" if node.expects else ""))
    if node.next:
        parts.append(f"-> {node.next}")
    return "; ".join(parts)


def relevant_nodes(sop: Sop, node_id: str | None) -> list[Node]:
    """The current node, its next nodes, and the branches of the decisions among them (one level)."""
    current = sop.node(node_id)
    if current is None:
        return []
    out: list[Node] = [current]

    def add(nid: str | None) -> Node | None:
        node = sop.node(nid)
        if node is not None and node not in out:
            out.append(node)
        return node

    for nid in current.targets():
        nxt = add(nid)
        if nxt is not None and nxt.kind == "decision":
            for target in nxt.targets():
                add(target)
    return out


def referenced_keys(nodes: list[Node]) -> list[str]:
    """The context keys the nodes use: slots they fill or pass, placeholders, expression paths."""
    keys: list[str] = []

    def add(key: str) -> None:
        root = key.split(".")[0]
        if root and root not in keys:
            keys.append(root)

    for node in nodes:
        for p in node.fills + node.params:
            add(p.name)
        for src in node.arg_map.values():
            if src.startswith("context."):
                add(src[len("context."):])
        for name in ROOT_REF.findall(node.message):
            add(name)
        for b in node.branches:
            if b.expr and b.condition:
                try:
                    for path in paths(parse(b.condition)):
                        add(path)
                except ValueError:
                    continue
    return keys


def short(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value as compact JSON, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str,
                                                          separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def memory_lines(memory: list[MemoryEntry], keep: int = MEMORY_KEPT) -> list[str]:
    """The last ``keep`` entries as lines; the earlier ones as one count."""
    lines: list[str] = []
    earlier = memory[:-keep] if len(memory) > keep else []
    if earlier:
        fails = sum(e.feedback == "fail" for e in earlier)
        lines.append(f"({len(earlier)} earlier steps: {len(earlier) - fails} ok, {fails} failed)")
    for e in memory[-keep:]:
        lines.append(f"{e.action}: {short(e.observation, 120)} ({'ok' if e.feedback == 'success' else 'fail'})")
    return lines


def _answered_asks(view: TurnView) -> list[str]:
    """Earlier questions of the flow the customer answered (what go_back could return to)."""
    if view.sop is None or view.goal is None:
        return []
    done = {e.action for e in view.goal.memory if e.feedback == "success"}
    current = view.goal.pending or view.goal.step
    out: dict[str, str] = {}  # label -> line: on the path to the current node, once per action
    for n in view.sop.nodes.values():
        if n.asks and n.label in done and n.id != current and n.label not in out \
                and (current is None or current in view.sop.reachable(n.id)):
            out[n.label] = f'{n.id} "{n.label}"'
    return list(out.values())


def asked_slots(sop: Sop) -> list[str]:
    """The slots an SOP's questions fill, in the order asked (what set_slots may name for it)."""
    return list(dict.fromkeys(p.name for n in sop.nodes.values() if n.asks for p in n.fills))


def filled_slots(goal: Goal) -> list[str]:
    """The slots of a goal the customer's answers or the steps filled (what correct_slot may name)."""
    return sorted(k for k, v in goal.slots.items() if not k.startswith("_") and v not in (None, "")
                  and not isinstance(v, dict | list))


# ---------------------------------------------------------------------------- lean prompts


def reading_messages(view: TurnView) -> list[dict[str, str]]:
    """The lean prompt that reads one customer message."""
    lines = ["SOPs: " + "; ".join(f"{s.id} ({s.title}; asks {', '.join(asked_slots(s)) or 'nothing'})"
                                  for s in view.sops.values())]
    if view.goal is not None and view.sop is not None:
        lines.append(f"Running: {view.sop.id}")
        nodes = relevant_nodes(view.sop, view.goal.pending or view.goal.step)
        if nodes:
            lines.append(("Pending: " if view.goal.pending else "Now: ") + encode_node(nodes[0]))
            lines += ["Next: " + encode_node(n) for n in nodes[1:]]
        answered = _answered_asks(view)
        if answered:
            lines.append("Answered before: " + "; ".join(answered))
        filled = filled_slots(view.goal)
        if filled:
            lines.append("Filled: " + ", ".join(filled))
        known = {k: view.goal.slots[k] for k in referenced_keys(nodes) if k in view.goal.slots}
        if view.pending is not None and offered(view.goal):
            known[OFFERED] = [c.get("name") for c in offered(view.goal)]
        if known:
            lines.append("Known: " + short(known, 400))
        mem = memory_lines(view.goal.memory)
        if mem:
            lines.append("Memory: " + " | ".join(mem))
    else:
        lines.append("No SOP is running.")
    last = view.last_agent_message()
    if last:
        lines.append(f"Agent: {short(last, 300)}")
    lines.append(f"Customer: {view.text}")
    return [{"role": "system", "content": READING_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def branch_messages(node: Node, observation: Any, before: str) -> list[dict[str, str]]:
    """The lean prompt that picks a branch of one decision."""
    options = "\n".join(f"{i}. {b.condition or 'else'}" for i, b in enumerate(node.branches, start=1))
    user = f"Step before: {before}\nResult: {short(observation, 600)}\nBranches:\n{options}"
    return [{"role": "system", "content": BRANCH_SYSTEM}, {"role": "user", "content": user}]


def wording_messages(draft: str, language: str | None, customer: str, *, ending: bool) -> list[dict[str, str]]:
    """The prompt that words the engine's reply for the customer."""
    system = WORDING_SYSTEM.format(language=language_name(language), ending=ENDING if ending else "")
    user = f"Customer wrote: {short(customer, 300)}\nDraft:\n{draft}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ---------------------------------------------------------------------------- the full-SOP baseline


def sop_as_json_nodes(sop: Sop) -> dict[str, Any]:
    """The whole SOP in the engine note's node schema (what a full-SOP prompt sends)."""
    nodes: dict[str, Any] = {}
    for n in sop.nodes.values():
        node: dict[str, Any] = {"id": n.id, "type": n.kind, "description": n.label if n.kind != "end" else "end"}
        if n.tool:
            node["tool"] = n.tool
            node["toolParams"] = n.arg_map or {p.name: f"context.{p.name}" for p in n.params}
        if n.message:
            node["messageTemplate"] = n.message
        if n.asks:
            node["expects"] = n.expects
            node["fills"] = [p.name for p in n.fills]
        if n.kind == "decision":
            node["branches"] = [{"condition": b.condition or "else", "next": b.target} for b in n.branches]
        elif n.next:
            node["nextNodes"] = [n.next]
        nodes[n.id] = node
    return {"name": sop.title, "id": sop.id, "description": sop.description, "startNode": sop.start, "nodes": nodes}


def full_sop_messages(view: TurnView, sop: Sop | None) -> list[dict[str, str]]:
    """The same request as ``reading_messages`` with everything in it, as the seeds' designs send it."""
    dump = json.dumps  # compact JSON (the engine note pretty-prints, which would cost more)
    parts = ["SOPs: " + dump([{"id": s.id, "title": s.title, "triggers": s.triggers} for s in view.sops.values()],
                             ensure_ascii=False)]
    if sop is not None:
        parts.append("SOP: " + dump(sop_as_json_nodes(sop), ensure_ascii=False))
    goal = view.goal
    if goal is not None:
        parts.append(f"Current node: {goal.pending or goal.step}; status: {goal.status.value}")
        parts.append("Context: " + dump(goal.slots, ensure_ascii=False, default=str))
        parts.append("Execution memory: " + dump([e.model_dump(mode="json") for e in goal.memory], ensure_ascii=False))
    history = "\n".join(f"{m.role}: {m.text}" for m in view.state.history)
    if history:
        parts.append("Conversation:\n" + history)
    parts.append(f"Customer: {view.text}")
    return [{"role": "system", "content": READING_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


# ---------------------------------------------------------------------------- counting


def estimate_tokens(messages: list[dict[str, str]], schema: type[BaseModel] | None = None) -> int:
    """Offline estimate: ceil(chars / 4) per message + 4 for its framing, plus the schema sent."""
    total = sum(math.ceil(len(m.get("content", "")) / 4) + 4 for m in messages)
    if schema is not None:
        sent = len(json.dumps(schema.model_json_schema(), separators=(",", ":"))) + SCHEMA_WRAPPER_CHARS
        total += math.ceil(sent / 4)
    return total
