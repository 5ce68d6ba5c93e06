"""The generator: expected actions follow the SOP, the failure rules and its own labels only."""

from __future__ import annotations

import ast
import random
from collections import Counter
from pathlib import Path

import pytest

from core.engine.build import Workspace
from core.evaluation import conditions as C
from core.evaluation.generator import SessionPlan, generate_sessions
from core.evaluation.input_spec import InputSpec
from core.evaluation.inputs import Phrasebook
from core.evaluation.walk import END_COMPLETED, END_GRACEFUL, EXTERNAL_KNOWLEDGE

EVALUATION = Path(__file__).resolve().parents[2] / "core" / "evaluation"
# the reading, and the engine that acts on it (a loaded Workspace, core.engine.build, is only data here)
BRAIN_MODULES = ("core.understanding", "core.engine.flow", "core.engine.orchestrator", "core.engine.processor",
                 "core.engine.grounding", "core.language.text")


@pytest.mark.parametrize("module", ["generator.py", "walk.py", "branches.py", "sop_context.py", "inputs.py",
                                    "input_spec.py", "conditions.py", "data.py"])
def test_expectations_never_import_the_brains_reading(module: str) -> None:
    tree = ast.parse((EVALUATION / module).read_text(encoding="utf-8"))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith(BRAIN_MODULES)], imported


@pytest.fixture(scope="module")
def plans(seller_ws: Workspace) -> list[SessionPlan]:
    return generate_sessions(seller_ws, 60, seed=11)


def _states(plans: list[SessionPlan]) -> list[tuple[str, str, list[str]]]:
    """(cause, action, the turn's expected actions) for every state."""
    return [(e.cause, e.action, [x.action for x in t.expected]) for p in plans for t in p.turns for e in t.expected]


def test_failure_rules_shape_the_expected_states(plans: list[SessionPlan], seller_ws: Workspace) -> None:
    asks = {n.label for s in seller_ws.sops for n in s.nodes.values() if n.asks}
    calls = {n.label for s in seller_ws.sops for n in s.nodes.values() if "api_call" in n.kinds}
    causes = Counter(cause for cause, _, _ in _states(plans))
    for kind in ("api:failure", "api:timeout", "api:invalid", "doubt", "go_back", "invalid_format", "gibberish",
                 "typo", "limit"):
        assert causes[kind] > 0, f"no {kind} in 60 sessions: {causes}"
    for p in plans:
        for t in p.turns:
            actions = [e.action for e in t.expected]
            for e in t.expected:
                if e.cause in ("api:failure", "api:timeout"):  # the same call again, or the limit
                    assert e.action in calls | {END_GRACEFUL}
                if e.cause == "api:invalid":  # back to a question, or the limit
                    assert e.action in asks | {END_GRACEFUL}
            if t.kind == "doubt":
                assert actions[0] == EXTERNAL_KNOWLEDGE and actions[1] in asks and len(actions) == 2
            if t.kind in ("invalid_format", "gibberish", "chitchat_offtopic", "chitchat_social"):
                assert actions[0] in asks | {END_GRACEFUL}
        assert p.turns[-1].expected[-1].action in (END_COMPLETED, END_GRACEFUL)


def test_a_step_never_runs_a_fourth_time_in_a_turn(plans: list[SessionPlan]) -> None:
    for p in plans:
        for t in p.turns:
            assert max(Counter(e.action for e in t.expected).values()) <= 3


def test_every_branch_of_every_sop_is_reached(seller_ws: Workspace) -> None:
    plans = generate_sessions(seller_ws, 150, seed=2)
    seen = {e.action for p in plans for t in p.turns for e in t.expected}
    messages = {n.label for s in seller_ws.sops for n in s.nodes.values()
                if n.kind == "action" and "message_to_user" in n.kinds}
    assert messages <= seen, messages - seen


