"""The real app in headless Chromium (Debian's chromium driven by Playwright; no browser download).

Starts ``streamlit run app.py`` on a copy of the demo workspace and clicks through it like a user:
T1 typed into the chat, an SOP edited and saved then used by the chat, an outdoor inventory uploaded
and mapped then recommended from, bad uploads refused. Screenshots go to ``docs/_shots/``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.playground.conftest import snapshot
from tests.ui.browser import SHOTS, need_chromium, open_app, serve

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)  # Playwright's default of 5 s fails on a loaded machine; a rerun may take longer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("e2e")
    ws = base / "ws"
    ws.mkdir()
    for part in ("store.yaml", "gar.csv", "inventory.csv", "kb", "sops", "data"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, ws / part)
    (ws / "conversations").mkdir()
    for name in ("t1_sales_dependency.yaml", "t2_support_dependency.yaml", "t3_interleaving.yaml"):
        text = (ROOT / "tests" / "conversations" / name).read_text(encoding="utf-8")
        (ws / "conversations" / name).write_text(text.replace("workspace: ../..\n", ""), encoding="utf-8")
    with serve(ws, base) as url:
        yield url, ws


@pytest.fixture()
def page(browser: Browser, server: tuple[str, Path]) -> Iterator[Page]:
    pg = open_app(browser, server[0], 1440, 1000)
    yield pg
    pg.context.close()


def _idle(page: Page) -> None:
    """Wait until the app has finished the rerun a click or message started."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(200)


def _say(page: Page, text: str) -> str:
    box = page.get_by_placeholder("Message the agent")
    count = page.locator("[data-testid=stChatMessage]").count()
    box.fill(text)
    box.press("Enter")
    expect(page.locator("[data-testid=stChatMessage]")).to_have_count(count + 2)
    _idle(page)
    return page.locator("[data-testid=stChatMessage]").last.inner_text()


def _new_chat(page: Page, *messages: str) -> str:
    """Open the chat, start a new session, send the messages; the last reply."""
    _go(page, "Chat")
    page.get_by_role("button", name=re.compile("New session")).click()
    _idle(page)
    return [_say(page, m) for m in messages][-1]


def _go(page: Page, title: str) -> None:
    page.locator("[data-testid=stSidebarNav]").get_by_text(title, exact=True).click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    _idle(page)


def _plain_editor(page: Page) -> None:
    """Switch the SOP studio to its plain text editor (a text area Playwright fills in one step)."""
    toggle = page.get_by_role("switch", name="Plain text editor")
    if not toggle.is_checked():
        page.get_by_text("Plain text editor").click()
        _idle(page)
    expect(toggle).to_be_checked()


def _upload(page: Page, path: Path) -> None:
    """Give the page's first file uploader a file, once the uploader is ready to take it (setting the input
    while the page is still drawing it can be lost), and wait until the app has it."""
    zone = page.locator("[data-testid=stFileUploader]").first
    expect(zone.get_by_role("button", name=re.compile("Upload|Add files"))).to_be_visible()
    _idle(page)
    zone.locator("input[type=file]").set_input_files(str(path))
    expect(zone.get_by_text(path.name)).to_be_visible()
    _idle(page)


def _shot(page: Page, name: str, *, full: bool = False) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def test_t1_typed_into_the_chat(page: Page) -> None:
    assert "budget" in _say(page, "Recommend a gaming mouse.").lower()
    reply = _say(page, "1500")
    assert "฿" in reply and "choose one" in reply.lower()
    expect(page.locator(".st-key-flow_graph")).to_contain_text("ask user to choose one of the recommended items")
    page.get_by_text("Trace of turn 2").click()
    expect(page.get_by_text("Tool calls", exact=True)).to_be_visible()
    expect(page.locator("code", has_text="inventory.query").last).to_be_visible()
    _idle(page)
    _shot(page, "chat")
    panel = page.locator(".st-key-goal_panel")  # the panel beside the chat (the phone layout folds its own copy)
    panel.get_by_text("Engine view: goal, slots, stack").click()
    expect(panel.locator("p", has_text="Active goal").locator("code", has_text="sales.recommend_item")).to_be_visible()


