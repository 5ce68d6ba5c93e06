"""Screens that stay true: the app started by ``make run PORT=…`` in headless Chromium (Debian's chromium driven
by Playwright), then: the sidebar and the Store page show what a save just changed without a reload, the
knowledge base's indexing shows its progress, and at phone width the chat comes first with the goal folded below it.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from core.playground.workspaces import copy_workspace
from tests.ui.browser import SHOTS, need_chromium, open_app, serve
from tests.ui.test_e2e import _go, _idle, _plain_editor, _say

need_chromium()  # without Chromium the module is skipped

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``make run PORT=<free port>`` on a copy of the demo workspace; the URL and the copy."""
    base = tmp_path_factory.mktemp("screens")
    ws = base / "ws"
    ws.mkdir()
    copy_workspace(ROOT, ws)
    with serve(ws, base, via_make=True) as url:
        yield url, ws


def test_make_run_serves_on_the_port_asked_for(made: tuple[str, Path]) -> None:
    with urllib.request.urlopen(made[0], timeout=10) as r:
        assert r.status == 200 and b"<html" in r.read().lower()


def test_at_phone_width_the_chat_comes_first_with_the_goal_folded_below(browser: Browser,
                                                                         made: tuple[str, Path]) -> None:
    """At 390 px the chat input and the last reply (with its "Why this reply?" link whole) are on screen without
    scrolling; the goal panel and the flow graph are folded into one line under the last reply."""
    page = open_app(browser, made[0], 390, 844)
    try:
        for message in ("Recommend a gaming mouse", "1500"):
            _say(page, message)
        page.wait_for_timeout(800)  # the chat's own scroll after a reply
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "chat_phone.png"))
        box = page.get_by_placeholder("Message the agent").bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 844, box
        last = page.locator("[data-testid=stChatMessage]").last
        shown = last.bounding_box()
        assert shown is not None and shown["y"] >= 0 and shown["y"] + shown["height"] <= box["y"], shown
        assert "choose one of the recommended items" in last.inner_text()
        why = last.locator("[data-testid=stPageLink]")
        expect(why).to_contain_text("Why this reply? Open turn 2 in the Inspector")
        label = why.locator("p").first
        assert label.evaluate("p => p.scrollWidth <= p.clientWidth + 1"), "the link's label is cut off"
        edge = why.bounding_box()
        assert edge is not None and edge["x"] + edge["width"] <= 390
        fold = page.locator(".st-key-goal_fold")
        expect(fold).to_contain_text("Goal: Find a product")
        folded = fold.bounding_box()
        assert folded is not None and shown["y"] + shown["height"] <= folded["y"] < box["y"]  # under the reply
        expect(page.locator(".st-key-flow_graph")).to_be_hidden()  # the side panel's graph is not drawn here
        expect(page.locator(".st-key-flow_graph_phone")).to_be_hidden()  # folded until opened
        fold.get_by_text(re.compile("^Goal: ")).click()
        expect(page.locator(".st-key-flow_graph_phone")).to_be_visible()
    finally:
        page.context.close()


def test_a_save_clears_the_sidebar_draft_at_once(browser: Browser, made: tuple[str, Path]) -> None:
    page = open_app(browser, made[0])
    try:
        _go(page, "SOP studio")
        page.get_by_text("recommend_item.sop", exact=True).click()
        _idle(page)
        _plain_editor(page)
        area = page.get_by_label("sops/recommend_item.sop", exact=True)
        source = (made[1] / "sops" / "recommend_item.sop").read_text(encoding="utf-8")
        area.fill(source.replace("    tell user nothing matched\n", "    say goodbye politely\n"))
        area.press("Control+Enter")
        _idle(page)
        sidebar = page.locator("[data-testid=stSidebar]")
        expect(sidebar).to_contain_text("Unsaved drafts")
        page.get_by_role("button", name=re.compile("Save$")).click()
        expect(page.get_by_text("saved and in use")).to_be_visible()
        _idle(page)
        expect(sidebar).not_to_contain_text("Unsaved drafts")  # no reload needed
    finally:
        page.context.close()


def test_a_kb_document_added_shows_its_count_and_indexing_without_a_reload(browser: Browser, made: tuple[str, Path],
                                                                           tmp_path: Path) -> None:
    page = open_app(browser, made[0])
    try:
        _go(page, "Store")
        page.get_by_role("tab", name="Knowledge base").click()
        _idle(page)
        before = len(list((made[1] / "kb").iterdir()))
        sidebar = page.locator("[data-testid=stSidebar]")
        chunks = int(re.search(r"(\d+) KB chunks", sidebar.inner_text()).group(1))  # type: ignore[union-attr]
        expect(page.get_by_text(re.compile(rf"^{before} documents"))).to_be_visible()
        doc = tmp_path / "returns-policy.md"
        doc.write_text("# Returns\n\n" + "\n\n".join(f"## Case {i}\n\nItems bought in store {i} may be returned "
                                                       f"within {i + 10} days with the receipt." for i in range(40)),
                       encoding="utf-8")
        zone = page.locator("[data-testid=stFileUploader]").filter(has_text="Add documents")
        expect(zone).to_be_visible()
        _idle(page)
        zone.locator("input[type=file]").set_input_files(str(doc))
        expect(zone.get_by_text(doc.name)).to_be_visible()
        _idle(page)
        page.get_by_role("button", name="Add to knowledge base").click()
        expect(page.get_by_text("Knowledge base saved and in use")).to_be_visible()
        expect(page.get_by_text(re.compile(rf"^{before + 1} documents"))).to_be_visible()  # the new count
        expect(page.get_by_text("returns-policy.md").first).to_be_visible()
        _idle(page)
        now = int(re.search(r"(\d+) KB chunks", sidebar.inner_text()).group(1))  # type: ignore[union-attr]
        assert now > chunks  # the sidebar counts the new document's chunks without a reload
    finally:
        page.context.close()