def test_conditions_are_read_backwards_from_the_label() -> None:
    c = C.read_condition("its active or on-hold")
    assert (c.kind, c.values) == ("values", ("active", "on-hold"))
    c = C.read_condition("if less than or equal to 72 hrs")
    assert (c.kind, c.op, c.number, c.unit) == ("numeric", "<=", 72.0, "hrs")
    c = C.read_condition("block reason is seller state change")
    assert (c.kind, c.field, c.values) == ("field", "block_reason", ("seller state change",))
    assert C.read_condition("user does not have access").positive is False
    assert C.read_condition("user has access").positive is True
    assert (C.read_condition("no").kind, C.read_condition("no").positive) == ("polar", False)
    guess = C.FieldGuess(["hours_since_request"], [], {"status": ["approved", "in-progress", "disapproved"]}, False)
    over = C.merge([C.constrain(C.read_condition("approved"), False, guess),
                    C.constrain(C.read_condition("in-progress or disapproved"), True, guess),
                    C.constrain(C.read_condition("less than or equal to 72 hrs"), False, guess)])
    assert over["status"].allowed == {"in progress", "disapproved"} and over["status"].banned == {"approved"}
    assert over["hours_since_request"].low == 73
    assert C.candidates(over["status"], ["approved", "in-progress", "disapproved"]) == ["disapproved", "in-progress"]
    yes_and_no = C.merge([C.constrain(C.read_condition("yes"), True, guess),
                          C.constrain(C.read_condition("no"), True, guess)])
    assert not C.feasible(yes_and_no["result"], [])


def test_json_conditions_are_solved_from_their_syntax() -> None:
    rng = random.Random(0)
    shipped = C.expression_constraints("context.order.status === 'shipped'", True, rng)
    assert [(c.field, c.allowed) for c in shipped] == [("order.status", {"shipped"})]
    other = C.expression_constraints("context.order.status === 'shipped' && context.order.total > 100", False, rng)
    assert len(other) == 1 and (other[0].banned == {"shipped"} or other[0].high == 100)


def test_inputs_are_varied_and_keep_their_label() -> None:
    book = Phrasebook(random.Random(4))
    spec = InputSpec("id", "listing id", prefix="LST", body="XXXXXXXXX")
    valid = [book.valid(spec, {})[0] for _ in range(300)]
    assert len({v.replace(v.split()[-1], "") for v in valid}) >= 15  # many frames, not one template
    for text, value in (book.valid(spec, {}, typos=True) for _ in range(100)):
        assert value.upper() in text.upper() and value.startswith("LST")  # typos never touch the value
    otp = InputSpec("otp", "otp", digits=6)
    assert all(len(book.valid(otp, {})[1]) == 6 for _ in range(50))
    wrong = [book.invalid(otp) for _ in range(50)]
    assert not [w for w in wrong if any(tok.isdigit() and len(tok) == 6 for tok in w.split())]
    email = InputSpec("email", "old email")
    assert all("@" not in w or not w.split("@")[1].count(".") for w in (book.invalid(email) for _ in range(50)))
    assert {book.valid(InputSpec("yesno", "access"), {}, polarity=False)[1] for _ in range(20)} == {False}


LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "library_desk"


@pytest.fixture(scope="module")
def library_ws(embedder) -> Workspace:  # type: ignore[no-untyped-def]
    from core.engine.build import load_workspace

    return load_workspace(LIBRARY, embedder)


def _after(plan: SessionPlan, action: str) -> list[tuple[str, dict, list[str]]]:
    """(the turn's text, its scripted tool outcomes, its expected actions) for turns expecting ``action``."""
    return [(t.user, t.tools, [e.action for e in t.expected]) for t in plan.turns
            if action in [e.action for e in t.expected]]


