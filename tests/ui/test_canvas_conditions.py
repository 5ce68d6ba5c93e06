"""The canvas's condition builder in headless Chromium: the values it offers to compare a slot with follow the
slot's kind (true or false for a yes/no slot, the options of a choice), and the condition it writes compares with
them as the engine holds them (``refund_confirmed == true``, not ``'yes'``)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.browser import need_chromium, open_app, serve

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a copy of the retail example."""
    base = tmp_path_factory.mktemp("conditions")
    ws = base / "ws"
    shutil.copytree(ROOT / "examples" / "retail_care", ws, ignore=shutil.ignore_patterns(".state", "conversations"))
    with serve(ws, base) as url:
        yield url


@pytest.fixture()
def page(browser: Browser, server: str) -> Iterator[Page]:
    pg = open_app(browser, server, 1500, 1100)
    yield pg
    pg.context.close()


def _idle(page: Page) -> None:
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(300)


def _offered(page: Page, slot: str) -> list[str]:
    """Pick ``slot`` as the value in the builder; the values its 'Compare with' box then lists."""
    value = page.get_by_role("combobox", name="Value").last
    value.fill(slot)
    value.press("Enter")
    _idle(page)
    page.get_by_role("combobox", name="Compare with").last.click()
    options = page.get_by_role("option")
    expect(options.first).to_be_visible()
    return [t.strip() for t in options.all_inner_texts()]


def test_the_builder_offers_true_or_false_for_a_yes_no_slot_and_a_choice_s_options(page: Page) -> None:
    page.locator("[data-testid=stSidebarNav]").get_by_text("SOP studio", exact=True).click()
    _idle(page)
    page.get_by_text("refund.sop", exact=True).click()
    _idle(page)
    page.get_by_role("radio", name="Canvas", exact=True).click()
    _idle(page)
    page.get_by_role("radio", name="Decision", exact=True).click()  # a decision after the selected first step
    _idle(page)
    page.get_by_role("button", name="Build a condition").first.click()
    expect(page.get_by_role("combobox", name="Value").last).to_be_visible()

    assert _offered(page, "refund_confirmed") == ["true", "false"]
    page.get_by_role("option", name="true", exact=True).click()
    _idle(page)
    expect(page.get_by_text(re.compile(r"refund_confirmed\s+is yes_no"))).to_be_visible()
    page.get_by_role("button", name="Use this condition").click()
    _idle(page)
    expect(page.get_by_role("textbox", name="Condition", exact=True).last).to_have_value("refund_confirmed == true")

    if not page.get_by_role("combobox", name="Value").last.is_visible():  # the builder stays open after a use
        page.get_by_role("button", name="Build a condition").first.click()
    assert _offered(page, "return_method") == ["drop off at a store", "courier pickup"]
    page.get_by_role("option", name="courier pickup", exact=True).click()
    _idle(page)
    page.get_by_role("button", name="Use this condition").click()
    _idle(page)
    expect(page.get_by_role("textbox", name="Condition", exact=True).last).to_have_value(
        "return_method == 'courier pickup'")
