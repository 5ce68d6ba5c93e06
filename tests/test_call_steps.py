"""A step that runs another SOP and comes back: `call <SOP id or title>` in a text SOP, `"call": "<id>"` in a
JSON node. Written on a small key-cutting shop of our own."""

from __future__ import annotations

import json
from pathlib import Path

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder
from tests.conftest import trusted

STORE = """name: Keys & Co
currency: EUR
region: NL
agents:
  desk: {goals: "keys.*", tools: [accounts.check, keys.order, keys.block]}
tools:
  accounts.check: {params: [account_no, postcode], python: tools.py:check, side_effects: false}
  keys.order: {params: [account_no, copies], python: tools.py:order}
  keys.block: {params: [account_no], python: tools.py:block}
"""
TOOLS = """from core.shared.errors import ToolError


def check(account_no, postcode):
    if str(account_no) != "55120934" or str(postcode).replace(" ", "").upper() != "1011AB":
        raise ToolError("those details don't match an account", "invalid_input", public=True)
    return {"holder": "Ines Bakker", "tier": "gold"}


def order(account_no, copies):
    return {"order_no": f"K-{account_no}-{copies}"}


def block(account_no):
    return {"blocked": True}
"""
GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the account number and postcode,ask_user_input,"the account number and the postcode, \
e.g. 55120934, 1011 AB",,account_no:code(8)|postcode:text
check the account,api_call,,accounts.check,account_no|postcode
ask customer how many copies,ask_user_input,how many copies of the key,,copies:number
order the copies,api_call,,keys.order,account_no|copies
tell customer the order,message_to_user,"Thanks {holder}: order {order_no} for {copies} copies is placed.",,
"""
VERIFY = """---
id: keys.verify
title: Check the account
---
ask customer for the account number and postcode
check the account
"""
COPIES = """---
id: keys.copies
title: Order key copies
triggers:
  - I need copies of my key
  - can you cut two spare keys
---
call check the account
ask customer how many copies
order the copies
tell customer the order
"""
BLOCK = {
    "id": "keys.block", "name": "Block a lost key", "triggers": ["I lost my key", "block my lost key"],
    "startNode": "verify",
    "nodes": {
        "verify": {"type": "action", "description": "Check the account first", "call": "keys.verify",
                   "nextNodes": ["block"]},
        "block": {"type": "action", "description": "Block the key", "tool": "keys.block",
                  "toolParams": {"account_no": "context.account_no"}, "nextNodes": ["tell"]},
        "tell": {"type": "action", "description": "Tell the customer",
                 "messageTemplate": "Done: the lost key of account {account_no} is blocked.",
                 "nextNodes": ["end"]},
        "end": {"type": "end"},
    },
}


def shop(root: Path, copies: str = COPIES, verify: str = VERIFY) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "tools.py").write_text(TOOLS, encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "sops" / "verify.sop").write_text(verify, encoding="utf-8")
    (root / "sops" / "copies.sop").write_text(copies, encoding="utf-8")
    (root / "sops" / "block.json").write_text(json.dumps(BLOCK, indent=1), encoding="utf-8")
    return trusted(root)


def test_a_called_sop_runs_and_its_caller_goes_on_with_what_it_learned(tmp_path: Path,
                                                                       embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws")
    loaded = load_workspace(root, embedder)
    assert not [str(p) for p in loaded.problems if p.severity in ("error", "warning")]
    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    orch.handle_message("c1", "I need copies of my key")
    state = orch.load_state("c1")
    assert state.active_goal.type == "keys.verify"
    assert [state.goals[g].type for g in state.goal_stack] == ["keys.copies"]
    reply = orch.handle_message("c1", "55120934, 1011 AB")
    state = orch.load_state("c1")
    assert state.active_goal.type == "keys.copies" and not state.goal_stack
    assert state.active_goal.slots["account_no"] == "55120934"  # the called SOP's values come back
    assert "back to where we were" not in reply.lower() and "how many copies" in reply.lower()
    reply = orch.handle_message("c1", "two")
    assert "Thanks Ines Bakker: order K-55120934-2" in reply  # a field of the called SOP's tool result


def test_values_given_up_front_reach_the_called_sop_and_a_json_node_can_call(tmp_path: Path,
                                                                            embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws")
    orch = build_orchestrator(root, loaded=load_workspace(root, embedder), state_url="sqlite:///:memory:")
    reply = orch.handle_message("c2", "I lost my key! account number 55120934, postcode 1011 AB")
    assert "the lost key of account 55120934 is blocked" in reply
    trace = orch.last_trace("c2")
    assert [c["tool"] for c in trace["tool_calls"]] == ["accounts.check", "keys.block"]
    assert orch.load_state("c2").latest_goal("keys.block").status.value == "done"


def test_a_call_that_names_no_sop_or_calls_itself_is_an_error_on_its_line(tmp_path: Path,
                                                                          embedder: CachedEmbedder) -> None:
    root = shop(tmp_path / "ws", copies=COPIES.replace("call check the account", "call check the acount"))
    problems = [p for p in load_workspace(root, embedder).problems if p.severity == "error"]
    assert [(p.file, p.line) for p in problems] == [("sops/copies.sop", 8)]
    assert "calls 'check the acount', which is no SOP here" in problems[0].message
    ring = VERIFY + "call order key copies\n"
    root = shop(tmp_path / "ring", verify=ring)
    problems = [p for p in load_workspace(root, embedder).problems if p.severity == "error"]
    ring_files = {p.file for p in problems if "calls itself through its call steps" in p.message}
    assert ring_files == {"sops/verify.sop", "sops/copies.sop"}