def test_written_conditions_over_a_named_result_decide_the_expected_branch(library_ws: Workspace) -> None:
    """``if loan.holds > 0`` / ``if loan.renewals >= 3`` after "look up the loan": the scripted result
    and the expected branch agree, and every branch is reached."""
    plans = [p for p in generate_sessions(library_ws, 80, seed=4) if p.sop == "library.renew"]
    seen = set()
    for plan in plans:
        for _, tools, expected in _after(plan, "look up the loan"):
            results = [o["result"] for o in tools.get("loans.lookup", []) if "result" in o]
            last = len(expected) - 1 - expected[::-1].index("look up the loan")  # after any retries
            if not results or last + 1 >= len(expected):
                continue
            loan, nxt = results[-1], expected[last + 1]
            if loan["holds"] > 0:
                assert nxt == "tell patron another reader is waiting for it", (loan, expected)
            elif loan.get("renewals", 0) >= 3:
                assert nxt == "tell patron the renewal limit is reached", (loan, expected)
            else:
                assert nxt == "renew the loan", (loan, expected)
            seen.add(nxt)
    assert len(seen) == 3, seen


def test_a_confirmation_the_branch_reads_is_answered_with_the_planned_polarity(library_ws: Workspace) -> None:
    """"if the patron says yes:" after a yes/no question: a yes leads to blocking, a no to the card staying."""
    from core.evaluation.inputs import YES

    plans = [p for p in generate_sessions(library_ws, 80, seed=4) if p.sop == "library.lost_card"]
    outcomes = set()
    for plan in plans:
        for turn in plan.turns:
            actions = [e.action for e in turn.expected]
            for step in ("block the card", "tell patron the card stays active"):
                if actions[:1] == [step] and turn.kind == "valid":
                    assert (turn.user in YES) == (step == "block the card"), (turn.user, actions)
                    outcomes.add(step)
    assert outcomes == {"block the card", "tell patron the card stays active"}


def test_a_listed_answer_leads_down_the_branch_that_names_it(embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A question with listed answers ("one of: lost or stolen, damaged") and a branch on them: the
    generated answer names a value of the chosen branch; one said in the opening decides it unasked."""
    import shutil

    from core.engine.build import load_workspace

    ws_dir = tmp_path / "ws"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "telecom_care", ws_dir)
    ws = load_workspace(ws_dir, embedder)
    plans = [p for p in generate_sessions(ws, 90, seed=1) if p.sop == "care.sim_replace"]
    notes = {n for p in plans for n in p.notes}
    assert not [n for n in notes if "reads no observation" in n], notes
    branches = set()
    for plan in plans:
        for turn in plan.turns:
            actions = [e.action for e in turn.expected]
            if turn.kind == "valid" and actions and actions[0] in ("block the sim",
                                                                   "ask customer where to send the new sim"):
                if "ask customer whether the sim was lost or damaged" in [
                        e.action for t in plan.turns[:plan.turns.index(turn)] for e in t.expected]:
                    blocked = actions[0] == "block the sim"
                    assert ("damaged" in turn.user.lower()) != blocked, (turn.user, actions)
                    branches.add(blocked)
    assert branches == {True, False}


def test_steps_no_session_reaches_are_reported(embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A step behind a condition no result can meet is named, not silently left out of the score."""
    import shutil

    from core.engine.build import load_workspace
    from core.evaluation.generator import unexercised

    ws_dir = tmp_path / "ws"
    shutil.copytree(LIBRARY, ws_dir)
    sop = ws_dir / "sops" / "renew_loan.sop"
    text = sop.read_text(encoding="utf-8")
    sop.write_text(text.replace("    if loan.renewals >= 3:", "    if loan.holds > 5:"), encoding="utf-8")
    ws = load_workspace(ws_dir, embedder)
    plans = generate_sessions(ws, 40, seed=3)
    missing = unexercised({s.id: s for s in ws.sops}, plans)
    assert missing == {"library.renew": ["tell patron the renewal limit is reached"]}
    assert unexercised({s.id: s for s in load_workspace(LIBRARY, embedder).sops},
                       generate_sessions(load_workspace(LIBRARY, embedder), 40, seed=3)) == {}
