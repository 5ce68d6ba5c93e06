"""Every page driven through streamlit.testing.v1.AppTest: what a user clicks and types, and what they see."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.playground.workspaces import copy_workspace
from tests.playground.conftest import snapshot
from tests.ui.conftest import APP, ROOT, studio_gen, texts
from ui import services


def _chat(at: AppTest, message: str) -> None:
    at.chat_input(key="chat_input").set_value(message).run()
    assert not at.exception, at.exception


def _chat_page(at: AppTest, *messages: str) -> str:
    """Go to the chat, send the messages; the last reply."""
    at.switch_page("pages/chat.py").run()
    for m in messages:
        _chat(at, m)
    return str(at.chat_message[-1].markdown[0].value)


def test_chat_t1_with_goal_panel_and_trace(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse.")
    page = texts(at)
    assert "budget" in at.chat_message[1].markdown[0].value.lower()
    assert "`sales.recommend_item`" in page and "`budget`" in page and "blocked" in page
    assert "**Find a product: waiting for the budget**" in page  # the same, in plain words
    assert [e.label for e in at.expander if e.label.startswith("Trace")] == ["Trace of turn 1"]
    graph = at.get("graphviz_chart")[0].proto.spec  # the SOP beside the chat, the current step outlined
    assert 'label="▶ ask user for budget"' in graph
    _chat(at, "1500")
    reply = at.chat_message[3].markdown[0].value
    assert "฿" in reply and "choose" in reply.lower()
    trace_text = "\n".join(m.value for m in at.chat_message[3].expander[0].markdown)
    assert "`inventory.query` by sales" in trace_text and "search inventory for matching items" in trace_text


def test_new_session_starts_an_empty_chat(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse.")
    next(b for b in at.sidebar.button if b.label == "New session").click().run()
    assert len(at.chat_message) == 0 and "Say hello" in texts(at)


def test_studio_refuses_a_bad_save_then_saves_and_chat_uses_it(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/studio.py").run()
    at.toggle(key="studio_plain_editor").set_value(True).run()
    at.radio(key=f"sop_choice_{studio_gen(app_ws, 0)}").set_value("recommend_item.sop").run()
    area = at.text_area(key=f"src_{studio_gen(app_ws, 0)}_recommend_item.sop")
    before = snapshot(app_ws)
    area.set_value("").run()
    assert any("the SOP is empty" in e.value for e in at.error)
    at.button(key="save_sop").click().run()
    assert any("not saved" in e.value for e in at.error) and snapshot(app_ws) == before
    source = (app_ws / "sops" / "recommend_item.sop").read_text()
    edited = source.replace("    tell user nothing matched\n", "    say goodbye politely\n")
    at.text_area(key=f"src_{studio_gen(app_ws, 0)}_recommend_item.sop").set_value(edited).run()
    assert "Compiles: no errors." in texts(at)
    at.button(key="save_sop").click().run()
    assert any("saved and in use" in s.value for s in at.success)
    assert (app_ws / "sops" / "recommend_item.sop").read_text() == edited
    assert "other options" in _chat_page(at, "Recommend a gaming mouse", "100")


def test_a_new_sop_is_a_draft_until_it_is_first_saved(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/studio.py").run()
    at.text_input(key="new_sop_name").set_value("refund_request").run()
    at.button(key="create_sop").click().run()
    assert not (app_ws / "sops" / "refund_request.sop").exists()  # not live in the chat before it is saved
    assert at.radio(key=f"sop_choice_{studio_gen(app_ws, 1)}").value == "refund_request.sop"
    assert "New SOP: not in the chat until it is first saved." in texts(at)
    at.button(key="save_sop").click().run()
    assert (app_ws / "sops" / "refund_request.sop").exists()
    assert any("saved and in use" in s.value for s in at.success)
    at.button(key="undo").click().run()
    assert not (app_ws / "sops" / "refund_request.sop").exists()


def test_a_new_sop_held_by_a_test_offers_the_three_ways_on(at: AppTest, app_ws: Path) -> None:
    (app_ws / "conversations").mkdir(exist_ok=True)
    (app_ws / "conversations" / "returns_talk.yaml").write_text(
        "name: returns talk\nturns:\n  - user: I need help with returns\n    expect: {active_goal: null}\n",
        encoding="utf-8")
    at.switch_page("pages/studio.py").run()
    at.text_input(key="new_sop_name").set_value("returns").run()
    at.button(key="create_sop").click().run()
    at.button(key="save_sop").click().run()
    assert not at.exception, at.exception
    assert not (app_ws / "sops" / "returns.sop").exists()  # held: nothing written, nothing live in the chat
    assert any("would break 1 conversation test" in w.value for w in at.warning)
    assert at.button(key="anyway_sops/returns.sop") is not None and at.button(key="keep_sops/returns.sop") is not None
    at.button(key="accept_sops/returns.sop").click().run()
    assert (app_ws / "sops" / "returns.sop").exists()
    shown = texts(at)  # the status line says what is true now, not what was true before the click
    assert "Saved; the next chat turn uses this version." in shown and "Unsaved draft" not in shown, shown
    assert "studio_held" not in at.session_state


def test_the_version_line_names_the_version_just_published(at: AppTest) -> None:
    at.switch_page("pages/store.py").run()
    assert any("This workspace now: **unpublished**" in m.value for m in at.markdown)
    at.text_input(key="version_note").set_value("before the demo")  # sent with the form
    next(b for b in at.button if b.label == "Publish version").click().run()
    assert not at.exception, at.exception
    line = next(m.value for m in at.markdown if "This workspace now" in m.value)
    assert any("Published v1" in m.value for m in at.success), ([e.value for e in at.error], texts(at)[:800])
    assert line.startswith("This workspace now: **v1**"), line


def test_inspector_shows_timeline_and_export(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse")
    _chat(at, "My laptop battery drains fast, how do I fix it?")
    at.switch_page("pages/inspector.py").run()
    assert not at.exception
    timeline = at.dataframe[0].value
    assert list(timeline["active goal"]) == ["sales.recommend_item", "support.troubleshoot"]
    sessions = next(s for s in at.selectbox if s.label == "Session")
    assert sessions.options[0].startswith("“Recommend a gaming mouse” · ") and "· 2 turns" in sessions.options[0]
    assert "Download session JSON" in str(at.get("download_button")[0].proto.label)


def test_store_upload_maps_outdoor_inventory_then_chat_recommends_a_tent(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/store.py").run()
    data = (ROOT / "examples" / "outdoor" / "inventory.csv").read_bytes()
    at.file_uploader(key="inventory_upload").set_value(("outdoor.csv", data, "text/csv")).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="map_outdoor.csv_price").value == "Cost"
    at.button(key="apply_inventory").click().run()
    assert any("Inventory saved" in s.value for s in at.success), texts(at)
    assert "Coleman Sundome 2-Person Tent" in _chat_page(at, "Recommend a tent", "under 6000")


def test_store_bad_uploads_show_clear_errors_and_change_nothing(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/store.py").run()
    before = snapshot(app_ws)
    upload = at.file_uploader(key="inventory_upload")
    upload.set_value(("inventory.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "text/csv")).run()
    assert any("looks binary" in e.value for e in at.error)
    at.file_uploader(key="inventory_upload").set_value(
        ("huge.csv", b"name,price\n" + b"x,1\n" * (13 * 1024 * 1024), "text/csv")).run()
    assert any("limit is 20.0 MB" in e.value for e in at.error)
    at.file_uploader(key="inventory_upload").set_value(("noprice.csv", b"sku,name\nA,Tent\n", "text/csv")).run()
    at.button(key="apply_inventory").click().run()
    page = texts(at)
    assert "the required role 'price' is not mapped" in page and "Nothing was changed on disk" in page
    assert snapshot(app_ws) == before


def test_tests_page_runs_the_workspace_conversations(at: AppTest, app_ws: Path) -> None:
    convo = app_ws / "conversations"
    convo.mkdir()
    (convo / "t1.yaml").write_text((ROOT / "tests" / "conversations" / "t1_sales_dependency.yaml").read_text()
                                   .replace("workspace: ../..\n", ""), encoding="utf-8")
    (convo / "broken.yaml").write_text("turns:\n  - user: Recommend a gaming mouse\n    expect: {active_goal: nope}\n",
                                       encoding="utf-8")
    at.switch_page("pages/tests.py").run()
    at.button(key="run_tests").click().run()
    assert any("1 of 2 files passed" in e.value for e in at.error)
    assert any("expected active_goal" in e.value or "active_goal" in e.value for e in at.error)
    page = texts(at)  # beside the failed expectation: why the engine did what it did
    assert "Why this reply" in page and "a request for sales.recommend_item" in page.replace("\\", ""), page


def test_workspace_switch_and_create(at: AppTest, app_ws: Path, tmp_path: Path) -> None:
    # The sidebar picker itself is driven in the browser (tests/ui/test_e2e.py): AppTest does not re-render the
    # entry script's sidebar on reruns. Here the choice it stores is set directly.
    picker = at.selectbox(key=services.picker_key(app_ws))
    outdoor = next(o for o in picker.options if o.startswith("Trailhead Outfitters"))
    assert outdoor.endswith("(example: outdoor)")
    at.session_state["workspace"] = str(ROOT / "examples" / "outdoor")
    at.run()
    assert "workspace **Trailhead Outfitters**" in texts(at)
    at.switch_page("pages/store.py").run()
    at.text_input(key="new_ws_name").set_value("Peak Gear").run()
    template = next(o for o in at.selectbox(key="new_ws_template").options if o.startswith("Blank"))
    at.selectbox(key="new_ws_template").set_value(template).run()
    at.button(key="create_ws").click().run()
    assert not at.exception, at.exception
    created = tmp_path / "created" / "peak-gear"
    assert at.session_state["workspace"] == str(created) and "Open: **Peak Gear**" in texts(at)
    at.switch_page("pages/chat.py").run()
    _chat(at, "When are you open?")
    assert "every day from 9:00 to 18:00" in at.chat_message[-1].markdown[0].value


def test_the_studio_of_a_workspace_without_a_gar_draws_and_drafts_nothing(at: AppTest, tmp_path: Path) -> None:
    json_only = tmp_path / "created" / "order-desk"  # JSON SOPs only: no gar.csv
    json_only.mkdir(parents=True)
    copy_workspace(ROOT / "examples" / "order_delay", json_only)
    assert not (json_only / "gar.csv").exists()
    at.session_state["workspace"] = str(json_only)  # the sidebar's picker is driven in the browser tests
    at.switch_page("pages/studio.py").run()
    assert not at.exception, at.exception
    assert at.session_state["gar_base"] == []  # an empty table, not a crash
    assert not (json_only / "gar.csv").exists() and not (json_only / ".state" / "drafts" / "gar.csv").exists()
    assert "order_delay.json" in at.radio[0].options


def test_hostile_messages_are_shown_literally_and_keep_the_session(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse")
    _chat(at, "![x](http://127.0.0.1:9/track.png) <script>alert(1)</script> **you are useless**")
    shown = at.chat_message[2].markdown[0].value
    assert shown.startswith("\\!\\[x\\]") and "\\<script\\>" in shown
    assert "budget" in at.chat_message[3].markdown[0].value.lower()  # the pending question is asked again


def test_inspector_deletes_a_session(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse")
    at.switch_page("pages/inspector.py").run()
    at.button(key="delete_session").click().run()
    assert any("No sessions yet" in i.value for i in at.info)


def test_tests_page_runs_the_synthetic_evaluation(at: AppTest) -> None:
    at.switch_page("pages/tests.py").run()
    at.number_input(key="eval_sessions").set_value(6).run()
    at.button(key="run_eval").click().run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sessions"] == "6" and 0.9 <= float(metrics["State accuracy"]) <= 1.0
    assert int(metrics["States"]) > 6
    assert any(m.value.startswith("The sessions reach **") for m in at.markdown)  # step coverage of the sessions
    assert at.selectbox(key="eval_coverage_sop").options


def test_a_broken_sop_on_disk_is_shown_and_can_be_fixed_from_the_studio(app_ws: Path) -> None:
    good = (app_ws / "sops" / "troubleshoot.sop").read_text()
    (app_ws / "sops" / "troubleshoot.sop").write_text(good.replace("ask user for device model", "ask usr fr device"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    _chat(at, "Recommend a gaming mouse")
    assert any("workspace has errors" in e.value and "troubleshoot.sop" in e.value for e in at.error)
    at.switch_page("pages/studio.py").run()
    assert "troubleshoot.sop (has errors)" in at.radio(key=f"sop_choice_{studio_gen(app_ws, 0)}").options
    at.toggle(key="studio_plain_editor").set_value(True).run()
    at.radio(key=f"sop_choice_{studio_gen(app_ws, 0)}").set_value("troubleshoot.sop").run()
    at.text_area(key=f"src_{studio_gen(app_ws, 0)}_troubleshoot.sop").set_value(good).run()
    at.button(key="save_sop").click().run()
    assert any("saved and in use" in s.value for s in at.success)
    assert "budget" in _chat_page(at, "Recommend a gaming mouse").lower()



def test_brain_settings_switch_to_an_openai_compatible_endpoint(at: AppTest) -> None:
    from tests.brains.fake_openai import FakeOpenAI, abstain

    at.selectbox(key="brain").set_value("llm")
    _apply_brain(at)
    assert any("needs a language model" in e.value for e in at.error)  # nothing configured: refused
    with FakeOpenAI(abstain) as fake:
        at.selectbox(key="brain").set_value("hybrid")
        at.text_input(key="llm_model").set_value("fake-model")
        at.text_input(key="llm_base_url").set_value(fake.base_url)
        _apply_brain(at)
        assert not at.error, [e.value for e in at.error]
        _chat(at, "hmm, something about my order maybe")
        assert "brain **hybrid**" in texts(at)
        assert fake.chat_requests(), "the hybrid brain asked the model about an unclear message"
        at.selectbox(key="brain").set_value("rule")
        _apply_brain(at)
        sent = len(fake.chat_requests())
        _chat(at, "Recommend a gaming mouse")
        assert len(fake.chat_requests()) == sent and "brain **rule**" in texts(at)


def _apply_brain(at: AppTest) -> None:
    next(b for b in at.get("form_submit_button") if "Apply brain" in str(b.proto.label)).click().run()
    assert not at.exception, at.exception


def test_the_url_names_the_workspace_and_session_so_a_reload_reopens_them(app_ws: Path) -> None:
    first = AppTest.from_file(APP, default_timeout=120)
    first.query_params["ws"] = "examples/outdoor"
    first.run()
    assert not first.exception, first.exception
    assert "workspace **Trailhead Outfitters**" in texts(first)
    _chat(first, "Hello")
    session = first.query_params["session"]
    session = session[0] if isinstance(session, list) else session
    ws = first.query_params["ws"]
    assert (ws[0] if isinstance(ws, list) else ws) == "examples/outdoor"
    again = AppTest.from_file(APP, default_timeout=120)  # a reload: a new browser session, the same URL
    again.query_params.update({"ws": "examples/outdoor", "session": session})
    again.run()
    assert f"Session `{session}`" in texts(again) and "workspace **Trailhead Outfitters**" in texts(again)
    assert [m.markdown[0].value for m in again.chat_message][:1] == ["Hello"]  # the chat is back


def test_a_link_to_a_folder_that_is_not_a_workspace_opens_the_default_and_says_so(app_ws: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = "/etc"
    at.run()
    assert not at.exception, at.exception
    assert any("not here: /etc" in w.value for w in at.warning)
    assert "workspace **Gadget Hub**" in texts(at)


def test_store_settings_tab_saves_to_store_yaml_or_names_the_wrong_field(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/store.py").run()
    at.text_input(key="set_currency").set_value("us")
    at.button(key="FormSubmitter:store_settings-Save settings").click().run()
    assert any("currency: 'US'" in e.value for e in at.error), [e.value for e in at.error]
    assert "currency: THB" in (app_ws / "store.yaml").read_text(encoding="utf-8")
    at.text_input(key="set_name").set_value("Gadget Hub Bangkok")
    at.text_input(key="set_currency").set_value("THB")
    at.button(key="FormSubmitter:store_settings-Save settings").click().run()
    assert any("Store settings saved" in s.value for s in at.success)
    assert "name: Gadget Hub Bangkok\n" in (app_ws / "store.yaml").read_text(encoding="utf-8")


def test_a_reply_links_to_its_turn_in_the_inspector(at: AppTest) -> None:
    _chat(at, "Recommend a gaming mouse")
    _chat(at, "My laptop battery drains fast, how do I fix it?")
    links = [str(e.proto.label) for e in at.get("page_link")]
    assert "Why this reply? Open turn 2 in the Inspector" in links
    session = at.session_state["session_id"]
    at.query_params.update({"session": session, "turn": "2"})  # what the link opens
    at.switch_page("pages/inspector.py").run()
    assert not at.exception, at.exception
    assert "Turn 2" in [s.value for s in at.subheader]
    assert "how do I fix it" in texts(at)


def test_studio_quick_fix_adds_an_unknown_step_to_the_gar_and_history_shows_the_diff(at: AppTest,
                                                                                     app_ws: Path) -> None:
    at.switch_page("pages/studio.py").run()
    at.toggle(key="studio_plain_editor").set_value(True).run()
    at.radio(key=f"sop_choice_{studio_gen(app_ws, 0)}").set_value("recommend_item.sop").run()
    source = (app_ws / "sops" / "recommend_item.sop").read_text()
    edited = source.replace("ask user for budget\n", "ask user for budget\nask user for delivery city\n", 1)
    at.text_area(key=f"src_{studio_gen(app_ws, 0)}_recommend_item.sop").set_value(edited).run()
    assert any("unknown action 'ask user for delivery city'" in e.value for e in at.error)
    assert any(e.label == "Quick fix: add “ask user for delivery city” to the GAR" for e in at.expander)
    assert next(t for t in at.text_input if t.label == "params").value == "delivery_city"  # guessed
    next(b for b in at.button if b.label == "Add to the GAR").click().run()
    assert not at.exception, at.exception
    assert "ask user for delivery city,ask_user_input,,,delivery_city" in (app_ws / "gar.csv").read_text()
    assert "Compiles: no errors." in texts(at)  # the unsaved SOP draft now lints clean, and is still there
    assert at.text_area(key=f"src_{studio_gen(app_ws, 1)}_recommend_item.sop").value == edited
    history = "\n".join(c.value for c in at.code)
    assert "+ask user for delivery city,ask_user_input,,,delivery_city" in history


def test_studio_replays_a_chat_against_the_unsaved_draft(at: AppTest, app_ws: Path) -> None:
    _chat(at, "Recommend a gaming mouse")
    assert "budget" in at.chat_message[1].markdown[0].value.lower()
    at.switch_page("pages/studio.py").run()
    at.toggle(key="studio_plain_editor").set_value(True).run()
    at.radio(key=f"sop_choice_{studio_gen(app_ws, 0)}").set_value("recommend_item.sop").run()
    saved = (app_ws / "sops" / "recommend_item.sop").read_text()
    edited = saved.replace("ask user for budget\n", "")
    at.text_area(key=f"src_{studio_gen(app_ws, 0)}_recommend_item.sop").set_value(edited).run()
    assert not at.exception, at.exception
    at.button(key="replay_run").click().run()
    assert not at.exception, at.exception
    assert any("1 of 1 turn(s) change (as saved → with the drafts of sops/recommend_item.sop)" in w.value
               for w in at.warning), [w.value for w in at.warning]
    page = texts(at)
    assert "ask user for budget" in page and "search inventory for matching items" in page
    assert (app_ws / "sops" / "recommend_item.sop").read_text() == saved  # the replay saved nothing
