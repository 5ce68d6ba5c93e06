"""The playground's trust notice in a real browser (Debian's Chromium): a copied workspace opens with its
programs held and a notice in the sidebar; "Trust this workspace" runs them and the notice goes."""

from __future__ import annotations

from pathlib import Path

from tests.tools.test_workspace_trust import _copied_desk, _ran
from tests.ui.browser import need_chromium, open_app, serve

need_chromium()

from playwright.sync_api import Browser, expect  # noqa: E402


def test_the_sidebar_button_trusts_the_workspace_and_its_tools_run(browser: Browser, tmp_path: Path) -> None:
    ws = _copied_desk(tmp_path)
    with serve(ws, tmp_path) as url:
        page = open_app(browser, url)
        try:
            sidebar = page.locator("[data-testid=stSidebar]")
            expect(sidebar.get_by_text("This workspace is not trusted")).to_be_visible()
            assert _ran(ws) == set()
            sidebar.get_by_role("button", name="Trust this workspace").click()
            expect(sidebar.get_by_text("This workspace is not trusted")).to_have_count(0, timeout=60_000)
            expect(sidebar.get_by_role("button", name="Trust this workspace")).to_have_count(0)
            assert "python_ran" in _ran(ws)
        finally:
            page.context.close()