def test_sop_edited_saved_then_used_by_the_chat(page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    _go(page, "SOP studio")
    page.get_by_text("recommend_item.sop", exact=True).click()
    _idle(page)
    _plain_editor(page)
    area = page.get_by_label("sops/recommend_item.sop", exact=True)
    source = (ws / "sops" / "recommend_item.sop").read_text()
    area.fill(source.replace("    tell user nothing matched\n", "    say goodbye politely\n"))
    area.press("Control+Enter")
    _idle(page)
    expect(page.get_by_text("Compiles: no errors.").first).to_be_visible()  # a rerun may briefly show it twice
    page.get_by_role("button", name=re.compile("Save$")).click()
    expect(page.get_by_text("saved and in use")).to_be_visible()
    assert "say goodbye politely\n    terminate" in (ws / "sops" / "recommend_item.sop").read_text()
    _idle(page)
    page.get_by_text("Plain text editor").click()  # back to the highlighting editor for the screenshot
    expect(page.frame_locator("iframe[title*=ace]").first.locator(".ace_content")).to_contain_text("say goodbye")
    _idle(page)
    _shot(page, "studio")
    assert "other options" in _new_chat(page, "Recommend a gaming mouse", "100")


def test_inspector_tests_page_and_workspace_switch(page: Page) -> None:
    _say(page, "Recommend a gaming mouse")
    _say(page, "My laptop battery drains fast, how do I fix it?")
    _go(page, "Inspector")
    expect(page.locator("td", has_text="support.troubleshoot")).not_to_have_count(0)
    _shot(page, "inspector")
    _go(page, "Test runs")
    page.get_by_role("button", name=re.compile("Run tests")).click()
    expect(page.get_by_text("3 of 3 files passed")).to_be_visible()
    _idle(page)
    _shot(page, "tests")
    page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").first.click()
    page.get_by_role("option", name=re.compile("Trailhead Outfitters")).click()
    _idle(page)
    expect(page.locator("[data-testid=stSidebar]").get_by_text("Trailhead Outfitters").first).to_be_visible()


def test_bad_uploads_are_refused_in_the_browser(page: Page, server: tuple[str, Path], tmp_path: Path) -> None:
    ws = server[1]
    before = snapshot(ws)
    _go(page, "Store")
    binary = tmp_path / "inventory.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    _upload(page, binary)
    expect(page.get_by_text("looks binary")).to_be_visible()
    no_price = tmp_path / "noprice.csv"
    no_price.write_text("sku,name\nA,Tent\n", encoding="utf-8")
    _upload(page, no_price)
    expect(page.get_by_text("Map columns to roles")).to_be_visible()
    _idle(page)
    page.get_by_role("button", name=re.compile("Apply inventory")).click()
    expect(page.get_by_text("the required role 'price' is not mapped")).to_be_visible()
    assert snapshot(ws) == before


def test_outdoor_inventory_uploaded_mapped_then_recommended_from(page: Page, server: tuple[str, Path]) -> None:
    _go(page, "Store")
    _upload(page, ROOT / "examples" / "outdoor" / "inventory.csv")
    expect(page.get_by_text("Map columns to roles")).to_be_visible()
    _idle(page)
    page.get_by_role("button", name=re.compile("Apply inventory")).click()
    expect(page.get_by_text("Inventory saved and in use")).to_be_visible()
    _idle(page)
    _shot(page, "store")
    assert "Coleman Sundome 2-Person Tent" in _new_chat(page, "Recommend a tent", "under 6000")


def test_a_reload_keeps_the_chat_and_a_created_workspace_stays_open(page: Page, server: tuple[str, Path]) -> None:
    _new_chat(page, "Hello there")
    assert "session=" in page.url and "ws=" in page.url
    page.reload()
    expect(page.get_by_role("heading", name="Chat")).to_be_visible(timeout=90_000)
    _idle(page)
    expect(page.locator("[data-testid=stChatMessage]").first).to_contain_text("Hello there")
    _go(page, "Store")
    page.get_by_role("tab", name="Workspaces").click()
    page.get_by_label("Store name").fill("Peak Gear")
    page.get_by_label("Store name").press("Enter")
    _idle(page)
    page.get_by_role("button", name=re.compile("Create and open")).click()
    _idle(page)
    picker = page.locator("[data-testid=stSidebar]").get_by_role("combobox", name="Workspace")
    expect(picker).to_have_value(re.compile("^Peak Gear"))
    _go(page, "Chat")  # the next click must not switch back to the store that was open before
    expect(picker).to_have_value(re.compile("^Peak Gear"))
    expect(page.get_by_text(re.compile("workspace Peak Gear"))).to_be_visible()
    assert "ws=" in page.url and "peak-gear" in page.url
    demo = snapshot(server[1])
    _go(page, "Store")  # an upload now goes to the new store, never to the one open before
    _upload(page, ROOT / "examples" / "outdoor" / "inventory.csv")
    expect(page.get_by_text("Map columns to roles")).to_be_visible()
    _idle(page)
    page.get_by_role("button", name=re.compile("Apply inventory")).click()
    expect(page.get_by_text("Inventory saved and in use")).to_be_visible()
    created = next((server[1].parent / "created").glob("peak-gear*"))
    assert "Coleman Sundome" in (created / "inventory.csv").read_text(encoding="utf-8")
    assert snapshot(server[1]) == demo


def test_the_goal_panel_stays_in_view_as_the_chat_grows(page: Page) -> None:
    _new_chat(page, "Recommend a gaming mouse.", "What is your return policy?", "And the warranty?",
              "Do you ship abroad?", "How long is delivery?")
    page.mouse.wheel(0, 20_000)  # to the newest message
    _idle(page)
    panel = page.locator(".st-key-goal_panel")
    expect(panel).to_contain_text("Find a product")
    expect(panel).to_be_in_viewport()


def test_the_app_asks_nothing_of_the_internet(browser: Browser, server: tuple[str, Path]) -> None:
    """Offline by default: every request of the first page and of the studio's code editor (icon, fonts and
    scripts included) goes to the app itself."""
    ctx = browser.new_context()
    pg = ctx.new_page()
    asked: list[str] = []
    pg.on("request", lambda r: asked.append(r.url))
    pg.goto(server[0])
    expect(pg.get_by_role("heading", name="Chat")).to_be_visible(timeout=90_000)
    _idle(pg)
    _go(pg, "SOP studio")  # the code editor too: its scripts, styles and fonts come with the app
    expect(pg.frame_locator("iframe[title*=ace]").first.locator(".ace_content")).to_be_visible()
    _idle(pg)
    outside = [u for u in asked if not u.startswith((server[0].rstrip("/"), "data:", "blob:"))]
    ctx.close()
    assert asked and outside == []


def test_a_reply_opens_its_turn_in_the_inspector(page: Page) -> None:
    _new_chat(page, "Recommend a gaming mouse.", "1500")
    page.get_by_role("link", name="Why this reply? Open turn 2 in the Inspector").click()
    expect(page.get_by_role("heading", name="Inspector")).to_be_visible()
    _idle(page)
    expect(page.get_by_role("heading", name="Turn 2")).to_be_visible()
    assert "turn=2" in page.url and "session=" in page.url


def _grid_cell(page: Page, row: int, x_offset: float) -> tuple[float, float]:
    """Where a cell of the first data editor is drawn (rows 35 px high under a 35 px header)."""
    box = page.locator("[data-testid=stDataFrame]").first.bounding_box()
    assert box is not None
    return box["x"] + x_offset, box["y"] + 35 + 35 * row + 17


def test_an_sop_edit_survives_a_gar_save_and_a_page_switch(page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    _go(page, "SOP studio")
    page.get_by_text("recommend_item.sop", exact=True).click()
    _idle(page)
    _plain_editor(page)
    area = page.get_by_label("sops/recommend_item.sop", exact=True)
    source = (ws / "sops" / "recommend_item.sop").read_text()
    edited = source.replace("title: Find a product\n", "title: Find a product for you\n")
    area.fill(edited)
    area.press("Control+Enter")
    _idle(page)
    page.get_by_role("tab", name="Global Action Repository").click()
    _idle(page)
    row = next(i for i, line in enumerate((ws / "gar.csv").read_text().splitlines()[1:])
               if line.startswith("say goodbye politely,"))
    page.mouse.dblclick(*_grid_cell(page, row, 600))  # the user_interaction_metadata column
    cell = page.locator("textarea.gdg-input")  # the grid's cell editor
    expect(cell).to_be_visible()
    cell.fill("No problem. Come back any time.")
    cell.press("Enter")
    _idle(page)
    page.get_by_role("button", name=re.compile("Save GAR")).click()
    expect(page.get_by_text("gar.csv saved and in use")).to_be_visible()
    assert "say goodbye politely,message_to_user,No problem. Come back any time." in (ws / "gar.csv").read_text()
    page.get_by_role("tab", name="SOPs").click()
    expect(page.get_by_label("sops/recommend_item.sop", exact=True)).to_have_value(edited)
    _go(page, "Chat")  # leave the page: the edit is kept as a draft and the sidebar says so
    expect(page.get_by_text("Unsaved drafts")).to_be_visible()
    _go(page, "SOP studio")
    expect(page.get_by_label("sops/recommend_item.sop", exact=True)).to_have_value(edited)
    expect(page.get_by_text("Unsaved draft: kept if you leave this page")).to_be_visible()
    page.get_by_role("button", name=re.compile("Save$")).click()
    expect(page.get_by_text("sops/recommend_item.sop saved and in use")).to_be_visible()
    assert (ws / "sops" / "recommend_item.sop").read_text() == edited


def test_a_chat_saved_as_a_test_runs_green_and_a_breaking_save_shows_the_break(
        page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    # replies and messages with brackets, colons, quotes and question marks ("…budget? (a budget, e.g. 1500)")
    _new_chat(page, 'Recommend a gaming mouse: a "light" one [for travel]?', "1500")
    sidebar = page.locator("[data-testid=stSidebar]")
    sidebar.get_by_role("button", name=re.compile("Save chat as test")).click()
    page.get_by_label("Test name").fill("browser mouse")
    page.get_by_label("Test name").press("Enter")
    _idle(page)
    page.get_by_role("button", name=re.compile("Save as test")).click()
    expect(page.get_by_text("it passes.")).to_be_visible()
    saved = yaml.safe_load((ws / "conversations" / "browser_mouse.yaml").read_text(encoding="utf-8"))
    assert saved["turns"][0]["user"] == 'Recommend a gaming mouse: a "light" one [for travel]?'
    assert any("? (" in phrase for phrase in saved["turns"][0]["expect"]["reply_contains"])
    page.keyboard.press("Escape")
    _go(page, "Test runs")
    page.get_by_role("button", name=re.compile("Run tests")).click()
    expect(page.get_by_text(re.compile(r"^\d+ of \d+ files passed$"))).to_be_visible()
    # earlier tests changed this store's inventory; the new test, written from today's chat, passes
    expect(page.get_by_role("heading", name=re.compile("browser_mouse"))).to_have_count(0)
    _go(page, "SOP studio")
    page.get_by_text("recommend_item.sop", exact=True).click()
    _idle(page)
    _plain_editor(page)
    before = snapshot(ws)
    area = page.get_by_label("sops/recommend_item.sop", exact=True)
    expect(area).to_have_value(re.compile("ask user for"))  # drawn with the SOP before it is read
    area.fill(area.input_value().replace("---\nask user for", "---\nsay goodbye politely\nask user for", 1))
    area.press("Control+Enter")
    _idle(page)
    page.get_by_role("button", name=re.compile("Save$")).click()
    expect(page.get_by_text(re.compile("would break .* conversation test"))).to_be_visible()
    expect(page.get_by_text("browser_mouse.yaml: browser mouse")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("Accept the new replies"))).to_be_visible()
    assert snapshot(ws) == before
    _shot(page, "held_save")
    page.get_by_role("button", name=re.compile("Discard draft")).click()
    page.get_by_role("button", name="Discard", exact=True).click()
    _idle(page)
    expect(page.get_by_text("Saved; the next chat turn uses this version.").first).to_be_visible()


def test_the_highlighting_editor_marks_lint_errors_at_their_line(page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    _go(page, "SOP studio")
    page.get_by_text("troubleshoot.sop", exact=True).click()
    _idle(page)
    toggle = page.get_by_role("switch", name="Plain text editor")
    if toggle.is_checked():
        page.get_by_text("Plain text editor").click()
        _idle(page)
    editor = page.frame_locator("iframe[title*=ace]").first
    expect(editor.locator(".ace_content")).to_contain_text("ask user for device model")
    expect(editor.locator(".ace_gutter-cell.ace_error")).to_have_count(0)
    content = editor.locator(".ace_editor:not(.ace_autocomplete) .ace_content").first
    for _ in range(3):  # a busy machine may draw the editor before it takes keys: type until the text is in it
        content.click()
        page.keyboard.press("Control+End")
        page.keyboard.press("Enter")
        page.keyboard.type("tell user a joke")
        try:
            expect(content).to_contain_text("tell user a joke", timeout=5_000)
            break
        except AssertionError:
            continue
    expect(content).to_contain_text("tell user a joke")
    page.keyboard.press("Escape")  # close the word-completion list, which would take the next key
    page.keyboard.press("Control+Enter")
    _idle(page)
    error = page.get_by_text(re.compile("unknown action 'tell user a joke'")).first
    expect(error).to_be_visible()
    line = re.search(r"troubleshoot\.sop:(\d+)", error.inner_text())
    assert line is not None
    expect(editor.locator(".ace_gutter-cell.ace_error")).to_have_count(1)  # the margin marks that line
    expect(editor.locator(".ace_gutter-cell.ace_error")).to_have_text(line.group(1))
    assert "tell user a joke" not in (ws / "sops" / "troubleshoot.sop").read_text()  # a draft until saved
    _shot(page, "studio_editor")
    page.get_by_role("button", name=re.compile("Discard draft")).click()
    page.get_by_role("button", name="Discard", exact=True).click()
    _idle(page)


def test_a_chat_replayed_against_an_unsaved_sop_draft(page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    assert "category" in _new_chat(page, "Recommend something nice").lower()
    _go(page, "SOP studio")
    page.get_by_text("recommend_item.sop", exact=True).click()
    _idle(page)
    _plain_editor(page)
    area = page.get_by_label("sops/recommend_item.sop", exact=True)
    saved = (ws / "sops" / "recommend_item.sop").read_text()
    area.fill(saved.replace("ask user for product category\n", ""))
    area.press("Control+Enter")
    _idle(page)
    page.get_by_role("tab", name="Replay a conversation").click()
    _idle(page)
    page.get_by_role("button", name=re.compile("^.*Replay$")).click()
    expect(page.get_by_text("1 of 1 turn(s) change (as saved → with the drafts of sops/recommend_item.sop)")) \
        .to_be_visible(timeout=120_000)
    panel = page.locator("[data-testid=stExpander]", has_text="changed: reply")
    expect(panel.get_by_text("ask user for product category", exact=True)).to_be_visible()
    _idle(page)
    _shot(page, "replay", full=True)
    assert (ws / "sops" / "recommend_item.sop").read_text() == saved  # nothing saved
    (ws / ".state" / "drafts" / "sops" / "recommend_item.sop").unlink()  # later tests start without the draft


def test_test_runs_show_step_coverage_and_an_unreadable_file(page: Page, server: tuple[str, Path]) -> None:
    bad = server[1] / "conversations" / "typo.yaml"
    bad.write_text("name: typo\nturns:\n  - user: hi\n    expct: {ended: true}\n", encoding="utf-8")
    try:
        _go(page, "Test runs")
        page.get_by_role("button", name=re.compile("Run tests")).click()
        # earlier tests of this module change the store (its inventory) and save chats as tests, so only the
        # unreadable file is sure to fail
        files = len(list((server[1] / "conversations").glob("*.yaml")))
        expect(page.get_by_text(re.compile(rf"^\d+ of {files} files passed$"))).to_be_visible(timeout=120_000)
        assert not page.get_by_text(f"{files} of {files} files passed", exact=True).is_visible()
        _idle(page)
        # the message shows as a paragraph; the results table may mirror it in an accessible grid cell too
        expect(page.get_by_role("paragraph").filter(
            has_text="line 4, column 5: unknown key 'expct' in turn 1 (did you mean 'expect'?)")).to_be_visible()
        unreached = page.locator(".st-key-coverage_unreached")
        expect(unreached).to_contain_text("Steps no test reaches")
        expect(unreached).to_contain_text("tell user no fix was found")  # troubleshooting's other branch
        expect(unreached).to_contain_text("sops/troubleshoot.sop:")
        steps = page.locator(".st-key-coverage_graph g.node")  # the SOP least covered is drawn first
        expect(steps.locator(f"[fill='{UNREACHED}']").first).to_be_visible()
        box = page.locator(".st-key-coverage_sop").get_by_role("combobox")
        box.click()
        box.press("ArrowDown")  # opens the list
        page.locator("[role=option]", has_text="sales.recommend_item").click()
        _idle(page)
        category = steps.filter(has_text="ask user for product category")  # t1, t3 and any saved chat start here
        expect(category).to_contain_text(re.compile(r"[2-9] tests"))
        expect(category.locator(f"[fill='{DEEPEST_GREEN}']")).to_have_count(1)  # as many as any step has
        expect(steps.filter(has_text="no test").locator(f"[fill='{UNREACHED}']").first).to_be_visible()
        _shot(page, "coverage", full=True)
    finally:
        bad.unlink()


UNREACHED, DEEPEST_GREEN = "#f8d0d0", "#2d6a4f"
