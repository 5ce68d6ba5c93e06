"""From chat to test: a chat saved as a conversation test, saves checked against the tests, new replies accepted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from core.playground import Playground
from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from tests.playground.conftest import snapshot

ROOT = Path(__file__).resolve().parents[2]


def _mouse_chat(pg: Playground, sid: str = "buy") -> None:
    for message in ("Recommend a gaming mouse", "1500", "the first one"):
        pg.chat.send(sid, message)


def test_a_chat_saved_as_a_test_is_a_green_test_of_the_workspace(pg: Playground) -> None:
    _mouse_chat(pg)
    rel, result, run = pg.runs.save_chat_as_test("buy", "Mouse purchase")
    assert rel == "conversations/mouse_purchase.yaml" and result.saved and run.passed
    spec = yaml.safe_load((pg.root / rel).read_text(encoding="utf-8"))
    assert spec["workspace"] == ".." and [t["user"] for t in spec["turns"]] == [
        "Recommend a gaming mouse", "1500", "the first one"]
    first = spec["turns"][0]["expect"]
    assert first["active_goal"] == "sales.recommend_item" and first["missing"] == ["budget"]
    assert spec["turns"][-1]["expect"]["ended"] is True
    assert pg.runs.conversation_files() == [pg.root / rel]
    assert [r.passed for r in pg.runs.run_tests(pg.runs.conversation_files())] == [True]
    assert any(b.label == f"save chat as {rel}" for b in pg.history.backups())  # undoable like every save


def test_tools_outside_the_workspace_are_recorded_and_local_ones_run_for_real(tmp_path: Path,
                                                                              embedder: CachedEmbedder) -> None:
    ws = tmp_path / "seller"
    shutil.copytree(ROOT / "examples" / "seller_support", ws)
    shutil.rmtree(ws / "conversations")
    pg = Playground(ws, embedder=embedder)
    try:
        pg.chat.send("s", "my product listing is not live anymore", customer_id="S1003")
        rel, result, run = pg.runs.save_chat_as_test("s", "onboarding seller")
        assert result.saved and run.passed
        spec = yaml.safe_load((ws / rel).read_text(encoding="utf-8"))
        assert spec["customer_id"] == "S1003"
        assert spec["turns"][0]["tools"] == {"seller.user_status": {"result": {"status": "onboarding"}}}
        (ws / "tools.py").write_text("raise RuntimeError('the python tools are not used by the test')\n")
        assert run.turns[0].trace["tool_calls"][0]["scripted"] is True
    finally:
        pg.close()


def test_a_save_that_breaks_a_passing_test_is_held_with_what_breaks(pg: Playground) -> None:
    _mouse_chat(pg)
    rel, _, _ = pg.runs.save_chat_as_test("buy", "Mouse purchase")
    before = snapshot(pg.root)
    source = pg.studio.read_sop("recommend_item.sop")
    edited = source.replace("ask user for budget\n", "ask user for product category\n", 1)
    held = pg.studio.save_sop("recommend_item.sop", edited)
    assert not held.saved and not held.blocking and snapshot(pg.root) == before
    assert [Path(b.file).name for b in held.broken] == ["mouse_purchase.yaml"]
    assert any("budget" in f for t in held.broken[0].turns for f in t.failures)
    anyway = pg.studio.save_sop("recommend_item.sop", edited, tests="skip")
    assert anyway.saved and pg.studio.read_sop("recommend_item.sop") == edited
    assert [r.passed for r in pg.runs.run_tests(pg.runs.conversation_files())] == [False]


def test_accepting_the_new_replies_updates_the_test_keeping_its_keys_and_comments(pg: Playground) -> None:
    (pg.root / "conversations").mkdir()
    test = pg.root / "conversations" / "mouse.yaml"
    test.write_text("""name: Mouse, hand-written
workspace: ..
turns:
  - user: Recommend a gaming mouse
    expect:
      missing: [budget]   # the budget comes next
      reply_contains: [budget, please]
  - user: "1500"
    expect:
      actions: [search inventory for matching items, recommend items to user,
                ask user to choose one of the recommended items]
      reply_contains: [choose one]
