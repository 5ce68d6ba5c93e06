"""The mistakes SOP authors made when turning real procedures into workspaces: each one is a lint message
naming the file, the line and the fix, or now simply works (tested on examples/library_desk, a workspace
written from docs/authoring.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.understanding.brains.questions import question_from_action

LIBRARY = Path(__file__).resolve().parent.parent / "examples" / "library_desk"


@pytest.fixture()
def lib(tmp_path: Path) -> Path:
    ws = tmp_path / "library"
    shutil.copytree(LIBRARY, ws, ignore=shutil.ignore_patterns(".state", "__pycache__"))
    return ws


def _lint(ws: Path, embedder: CachedEmbedder) -> list[str]:
    return [str(p) for p in load_workspace(ws, embedder).problems]


def test_the_example_lints_clean(embedder: CachedEmbedder) -> None:
    assert _lint(LIBRARY, embedder) == []


def test_a_guessed_slot_type_is_an_info_line_with_the_fix(lib: Path, embedder: CachedEmbedder) -> None:
    gar = lib / "gar.csv"
    gar.write_text(gar.read_text().replace(",card_number:code(14)\n", ",card_number\n").replace(
        "the 14-digit number on the back of your library card", "your full name or library card ID"))
    msgs = _lint(lib, embedder)
    assert any(m.startswith("sops/renew_loan.sop:") and ": info: slot 'card_number' is read as" in m
               and "inferred from" in m and "declare it to change that: card_number:<type> in gar.csv params" in m
               for m in msgs), msgs


def test_a_wrong_slot_type_is_an_error_on_its_gar_line(lib: Path, embedder: CachedEmbedder) -> None:
    gar = lib / "gar.csv"
    gar.write_text(gar.read_text().replace("card_number:code(14)", "card_number:cardnumber"))
    msgs = _lint(lib, embedder)
    assert any(m.startswith("gar.csv:2") and "error" in m and "cardnumber" in m for m in msgs), msgs


def test_a_broken_written_condition_names_its_line_and_column(lib: Path, embedder: CachedEmbedder) -> None:
    sop = lib / "sops" / "renew_loan.sop"
    sop.write_text(sop.read_text().replace("if loan.holds > 0:", "if loan.holds > :"))
    msgs = _lint(lib, embedder)
    assert any(m.startswith("sops/renew_loan.sop:14:") and "error: condition 'loan.holds >': unexpected end" in m
               for m in msgs), msgs


def test_a_kb_search_with_an_empty_kb_is_a_warning_not_an_unknown_tool(lib: Path, embedder: CachedEmbedder) -> None:
    shutil.rmtree(lib / "kb")
    gar = lib / "gar.csv"
    gar.write_text(gar.read_text() + "answer from the help articles,api_call,,knowledge_base.search,query\n")
    msgs = _lint(lib, embedder)
    assert not any("unknown tool" in m for m in msgs), msgs
    assert any(m.startswith("gar.csv:13: warning: action 'answer from the help articles' searches the knowledge "
                            "base, but kb/ has no documents yet") for m in msgs), msgs


def test_a_step_worded_unlike_its_gar_row_says_which_row_and_how_sure(lib: Path, embedder: CachedEmbedder) -> None:
    sop = lib / "sops" / "renew_loan.sop"
    sop.write_text(sop.read_text().replace("\nlook up the loan\n", "\nlook the loan up\n"))
    msgs = _lint(lib, embedder)
    assert any(m.startswith("sops/renew_loan.sop:13: warning: step 'look the loan up' matched GAR action "
                            "'look up the loan' by similarity") for m in msgs), msgs


def test_an_unknown_step_is_an_error_with_the_closest_row(lib: Path, embedder: CachedEmbedder) -> None:
    sop = lib / "sops" / "lost_card.sop"
    sop.write_text(sop.read_text().replace("block the card\n", "deactivate everything on the account\n"))
    msgs = _lint(lib, embedder)
    assert any(m.startswith("sops/lost_card.sop:") and "error: unknown action 'deactivate everything on the "
                                                      "account'" in m for m in msgs), msgs


@pytest.mark.parametrize("action,question", [
    ("ask patron for their library card number", "Could you please tell me your library card number?"),
    ("ask the caller which item to renew", "Could you please tell me which item to renew?"),
    ("ask guest whether they have a reservation", "Could you tell me whether you have a reservation?"),
    ("ask customer for the order number", "Could you please tell me your order number?"),
])
def test_an_ask_is_put_to_you_whatever_the_role_is_called(action: str, question: str) -> None:
    assert question_from_action(action, "") == question


def test_written_and_worded_conditions_read_tool_results_in_a_text_sop(lib: Path, embedder: CachedEmbedder,
                                                                     tmp_path: Path) -> None:
    # the same branch in words ("if the loan has holds") and as an expression over the result by name
    sop = lib / "sops" / "renew_loan.sop"
    sop.write_text(sop.read_text().replace("if loan.holds > 0:", "if the loan has holds:"))
    orch = build_orchestrator(lib, state_url=f"sqlite:///{tmp_path}/s.db", loaded=load_workspace(lib, embedder))
    for text in ("I want to renew a book", "21234000012345", "Educated"):
        reply = orch.handle_message("s", text)
    assert "another reader has placed a hold" in reply
    for text in ("I want to renew a book", "21234000012345", "Dune"):
        reply = orch.handle_message("t", text)
    trace = orch.last_trace("t") or {}
    assert "has been renewed 3 times already" in reply
    assert any("(saw loan.renewals = 3)" in d for d in trace["decisions"]), trace["decisions"]
    # the figures came from the lookup's result: the grounding check keeps the reply as written
    assert trace["grounding"]["checked"] and not trace["grounding"].get("replaced"), trace["grounding"]


def test_a_question_asking_several_values_fills_each_from_its_own_words(tmp_path: Path,
                                                                        embedder: CachedEmbedder) -> None:
    ws = tmp_path / "bikes"
    shutil.copytree(LIBRARY.parent / "bike_repairs", ws, ignore=shutil.ignore_patterns(".state", "__pycache__"))
    gar = ws / "gar.csv"
    gar.write_text(gar.read_text().replace(
        "ask customer for their name,ask_user_input,your full name,,customer_name:name",
        "ask customer for their name and email,ask_user_input,your full name and email address,,"
        "customer_name:name|email:email"))
    sop = ws / "sops" / "book_repair.sop"
    sop.write_text(sop.read_text().replace("ask customer for their name\n", "ask customer for their name and email\n"))
    orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.db", loaded=load_workspace(ws, embedder))
    orch.handle_message("a", "I want to book a repair")
    reply = orch.handle_message("a", "ann.lee@example.com")  # one of the two: kept, not copied into the name
    assert reply.endswith("your name?") and "email" not in reply and "didn't catch" not in reply, reply
    state = orch.load_state("a")
    assert state is not None and state.active_goal is not None
    assert state.active_goal.slots.get("email") == "ann.lee@example.com"
    assert "customer_name" not in state.active_goal.slots
    assert "wrong with the bike" in orch.handle_message("a", "Ann Lee")
    state = orch.load_state("a")
    assert state is not None and state.active_goal is not None
    assert (state.active_goal.slots["customer_name"], state.active_goal.slots["email"]) == \
        ("Ann Lee", "ann.lee@example.com")
    orch.handle_message("b", "I want to book a repair")
    assert "wrong with the bike" in orch.handle_message("b", "Ann Lee, ann.lee@example.com")


def test_a_partial_answer_is_thanked_and_only_the_rest_asked_for() -> None:
    """The question for what is still missing names those values only, in the author's own words and
    hints; when the action does not list its values one by one, the whole question stays."""
    from core.understanding.brains.questions import question_from_action

    action, hint = "ask customer for their name, email and phone", "your full name, email address and phone number"
    assert question_from_action(action, hint) == "Could you please tell me your name, email and phone?"
    assert question_from_action(action, hint, keep=[0, 2], of=3) == "Could you please tell me your name and phone?"
    assert question_from_action(action, hint, keep=[1], of=3) == "Could you please tell me your email?"
    assert question_from_action("ask customer for their contact details", "", keep=[1], of=2) == \
        "Could you please tell me your contact details?"
