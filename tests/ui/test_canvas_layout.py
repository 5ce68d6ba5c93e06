"""The canvas's drawing in headless Chromium: on every SOP of the demo and of every example workspace, laid out
in layers by the flow component (sized to each step as it is shown), no two steps overlap."""

from __future__ import annotations

import itertools
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.sop.canvas.drawing import open_canvas
from core.workspace.files import load_workspace_files
from core.workspace.gar import GarIndex
from tests.ui.browser import need_chromium, serve

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)
FLOW = "iframe[title='streamlit_flow.streamlit_flow']"
WORKSPACES = {"demo": ROOT} | {p.name: p for p in sorted((ROOT / "examples").iterdir()) if (p / "store.yaml").is_file()}
Box = tuple[float, float, float, float]


@pytest.fixture(scope="module")
def every_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Path]]]:
    """The app with a copy of the demo and of every example workspace among the workspaces it can open."""
    base = tmp_path_factory.mktemp("layout")
    copies = {name: base / "created" / name for name in WORKSPACES}
    for name, src in WORKSPACES.items():
        copies[name].mkdir(parents=True)
        copy_workspace(src, copies[name])
    with serve(copies["demo"], base) as url:
        yield url, copies


def _idle(page: Page) -> None:
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(300)


def _boxes(page: Page, count: int) -> list[Box]:
    """The steps' boxes on screen once the layout has placed them (the same twice in a row)."""
    nodes = page.frame_locator(FLOW).locator(".react-flow__node")
    expect(nodes).to_have_count(count)
    last: list[Box] = []
    for _ in range(20):
        page.wait_for_timeout(300)
        now = [tuple(b) for b in nodes.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })")]
        if now == last:
            return now  # type: ignore[return-value]
        last = now  # type: ignore[assignment]
    return last


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] - 0.5 and b[0] < a[0] + a[2] - 0.5 and a[1] < b[1] + b[3] - 0.5 \
        and b[1] < a[1] + a[3] - 0.5


@pytest.mark.parametrize("name", list(WORKSPACES))
def test_no_two_steps_overlap_on_any_sop_of_a_workspace(name: str, browser: Browser,
                                                         every_example: tuple[str, dict[str, Path]],
                                                         embedder: CachedEmbedder) -> None:
    url, copies = every_example
    ws = copies[name]
    files = load_workspace_files(ws)
    page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/?ws={urllib.parse.quote(str(ws.resolve()))}")
        expect(page.get_by_role("heading", name="Chat")).to_be_visible(timeout=90_000)
        page.locator("[data-testid=stSidebarNav]").get_by_text("SOP studio", exact=True).click()
        _idle(page)
        page.get_by_role("radio", name="Canvas", exact=True).click()
        _idle(page)
        overlaps: list[str] = []
        for path in files.sop_files():
            canvas = open_canvas(path.read_bytes().decode("utf-8"), "json" if path.suffix == ".json" else "text",
                                 f"sops/{path.name}", GarIndex(files.gar, embedder))
            listed = page.get_by_role("radiogroup", name="SOP files")
            for _attempt in range(3):  # a click landing while the page reruns is dropped: click again
                listed.get_by_text(path.name, exact=True).click()
                _idle(page)
                try:
                    expect(listed.get_by_role("radio", name=path.name)).to_be_checked(timeout=15_000)
                    break
                except AssertionError:
                    continue
            boxes = _boxes(page, len(canvas.nodes))
            assert all(b[2] > 0 and b[3] > 0 for b in boxes)
            ids = list(canvas.nodes)
            overlaps += [f"{path.name}: {ids[i]} and {ids[j]}" for (i, a), (j, b)
                         in itertools.combinations(enumerate(boxes), 2) if _overlap(a, b)]
        assert not overlaps, overlaps
        assert re.search(r"\?ws=", page.url)
    finally:
        page.context.close()