""", encoding="utf-8")
    assert [r.passed for r in pg.runs.run_tests([test])] == [True]
    source = pg.studio.read_sop("recommend_item.sop")
    edited = source.replace("    recommend items to user\n", "", 1)
    assert not pg.studio.save_sop("recommend_item.sop", edited).saved
    result = pg.studio.save_sop("recommend_item.sop", edited, tests="accept")
    assert result.saved and pg.studio.read_sop("recommend_item.sop") == edited
    text = test.read_text(encoding="utf-8")
    assert "# the budget comes next" in text and "name: Mouse, hand-written" in text
    spec = yaml.safe_load(text)
    assert spec["turns"][0]["expect"] == {"missing": ["budget"], "reply_contains": ["budget", "please"]}
    assert spec["turns"][1]["expect"]["actions"] == ["search inventory for matching items",
                                                     "ask user to choose one of the recommended items"]
    assert set(spec["turns"][1]["expect"]) == {"actions", "reply_contains"}
    assert [r.passed for r in pg.runs.run_tests([test])] == [True]
    pg.history.undo()  # one undo takes back the SOP and the test together
    assert pg.studio.read_sop("recommend_item.sop") == source and "recommend items to user" in test.read_text()


def test_an_unsaved_edit_is_kept_as_a_draft_until_saved_or_discarded(pg: Playground, tmp_path: Path) -> None:
    source = pg.studio.read_sop("recommend_item.sop")
    edited = source.replace("    tell user nothing matched\n", "    say goodbye politely\n")
    pg.studio.keep_draft("sops/recommend_item.sop", edited)
    again = Playground(pg.root, embedder=pg.embedder)  # a reload or another page: the draft is still there
    try:
        assert again.studio.draft("sops/recommend_item.sop") == edited \
            and again.drafts.names() == ["sops/recommend_item.sop"]
    finally:
        again.close()
    pg.studio.keep_draft("sops/recommend_item.sop", source)  # typed back to what is saved: no draft
    assert pg.studio.draft("sops/recommend_item.sop") is None
    pg.studio.keep_draft("sops/recommend_item.sop", "not an SOP step")
    assert not pg.studio.save_sop("recommend_item.sop", "not an SOP step").saved  # refused: the draft stays
    assert pg.studio.draft("sops/recommend_item.sop") == "not an SOP step"
    pg.studio.keep_draft("sops/recommend_item.sop", edited)
    assert pg.studio.save_sop("recommend_item.sop", edited).saved and pg.drafts.names() == []
    rows = pg.studio.gar_rows()
    pg.studio.keep_gar_draft(rows)
    assert pg.studio.draft("gar.csv") is None  # the saved table, written out again, is no edit
    pg.studio.keep_gar_draft(rows[:-1])
    assert pg.studio.gar_rows(draft=True) == rows[:-1] and pg.studio.gar_rows() == rows
    pg.studio.discard_draft("gar.csv")
    assert pg.studio.gar_rows(draft=True) == rows
    copy = tmp_path / "copy"
    copy.mkdir()
    copy_workspace(pg.root, copy)
    assert not (copy / ".state").exists()  # drafts stay with the workspace they were typed in


def test_a_step_missing_from_the_gar_gets_a_row_guessed_from_the_workspace_own_rows(pg: Playground) -> None:
    ask = pg.studio.suggest_gar_row("ask user for order number")  # worded like "ask user for budget"
    assert ask["action_type"] == "ask_user_input" and ask["params"] == "order_number"
    # no such verb yet
    assert pg.studio.suggest_gar_row("thank the customer warmly")["action_type"] == "message_to_user"
    source = pg.studio.read_sop("recommend_item.sop")
    edited = source.replace("ask user for budget\n", "ask user for budget\nask user for delivery city\n", 1)
    problem = next(p for p in pg.studio.check_sop("recommend_item.sop", edited).problems if p.unknown_action)
    assert problem.unknown_action == "ask user for delivery city" and problem.line > 0
    pg.studio.keep_gar_draft([*pg.studio.gar_rows(), {"action": "say thanks", "action_type": "message_to_user"}])
    result = pg.studio.add_gar_row(pg.studio.suggest_gar_row(problem.unknown_action))
    assert result.saved and pg.studio.check_sop("recommend_item.sop", edited).ok
    assert pg.studio.gar_rows()[-1]["params"] == "delivery_city"
    assert [r["action"] for r in pg.studio.gar_rows(draft=True)[-2:]] == ["say thanks", "ask user for delivery city"]
    with pytest.raises(UserInputError, match="already has"):
        pg.studio.add_gar_row({"action": "Ask user for delivery city"})


def test_each_saved_change_shows_what_it_changed(pg: Playground) -> None:
    source = pg.studio.read_sop("recommend_item.sop")
    first = source.replace("    tell user nothing matched\n", "    say goodbye politely\n")
    assert pg.studio.save_sop("recommend_item.sop", first).saved
    second = first.replace("title: Find a product\n", "title: Find a product for you\n")
    assert pg.studio.save_sop("recommend_item.sop", second).saved
    newest, older = pg.history.backups()[:2]
    diff = pg.history.change_diff(newest)["sops/recommend_item.sop"]
    assert "-title: Find a product\n+title: Find a product for you\n" in diff
    diff = pg.history.change_diff(older)["sops/recommend_item.sop"]  # up to the next save, not to what is on disk now
    assert "-    tell user nothing matched\n+    say goodbye politely\n" in diff and "for you" not in diff


def test_a_chat_with_brackets_colons_quotes_and_question_marks_is_saved_as_a_readable_green_test(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = tmp_path / "telecom"
    shutil.copytree(ROOT / "examples" / "telecom_care", ws)
    shutil.rmtree(ws / "conversations")
    (ws / "tests" / "conversations").mkdir(parents=True)  # a project's own test suite beside the workspace
    pg = Playground(ws, embedder=embedder)
    try:
        pg.chat.send("c", 'Can I switch to the "Unlimited" plan? My number: 086 111 2233 [mobile]')
        rel, result, run = pg.runs.save_chat_as_test("c", 'Plan change: "quoted" [brackets]?')
        assert rel.startswith("conversations/") and result.saved
        assert not list((ws / "tests" / "conversations").iterdir())  # never into the project's tests
        text = (ws / rel).read_text(encoding="utf-8")
        spec = yaml.safe_load(text)  # the runner's own loader reads what was written
        assert spec["name"] == 'Plan change: "quoted" [brackets]?'
        assert spec["turns"][0]["user"] == 'Can I switch to the "Unlimited" plan? My number: 086 111 2233 [mobile]'
        assert any("?" in p and "(" in p for t in spec["turns"] for p in t["expect"].get("reply_contains", []))
        assert run.passed and not run.error  # the run is of the file as written
        assert [r.passed for r in pg.runs.run_tests(pg.runs.conversation_files())] == [True]
    finally:
        pg.close()


def test_an_unreadable_test_holds_a_save_like_a_failing_one(pg: Playground) -> None:
    (pg.root / "conversations").mkdir()
    (pg.root / "conversations" / "broken.yaml").write_text(
        "name: broken\nturns:\n  - user: hi\n    expect: {reply_contains: [Confirm? (yes or no)]}\n", encoding="utf-8")
    before = snapshot(pg.root)
    source = pg.studio.read_sop("recommend_item.sop")
    held = pg.studio.save_sop("recommend_item.sop",
                              source.replace("ask user for budget\n", "ask user for the budget\n", 1))
    assert not held.saved and snapshot(pg.root) == before
    assert [Path(b.file).name for b in held.broken] == ["broken.yaml"]
    assert held.broken[0].error and not held.broken[0].turns  # why it cannot be read, not a run
    assert pg.studio.save_sop("recommend_item.sop", source, tests="skip").saved  # "save anyway" still goes through