def test_publish_diff_and_roll_back_a_version(browser: Browser, made: tuple[str, Path]) -> None:
    page = open_app(browser, made[0])
    store = made[1] / "store.yaml"
    try:
        _go(page, "Store")
        page.get_by_role("tab", name="Versions").click()
        _idle(page)
        page.get_by_label("Note").fill("as the demo ships")
        page.get_by_role("button", name="Publish version").click()
        expect(page.get_by_text("Published v1: as the demo ships")).to_be_visible()
        _idle(page)
        page.get_by_role("tab", name="Settings").click()
        _idle(page)
        page.get_by_label("Name", exact=True).fill("Gadget Hub Lab")
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_text("Store settings saved and in use")).to_be_visible()
        assert "name: Gadget Hub Lab" in store.read_text(encoding="utf-8")
        page.get_by_role("tab", name="Versions").click()
        _idle(page)
        expect(page.get_by_text("v1 + edits")).to_be_visible()
        page.get_by_label("Note").fill("lab name")
        page.get_by_role("button", name="Publish version").click()
        expect(page.get_by_text("Published v2: lab name")).to_be_visible()
        _idle(page)
        versions = page.locator(".st-key-version_list")
        expect(versions).to_contain_text("v2")
        page.reload()  # the list and the diff are drawn from disk
        expect(page.get_by_role("heading", name="Store")).to_be_visible(timeout=90_000)
        _idle(page)
        page.get_by_role("tab", name="Versions").click()
        _idle(page)
        expect(page.locator(".st-key-version_diff")).to_contain_text("store.yaml")  # v1 compared with v2 first
        expect(page.locator(".st-key-version_diff")).to_contain_text("+name: Gadget Hub Lab")
        page.locator(".st-key-version_list").scroll_into_view_if_needed()
        _idle(page)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "versions.png"))
        picker = page.locator(".st-key-rollback_to input")
        picker.click()
        picker.fill("v1")
        picker.press("Enter")
        _idle(page)
        page.get_by_role("button", name="Roll back to v1").click()
        expect(page.get_by_text("Roll back to v1 saved and in use")).to_be_visible()
        assert "name: Gadget Hub\n" in store.read_text(encoding="utf-8")
        expect(page.get_by_text("This workspace now: v1", exact=False)).to_be_visible()
    finally:
        page.context.close()


def test_the_new_store_wizard_makes_a_store_with_no_demo_content(browser: Browser, made: tuple[str, Path],
                                                                 tmp_path: Path) -> None:
    page = open_app(browser, made[0])
    try:
        _go(page, "Store")
        page.get_by_role("tab", name="Workspaces").click()
        _idle(page)
        form = page.locator("[data-testid=stForm]").filter(has_text="Starter SOPs")
        form.get_by_label("Name of the new store").fill("Harbour Books")
        form.get_by_label("Currency").fill("EUR")
        form.get_by_label("Greeting").fill("Welcome to Harbour Books!")
        form.get_by_label("Description").fill("A bookshop on the harbour.")
        form.get_by_text(re.compile("^Answer a question")).click()
        form.get_by_text(re.compile("^Request a call back")).click()
        doc = tmp_path / "hours.md"
        doc.write_text("# Opening hours\n\nHarbour Books opens every day from 8:00 to 20:00.\n", encoding="utf-8")
        zone = form.locator("[data-testid=stFileUploader]").filter(has_text="Knowledge-base documents")
        zone.locator("input[type=file]").set_input_files(str(doc))
        expect(zone.get_by_text("hours.md")).to_be_visible()
        _idle(page)
        form.get_by_role("button", name="Create the store and open it").click()
        _idle(page)
        sidebar = page.locator("[data-testid=stSidebar]")
        expect(sidebar).to_contain_text("Harbour Books")
        expect(sidebar).to_contain_text("2 SOPs · 0 items")
        store = made[1].parent / "created" / "harbour-books"
        files = sorted(p.relative_to(store).as_posix() for p in store.rglob("*")
                       if p.is_file() and ".state" not in p.parts)
        assert files == ["gar.csv", "kb/hours.md", "sops/answer_question.sop", "sops/call_back.sop", "store.yaml"]
        assert "Gadget" not in (store / "store.yaml").read_text(encoding="utf-8")
        _go(page, "Chat")
        reply = _say(page, "hello")
        assert "Welcome to Harbour Books! I can help you answer a question or request a call back." in reply, reply
    finally:
        page.context.close()
