"""The canvas's procedure settings and trigger trial box in headless Chromium, on a copy of the demo workspace.

A text SOP's triggers are added and removed and its agent changed on the canvas; the save offers to let the new
agent call the procedure's tool, and once confirmed writes both files in one save. A trial sentence names the
procedure it would start, with every procedure's score. A GAR save shows in the canvas's pickers at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from core.playground.workspaces import copy_workspace
from tests.ui.browser import need_chromium, open_app, serve
from tests.ui.test_e2e import _grid_cell

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app on a copy of the demo workspace."""
    base = tmp_path_factory.mktemp("settings")
    ws = base / "ws"
    ws.mkdir()
    copy_workspace(ROOT, ws)
    with serve(ws, base) as url:
        yield url, ws


@pytest.fixture()
def page(browser: Browser, server: tuple[str, Path]) -> Iterator[Page]:
    pg = open_app(browser, server[0], 1500, 1100)
    yield pg
    pg.context.close()


def _idle(page: Page) -> None:
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(300)


def _open(page: Page, sop: str) -> None:
    page.locator("[data-testid=stSidebarNav]").get_by_text("SOP studio", exact=True).click()
    _idle(page)
    page.get_by_text(sop, exact=True).click()
    _idle(page)
    page.get_by_role("radio", name="Canvas", exact=True).click()
    _idle(page)


def test_settings_changed_on_the_canvas_save_the_sop_and_the_agent_s_tools_once_confirmed(
        page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    _open(page, "troubleshoot.sop")
    page.get_by_text(re.compile(r"^Procedure settings")).click()
    _idle(page)
    add = page.get_by_role("textbox", name="Add a trigger")
    add.fill("my printer keeps jamming")
    page.get_by_role("button", name="Add trigger").click()
    _idle(page)
    expect(page.get_by_text("“my printer keeps jamming”")).to_be_visible()
    row = page.get_by_test_id("stHorizontalBlock").filter(has_text="“my screen is frozen”").last
    row.get_by_role("button", name="Remove").click()
    _idle(page)
    expect(page.get_by_text("“my screen is frozen”")).to_have_count(0)
    page.get_by_role("combobox", name="Agent").click()
    page.get_by_role("option", name="sales", exact=True).click()
    _idle(page)
    page.get_by_role("button", name="Apply settings").click()
    _idle(page)
    expect(page.get_by_text("may not call 'knowledge_base.search'").first).to_be_visible()
    offer = page.get_by_text(re.compile(r"Let the agent sales call knowledge_base.search .* when saving"))
    expect(offer).to_be_visible()
    assert "agent: support" in (ws / "sops" / "troubleshoot.sop").read_text(encoding="utf-8")  # a draft so far
    offer.click()
    _idle(page)
    expect(page.get_by_text("may not call 'knowledge_base.search'")).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    _idle(page)
    expect(page.get_by_text("sops/troubleshoot.sop saved and in use.")).to_be_visible()
    saved = (ws / "sops" / "troubleshoot.sop").read_text(encoding="utf-8")
    assert "agent: sales" in saved and "  - my printer keeps jamming" in saved
    assert "my screen is frozen" not in saved
    tools = yaml.safe_load((ws / "store.yaml").read_text(encoding="utf-8"))["agents"]["sales"]["tools"]
    assert "knowledge_base.search" in tools


def test_the_trial_box_names_the_procedure_a_sentence_starts_with_the_scores(page: Page) -> None:
    _open(page, "order_status.json")
    page.get_by_text("Try a sentence", exact=True).click()
    _idle(page)
    box = page.get_by_role("textbox", name="A customer's first message: which procedure would it start?")
    box.fill("where is my parcel, it has not arrived")
    box.press("Enter")
    _idle(page)
    trial = page.locator(".st-key-trigger_trial")
    expect(trial.get_by_text(re.compile(r"Starts this procedure, Check an order, score 0\.\d\d"))).to_be_visible()
    listed = trial.locator("li").all_inner_texts()
    assert listed[0].startswith("Check an order support.order_status")
    scores = [float(re.search(r"(-?\d\.\d\d)$", t).group(1)) for t in listed]  # type: ignore[union-attr]
    assert scores == sorted(scores, reverse=True) and len(scores) == 3
    box.fill("which gaming mouse should I buy")
    box.press("Enter")
    _idle(page)
    expect(trial.get_by_text(re.compile(r"Starts Find a product \(sales.recommend_item\), score"))).to_be_visible()
    box.fill("the moon is made of cheese")
    box.press("Enter")
    _idle(page)
    expect(trial.get_by_text(re.compile(r"Starts no procedure"))).to_be_visible()


def test_the_canvas_pickers_show_a_gar_save_without_a_reload(page: Page, server: tuple[str, Path]) -> None:
    ws = server[1]
    _open(page, "recommend_item.sop")
    page.get_by_role("radio", name="Message", exact=True).click()
    _idle(page)
    said = page.get_by_text(re.compile(r"^says: Recommend the best 1-3 matching items"))
    expect(said).to_be_visible()  # the first message action of the GAR, as the picker shows it
    page.get_by_role("tab", name="Global Action Repository").click()
    _idle(page)
    row = next(i for i, line in enumerate((ws / "gar.csv").read_text().splitlines()[1:])
               if line.startswith("recommend items to user,"))
    page.mouse.dblclick(*_grid_cell(page, row, 600))  # the user_interaction_metadata column
    cell = page.locator("textarea.gdg-input")
    expect(cell).to_be_visible()
    cell.fill("Recommend up to three items that match.")
    cell.press("Enter")
    _idle(page)
    page.get_by_role("button", name=re.compile("Save GAR")).click()
    expect(page.get_by_text("gar.csv saved and in use")).to_be_visible()
    page.get_by_role("tab", name="SOPs").click()
    _idle(page)
    expect(page.get_by_role("radio", name="Canvas", exact=True)).to_be_checked()
    expect(page.get_by_text("says: Recommend up to three items that match.")).to_be_visible()  # the palette as left
    expect(said).to_have_count(0)
