"""A save held because it would break a conversation test shows its three ways on with their labels whole at
the playground's normal width (they were cut to "Save a…" and "Accept the ne…" beside the text editor)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.playground.workspaces import copy_workspace
from tests.ui.browser import SHOTS, need_chromium, open_app, serve
from tests.ui.test_e2e import _go, _idle, _plain_editor

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)
TEST = """name: mouse budget
workspace: ..
turns:
  - user: Recommend a gaming mouse
    expect: {actions: [ask user for budget], reply_contains: [budget], reply_not_contains: [No problem]}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app on a copy of the demo workspace with one conversation test that passes."""
    base = tmp_path_factory.mktemp("held")
    ws = base / "ws"
    ws.mkdir()
    copy_workspace(ROOT, ws)
    (ws / "conversations").mkdir(exist_ok=True)
    (ws / "conversations" / "mouse_budget.yaml").write_text(TEST, encoding="utf-8")
    with serve(ws, base) as url:
        yield url, ws


@pytest.mark.parametrize("width", [1440, 1280])
def test_the_held_save_buttons_show_their_labels_whole(browser: Browser, server: tuple[str, Path],
                                                       width: int) -> None:
    page = open_app(browser, server[0], width, 1000)
    try:
        _go(page, "SOP studio")
        page.get_by_text("recommend_item.sop", exact=True).click()
        _idle(page)
        _plain_editor(page)
        area = page.get_by_label("sops/recommend_item.sop", exact=True)
        expect(area).to_have_value(re.compile("ask user for"))
        area.fill(area.input_value().replace("---\nask user for", "---\nsay goodbye politely\nask user for", 1))
        area.press("Control+Enter")
        _idle(page)
        page.get_by_role("button", name=re.compile("Save$")).click()
        expect(page.get_by_text(re.compile("would break .* conversation test"))).to_be_visible()
        for name in ("Save anyway", "Accept the new replies", "Keep editing"):
            button = page.get_by_role("button", name=name, exact=True)
            expect(button).to_be_visible()
            label = button.locator("p").first
            whole = label.evaluate("p => p.scrollWidth <= p.clientWidth + 1")
            assert whole, f"the label of {name!r} is cut off at {width} px"
            box, text = button.bounding_box(), label.bounding_box()
            assert box is not None and text is not None and text["x"] + text["width"] <= box["x"] + box["width"]
        if width == 1440:  # the README's picture of a held save
            page.get_by_role("button", name="Keep editing", exact=True).scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "held_save.png"))
        page.get_by_role("button", name="Keep editing", exact=True).click()
        _idle(page)
        page.get_by_role("button", name=re.compile("Discard draft")).click()
        page.get_by_role("button", name="Discard", exact=True).click()
        _idle(page)
    finally:
        page.context.close()
