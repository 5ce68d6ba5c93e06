"""The playground's services on a copy of the demo workspace: what each page does, without a browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine.build import load_workspace
from core.playground import Playground, create_workspace, suggest_mapping
from core.playground.uploads import UploadError, read_inventory
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from core.shared.problems import errors
from tests.playground.conftest import snapshot
from tests.playground.pdf import text_pdf

ROOT = Path(__file__).resolve().parents[2]


def test_a_saved_sop_is_used_by_the_very_next_turn(pg: Playground) -> None:
    assert "budget" in pg.chat.send("s1", "Recommend a gaming mouse").reply.lower()
    source = pg.studio.read_sop("recommend_item.sop")
    result = pg.studio.save_sop("recommend_item.sop", source.replace("    tell user nothing matched\n",
                                                              "    say goodbye politely\n"))
    assert result.saved, result.blocking
    ongoing = pg.chat.send("s1", "100")
    assert any("its SOP changed" in d for d in ongoing.trace["decisions"])
    assert ongoing.trace["actions"] == ["search inventory for matching items", "say goodbye politely"]
    pg.chat.send("s2", "Recommend a gaming mouse")
    assert "other options" in pg.chat.send("s2", "100").reply


def test_a_goal_whose_question_is_gone_restarts_with_its_slots(pg: Playground) -> None:
    pg.chat.send("s1", "Recommend a gaming mouse")
    source = pg.studio.read_sop("recommend_item.sop").replace("ask user for budget\n", "")
    assert pg.studio.save_sop("recommend_item.sop", source).saved
    view = pg.chat.send("s1", "hmm")
    assert any("restarted: its SOP changed" in d for d in view.trace["decisions"])
    assert view.state.goals["g1"].slots["category"] == "Mouse"


def test_deleting_an_sop_ends_goals_that_were_using_it(pg: Playground) -> None:
    pg.chat.send("s1", "Recommend a gaming mouse")
    assert pg.studio.delete_sop("recommend_item.sop").saved
    view = pg.chat.send("s1", "1500")
    assert any("no longer exists" in d for d in view.trace["decisions"])
    assert view.state.active_goal is None
    assert pg.history.undo() is not None and (pg.root / "sops" / "recommend_item.sop").exists()


@pytest.mark.parametrize(("name", "source", "expected"), [
    ("recommend_item.sop", "", "the SOP is empty"),
    ("recommend_item.sop", "---\nid: sales.recommend_item\n---\nask user for budget\nif items found:\n"
                           "    recommend items to user\n  tell user nothing matched\n", "unindent"),
    ("recommend_item.sop", "---\nid: sales.recommend_item\n---\ndance with the customer\n", "unknown action"),
    ("order_status.json", '{"startNode": "a", "nodes": {"a": {"type": "action", "nextNodes": ["b"]}}}',
     "unknown node"),
    ("twin.sop", "---\nid: sales.recommend_item\n---\nask user for budget\n", "already used"),
])
def test_bad_sops_are_refused_and_nothing_changes_on_disk(pg: Playground, name: str, source: str,
                                                         expected: str) -> None:
    before = snapshot(pg.root)
    result = pg.studio.save_sop(name, source, create=name == "twin.sop")
    assert not result.saved
    assert any(expected in p.message for p in result.blocking), [str(p) for p in result.blocking]
    assert all(p.line >= 1 for p in result.blocking if p.file.startswith("sops/"))
    assert snapshot(pg.root) == before and pg.history.backups() == []


def test_live_check_reports_line_numbers_and_compiles_the_graph(pg: Playground) -> None:
    check = pg.studio.check_sop("recommend_item.sop", pg.studio.read_sop("recommend_item.sop") + "\nfly to the moon\n")
    assert not check.ok and [p.line for p in check.problems if p.severity == "error"] == [32]
    good = pg.studio.check_sop("recommend_item.sop", pg.studio.read_sop("recommend_item.sop"))
    assert good.ok and good.sop is not None and good.sop.to_dot().startswith("digraph")


def test_duplicate_gets_a_new_id_and_undo_removes_it(pg: Playground) -> None:
    result = pg.studio.duplicate_sop("recommend_item.sop", "recommend_copy.sop")
    assert result.saved
    ids = {f.name: f.id for f in pg.studio.sop_files()}
    assert ids["recommend_copy.sop"] == "sales.recommend_copy" and ids["recommend_item.sop"] == "sales.recommend_item"
    with pytest.raises(UserInputError, match="already exists"):
        pg.studio.duplicate_sop("recommend_item.sop", "recommend_copy.sop")
    assert pg.history.undo() is not None and "recommend_copy.sop" not in {f.name for f in pg.studio.sop_files()}


def test_gar_duplicates_are_refused_and_a_valid_edit_is_saved(pg: Playground) -> None:
    before = snapshot(pg.root)
    rows = pg.studio.gar_rows()
    result = pg.studio.save_gar([*rows, dict(rows[0])])
    assert not result.saved and "duplicate action" in result.blocking[0].message and result.blocking[0].line > 1
    assert snapshot(pg.root) == before
    rows[1]["user_interaction_metadata"] = "your budget in baht, e.g. 2500"
    assert pg.studio.save_gar(rows).saved
    assert "2500" in pg.chat.send("s9", "Recommend a gaming mouse").reply


def test_bad_uploads_are_refused_and_nothing_changes_on_disk(pg: Playground) -> None:
    before = snapshot(pg.root)
    with pytest.raises(UploadError, match="binary"):
        pg.store.upload_inventory("inventory.csv", b"\x89PNG\r\n\x1a\n\x00\x00", {"name": "a", "price": "b"}, [])
    with pytest.raises(UploadError, match="limit"):
        pg.store.upload_inventory("big.csv", b"name,price\n" + b"x,1\n" * (13 * 1024 * 1024), {}, [])
    found, result = pg.store.upload_inventory("inv.csv", b"sku,name,kind\nA,Tent,Tent\n",
                                        {"sku": "sku", "name": "name", "category": "kind"}, [])
    assert result is None and any("'price' is not mapped" in str(p) for p in found)
    with pytest.raises(UploadError, match="not UTF-8"):
        pg.store.upload_kb([("notes.md", "caf\xe9".encode("latin-1"))])
    with pytest.raises(UploadError, match="not accepted"):
        pg.store.upload_kb([("tool.exe", b"MZ")])
    assert snapshot(pg.root) == before


def test_outdoor_inventory_uploaded_mapped_then_recommended_from(pg: Playground) -> None:
    data = (ROOT / "examples" / "outdoor" / "inventory.csv").read_bytes()
    frame = read_inventory("outdoor.csv", data)
    mapping = suggest_mapping(list(frame.columns), pg.store.inventory_mapping())
    found, result = pg.store.upload_inventory("outdoor.csv", data, mapping, ["Highlights", "Weight", "Season"])
    assert result is not None and result.saved, [str(p) for p in found]
    assert pg.store.inventory_mapping()["price"] == "Cost" and "Tent" in pg.workspace.vocab.categories
    assert pg.chat.send("o", "Recommend a tent").state.active_goal.type == "sales.recommend_item"  # type: ignore[union-attr]
    reply = pg.chat.send("o", "under 6000").reply
    assert "Coleman Sundome 2-Person Tent" in reply and "Mouse" not in reply
    assert [p for p in load_workspace(pg.root, pg.embedder).problems if p.severity != "info"] == []


def test_kb_upload_is_indexed_and_searchable_and_deletable(pg: Playground) -> None:
    result = pg.store.upload_kb([("returns.md", b"# Returns\n\nReturns are accepted within 14 days with the receipt."),
                           ("Warranty.pdf", text_pdf(["Warranty claims are answered within 5 business days."]))])
    assert result.saved
    refs = {d["file"]: d["chunks"] for d in pg.store.kb_documents()}
    assert refs["kb/returns.md"] == 1 and refs["kb/Warranty.md"] == 1
    assert pg.workspace.kb is not None and pg.wait_for_kb(60)
    assert pg.workspace.kb.search("how long does a warranty claim take")[0]["ref"] == "kb/Warranty.md"
    assert pg.store.delete_kb("kb/returns.md").saved \
        and "kb/returns.md" not in {d["file"] for d in pg.store.kb_documents()}
    with pytest.raises(UserInputError):
        pg.store.delete_kb("store.yaml")


def test_reindex_reports_progress(pg: Playground) -> None:
    seen: list[float] = []
    pg.reload(progress=lambda f, _s: seen.append(f))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_inspector_timeline_memory_tool_calls_and_export(pg: Playground) -> None:
    for text in ["Recommend a gaming mouse", "My laptop battery drains fast, how do I fix it?", "1500"]:
        pg.chat.send("t3", text, customer_id="cust-9")
    rows = pg.inspector.timeline("t3")
    assert [r["active goal"] for r in rows][:2] == ["sales.recommend_item", "support.troubleshoot"]
    assert rows[1]["stack (bottom → top)"] == "sales.recommend_item"
    state = pg.chat.state("t3")
    assert state is not None and pg.inspector.execution_memory(state)
    doc = json.loads(pg.inspector.export_session("t3"))
    assert doc["state"]["session_id"] == "t3" and len(doc["traces"]) == 3
    assert doc["sops"]["sales.recommend_item"] and doc["workspace"]["name"] == "Gadget Hub"
    with pytest.raises(UserInputError):
        pg.inspector.export_session("nope")


def test_preferences_are_shown_with_provenance_and_can_be_forgotten(pg: Playground) -> None:
    pg.chat.send("p1", "I like Logitech, no Razer please", customer_id="c7")
    entries = pg.preferences.preference_entries("c7")
    liked = next(e for e in entries if e.value == "Logitech")
    assert liked.session_id == "p1" and liked.turn == 1 and "Logitech" in liked.message
    pg.preferences.forget_preference("c7", liked.id)
    assert "Logitech" not in pg.memory.summary("c7").preferred_brands


def test_workspace_conversation_tests_run_from_the_service(embedder: CachedEmbedder) -> None:
    demo = Playground(ROOT, embedder=embedder, state_url="sqlite:///:memory:")
    try:
        files = demo.runs.conversation_files()
        names = {p.name for p in files}
        assert "t1_sales_dependency.yaml" in names and "t1_sales_outdoor.yaml" not in names
        steps: list[float] = []
        results = demo.runs.run_tests([p for p in files if p.name == "t1_sales_dependency.yaml"],
                                 progress=lambda f, _s: steps.append(f))
        assert results[0].passed and results[0].turns[0].trace["turn"] == 1 and steps[-1] == 1.0
    finally:
        demo.close()


def test_new_workspaces_from_a_template_or_blank_lint_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           embedder: CachedEmbedder) -> None:
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(tmp_path / "mine"))
    outdoor = create_workspace("Peak Gear", ROOT / "examples" / "outdoor")
    blank = create_workspace("Corner Shop", "blank")
    for path, name in ((outdoor, "Peak Gear"), (blank, "Corner Shop")):
        ws = load_workspace(path, embedder)
        assert not errors(ws.problems), [str(p) for p in ws.problems]
        assert ws.files.config.name == name and not (path / ".state" / "sessions.sqlite").exists()
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["corner-shop", "peak-gear"]
    with pytest.raises(UserInputError, match="already exists"):
        create_workspace("Peak gear", "blank")
    with pytest.raises(UserInputError):
        create_workspace("   ", "blank")


def test_the_goal_story_says_in_plain_words_what_is_going_on_and_how_requests_ended(pg: Playground) -> None:
    assert pg.chat.goal_story(None) == {"now": "", "waiting": [], "finished": [], "handoff": None}
    pg.chat.send("story", "Recommend a gaming mouse.")
    story = pg.chat.goal_story(pg.chat.state("story"))
    assert story["now"] == "Find a product: waiting for the budget" and story["finished"] == []
    pg.chat.send("story", "never mind, cancel that")
    story = pg.chat.goal_story(pg.chat.state("story"))
    assert story["now"] == "" and story["finished"] == [{"request": "Find a product",
                                                         "outcome": "cancelled by the customer"}]


def test_the_flow_draws_the_path_the_conversation_took_and_lights_the_current_step(pg: Playground) -> None:
    assert pg.chat.flow("nobody-yet") is None
    pg.chat.send("walk", "Recommend a gaming mouse.")
    flow = pg.chat.flow("walk")
    assert flow is not None and flow["sop"] == "sales.recommend_item"
    sop = next(s for s in pg.workspace.sops if s.id == flow["sop"])
    asked = flow["current"]
    assert sop.nodes[asked].label == "ask user for budget" and flow["visited"][-1] == asked
    assert f'"{asked}" [' in flow["dot"] and "penwidth=3.5" in flow["dot"]  # the current step outlined
    pg.chat.send("walk", "1500")
    flow = pg.chat.flow("walk")
    search = next(n.id for n in sop.nodes.values() if n.label == "search inventory for matching items")
    nothing = next(n.id for n in sop.nodes.values() if n.label == "tell user nothing matched")
    assert flow["visited"].index(asked) < flow["visited"].index(search)
    assert f'"{asked}" -> "{search}" [color="#1f6feb"' in flow["dot"]  # the edge walked is drawn heavy
    assert nothing not in flow["visited"]
    assert f'"{nothing}" [shape=box, fillcolor="#dff5e3", fontcolor="#8a94a6"' in flow["dot"]  # not walked: faded
    assert sop.nodes[flow["current"]].label == "ask user to choose one of the recommended items"
    pg.chat.send("walk", "never mind, cancel that")
    ended = pg.chat.flow("walk")
    assert ended is not None and ended["current"] is None and ended["visited"] == flow["visited"]


def test_store_settings_are_written_to_store_yaml_checked_and_in_use(pg: Playground) -> None:
    before = (pg.root / "store.yaml").read_text(encoding="utf-8")
    result = pg.store.save_settings("Paws & Claws", "eur", "ie", "Food, toys and care for cats and dogs.")
    assert result.saved
    text = (pg.root / "store.yaml").read_text(encoding="utf-8")
    assert "name: Paws & Claws\n" in text and "currency: EUR\n" in text and "region: IE\n" in text
    rest = text.replace("region: IE\n", "").split("agents:", 1)[1]  # a new key goes at the end
    assert rest == before.split("agents:", 1)[1]  # the rest of the file as it was
    assert pg.store.settings() == {"name": "Paws & Claws", "currency": "EUR", "region": "IE",
                             "description": "Food, toys and care for cats and dogs.", "greeting": "",
                             "languages": [], "polite_particle": ""}
    assert pg.name == "Paws & Claws"


def test_the_store_greeting_and_languages_are_its_own(pg: Playground) -> None:
    result = pg.store.save_settings("Paws & Claws", "EUR", greeting="Welcome to Paws & Claws!", languages=["en"])
    assert result.saved
    text = (pg.root / "store.yaml").read_text(encoding="utf-8")
    assert "greeting: Welcome to Paws & Claws!\n" in text and "languages: [en]\n" in text
    assert pg.chat.send("g", "hello").reply.startswith("Welcome to Paws & Claws! I can help you")
    thai = pg.chat.send("t", "สวัสดีครับ อยากได้เมาส์")  # Thai script, in a store that takes English only
    assert thai.reply.startswith("Sorry, I can only read messages in English.")
    assert pg.chat.state("t").active_goal is None
    with pytest.raises(UploadError, match="languages: 'xx' not known"):
        pg.store.save_settings("Paws & Claws", languages=["xx"])


def test_the_thai_polite_particle_is_a_store_setting(pg: Playground) -> None:
    assert "ครับ" in pg.chat.send("a", "สวัสดีครับ").reply  # the default voice
    assert pg.store.save_settings(pg.name, "THB", polite_particle="ค่ะ").saved
    assert "polite_particle: ค่ะ\n" in (pg.root / "store.yaml").read_text(encoding="utf-8")
    assert pg.store.settings()["polite_particle"] == "ค่ะ"
    reply = pg.chat.send("b", "สวัสดีค่ะ").reply
    assert "ค่ะ" in reply and "ครับ" not in reply
    assert pg.store.save_settings(pg.name, "THB").saved  # not given: left as it is
    assert pg.store.settings()["polite_particle"] == "ค่ะ"
    with pytest.raises(UploadError, match="polite particle: 'sir'"):
        pg.store.save_settings(pg.name, "THB", polite_particle="sir")


def test_a_message_in_a_script_no_language_covers_gets_a_notice_and_the_question_again(pg: Playground) -> None:
    pg.chat.send("jp", "Recommend a gaming mouse.")
    reply = pg.chat.send("jp", "ゲーミングマウスの予算は千五百円です").reply
    assert reply.startswith("Sorry, I can only read messages in English / ไทย.") and "budget" in reply
    state = pg.chat.state("jp")
    assert state.active_goal is not None and state.active_goal.missing == ["budget"]
    assert pg.chat.traces("jp")[-1]["act"] == "unsupported_language"
    assert "฿" in pg.chat.send("jp", "1500").reply  # the sale goes on where it was


@pytest.mark.parametrize(("fields", "message"), [
    (("", "USD", "", ""), "store name"),
    (("Shop", "dollars", "", ""), "currency: 'DOLLARS'"),
    (("Shop", "USD", "XX", ""), "region: 'XX'"),
    (("Shop", "USD", "", "", "", [], "please"), "polite particle: 'please'"),
])
def test_wrong_store_settings_name_the_field_and_write_nothing(pg: Playground, fields: tuple[Any, ...],
                                                               message: str) -> None:
    before = (pg.root / "store.yaml").read_text(encoding="utf-8")
    with pytest.raises(UploadError) as exc:
        pg.store.save_settings(*fields)
    assert message in str(exc.value)
    assert (pg.root / "store.yaml").read_text(encoding="utf-8") == before
