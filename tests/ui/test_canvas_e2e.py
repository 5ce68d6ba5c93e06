"""The SOP studio's canvas in headless Chromium (Debian's chromium driven by Playwright; no browser download).

A returns procedure is built on the canvas alone in a copy of the retail example (ask the order number, look it
up, branch on delivered, confirm, open the return, end), saved, and run in the chat; every click and typed field
is counted. An example SOP opened on the canvas, its steps selected, an arrow drawn again and a step applied
unchanged, stays byte for byte what it was.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.browser import SHOTS, need_chromium, open_app, serve

ROOT = Path(__file__).resolve().parents[2]
need_chromium()  # without Chromium the module is skipped

from playwright.sync_api import Browser, FrameLocator, Locator, Page, expect  # noqa: E402

expect.set_options(timeout=45_000)
FLOW = "iframe[title='streamlit_flow.streamlit_flow']"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app on a copy of the retail example without its own returns SOP and conversation tests."""
    base = tmp_path_factory.mktemp("canvas")
    ws = base / "ws"
    shutil.copytree(ROOT / "examples" / "retail_care", ws, ignore=shutil.ignore_patterns(".state", "conversations"))
    (ws / "sops" / "returns.sop").unlink()
    with serve(ws, base) as url:
        yield url, ws


@pytest.fixture()
def page(browser: Browser, server: tuple[str, Path]) -> Iterator[Page]:
    pg = open_app(browser, server[0], 1500, 1100)
    yield pg
    pg.context.close()


class Author:
    """Drives the page and counts what a person would do: each click and each typed field."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.count = 0

    def idle(self) -> None:
        self.page.wait_for_timeout(400)
        self.page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                    timeout=60_000)
        self.page.wait_for_timeout(300)

    def click(self, target: Locator) -> None:
        self.count += 1
        target.click()
        self.idle()

    def type(self, target: Locator, text: str, *, enter: bool = False) -> None:
        self.count += 1
        target.fill(text)
        if enter:
            target.press("Enter")
        self.idle()

    def pick(self, label: str, text: str) -> None:
        """Choose in a select box by typing what is wanted and Enter (one typed field): the option it narrows
        to, or a new value where the box takes them."""
        self.type(self.page.get_by_role("combobox", name=label).last, text, enter=True)

    def say(self, text: str) -> str:
        messages = self.page.locator("[data-testid=stChatMessage]")
        before = messages.count()
        self.type(self.page.get_by_placeholder("Message the agent"), text, enter=True)
        expect(messages).to_have_count(before + 2)
        self.idle()
        return messages.last.inner_text()

    def go(self, title: str) -> None:
        self.click(self.page.locator("[data-testid=stSidebarNav]").get_by_text(title, exact=True))
        expect(self.page.get_by_role("heading", name=title)).to_be_visible()


def _box(page: Page, label: str) -> Locator:
    return page.get_by_role("textbox", name=label, exact=True)


def _flow(page: Page) -> FrameLocator:
    return page.frame_locator(FLOW)


def _add(author: Author, kind: str) -> None:
    author.click(author.page.get_by_role("radio", name=kind, exact=True))


def _added(author: Author, nodes: int) -> None:
    """Click 'Add step' and wait for the canvas to draw one more step and the side form to show it."""
    header = author.page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"· line \d+$")).first
    before = header.inner_text()
    author.click(author.page.get_by_role("button", name="Add step"))
    expect(_flow(author.page).locator(".react-flow__node")).to_have_count(nodes + 1)
    expect(header).not_to_have_text(before)
    author.idle()


def test_a_returns_procedure_built_on_the_canvas_alone_saves_and_runs_in_the_chat(page: Page,
                                                                                  server: tuple[str, Path]) -> None:
    ws = server[1]
    me = Author(page)
    me.go("SOP studio")
    me.click(page.get_by_role("button", name="New SOP"))
    me.type(page.get_by_placeholder("refund_request.sop"), "quick_return")
    me.click(page.get_by_text("json", exact=True))
    me.click(page.get_by_role("button", name="Create"))
    expect(page.get_by_role("radio", name=re.compile("quick_return.json"))).to_be_checked()
    me.click(page.get_by_role("radio", name="Canvas", exact=True))
    nodes = _flow(page).locator(".react-flow__node")
    expect(nodes).to_have_count(2)  # the new SOP's greeting and its end; the greeting is selected

    _add(me, "Ask")
    me.pick("Slot the answer fills", "order_id")
    me.type(_box(page, "Question to the customer"), "What is your order number? It looks like NW-12345.")
    _added(me, 2)

    _add(me, "Tool call")
    me.pick("Tool", "orders.lookup")
    me.type(_box(page, "Result stored as (optional)"), "order")
    _added(me, 3)

    _add(me, "Decision")
    me.type(_box(page, "Condition"), "context.order.status == 'delivered'", enter=True)
    expect(page.get_by_text("the expression parses")).to_be_visible()
    _added(me, 4)

    _add(me, "Ask")  # on the decision's first branch: the order is delivered
    me.pick("Slot the answer fills", "confirmed")
    me.pick("Kind of answer", "yes_no")
    me.type(_box(page, "Question to the customer"), "Shall I open a return for order {context.order_id}?")
    _added(me, 5)

    _add(me, "Tool call")
    me.pick("Tool", "returns.create")
    me.type(_box(page, "return_item"), "all items")
    me.type(_box(page, "return_method"), "courier pickup")
    me.type(_box(page, "Message after the call (optional)"),
            "Return {context.returns_create.rma} is open: a courier will collect all items.")
    _added(me, 6)

    expect(page.get_by_text("Compiles: no errors.")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "canvas.png"))  # not an interaction: the README's picture of the canvas
    me.click(page.get_by_role("button", name="Save"))
    expect(page.get_by_text("sops/quick_return.json saved and in use.")).to_be_visible()
    saved = (ws / "sops" / "quick_return.json").read_text(encoding="utf-8")
    assert '"tool": "returns.create"' in saved and "context.order.status == 'delivered'" in saved

    me.go("Chat")
    me.click(page.get_by_role("button", name=re.compile("New session")))
    assert "order number" in me.say("I need help with quick return").lower()
    assert "open a return for order NW-10483" in me.say("NW-10483")
    done = me.say("yes please")
    assert re.search(r"Return RMA-\S+ is open", done), done
    print(f"interactions: {me.count}")
    assert me.count < 40, f"{me.count} clicks and typed fields to build, save and run the procedure"


def test_an_example_sop_opened_and_saved_on_the_canvas_stays_byte_for_byte(page: Page,
                                                                           server: tuple[str, Path]) -> None:
    ws = server[1]
    path = ws / "sops" / "order_cancel.sop"
    before = path.read_bytes()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    me = Author(page)
    me.go("SOP studio")
    me.click(page.get_by_text("order_cancel.sop", exact=True))
    me.click(page.get_by_role("radio", name="Canvas", exact=True))
    flow = _flow(page)
    nodes = flow.locator(".react-flow__node")
    expect(nodes.first).to_be_visible()
    count = nodes.count()
    header = page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"· line \d+$")).first
    for i in range(count):  # select every step: the side form shows it
        kind = nodes.nth(i).inner_text().split("\n")[0].split(" · ")[0].strip()
        me.click(nodes.nth(i))
        if kind != "End":
            expect(header).to_contain_text(kind)
    me.click(flow.locator(".react-flow__node", has_text="Decision").first)
    expect(header).to_contain_text("Decision")
    me.click(page.get_by_role("button", name="Apply"))  # its condition, unchanged
    # draw the arrow from the first step to the step it already goes to: drawn twice for a moment, then once
    edges = flow.locator(".react-flow__edge")
    arrows = edges.count()
    first = flow.locator(".react-flow__node", has_text="start").first
    second = flow.locator(".react-flow__node", has_text="look up the order").first
    source = first.locator(".react-flow__handle-bottom").bounding_box()
    target = second.locator(".react-flow__handle-top").bounding_box()
    assert source and target
    page.mouse.move(source["x"] + source["width"] / 2, source["y"] + source["height"] / 2)
    page.mouse.down()
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2, steps=12)
    page.mouse.up()
    me.count += 1
    me.idle()
    expect(edges).to_have_count(arrows)
    expect(page.get_by_role("tabpanel", name="SOPs").get_by_text("Saved; the next chat turn uses this version.")
           ).to_be_visible()
    assert page.get_by_role("button", name="Save").is_disabled()  # nothing to save: the canvas changed nothing
    assert path.read_bytes() == before
    assert not (ws / ".state" / "drafts" / "sops" / "order_cancel.sop").exists()
    outside = [u for u in asked if not u.startswith((server[0].rstrip("/"), "data:", "blob:"))]
    assert outside == []  # the canvas's scripts and styles come with the app
