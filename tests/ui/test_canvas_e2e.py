"""The SOP studio's canvas in headless Chromium (Debian's chromium driven by Playwright; no browser download).

A returns procedure is built on the canvas alone in a copy of the retail example (ask the order number, look it
up, branch on delivered, confirm, open the return, end), saved, and run in the chat; every click and typed field
is counted. An example SOP opened on the canvas, its steps selected, an arrow drawn again and a step applied
unchanged, stays byte for byte what it was; so does every SOP of the demo and of every example workspace, each
opened on the canvas with a step of each kind applied as its side form shows it.
"""

from __future__ import annotations

import re
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.model import Canvas
from core.workspace.files import load_workspace_files
from core.workspace.gar import GarIndex
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
    SHOTS.mkdir(parents=True, exist_ok=True)  # not interactions: the README's picture of the canvas, its settings on top
    page.get_by_text(re.compile("^Procedure settings")).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / "canvas.png"))
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


# ---------------------------------------------------------------------------------------------- every example SOP
WORKSPACES = {"demo": ROOT} | {p.name: p for p in sorted((ROOT / "examples").iterdir()) if (p / "store.yaml").is_file()}


@pytest.fixture(scope="module")
def every_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Path]]]:
    """The app with a copy of the demo and of every example workspace among the workspaces it can open."""
    base = tmp_path_factory.mktemp("examples")
    copies = {name: base / "created" / name for name in WORKSPACES}
    for name, src in WORKSPACES.items():
        copies[name].mkdir(parents=True)
        copy_workspace(src, copies[name])
    with serve(copies["demo"], base) as url:
        yield url, copies


def _canvas(ws: Path, path: Path, embedder: CachedEmbedder) -> Canvas:
    files = load_workspace_files(ws)
    return open_canvas(path.read_bytes().decode("utf-8"), "json" if path.suffix == ".json" else "text",
                       f"sops/{path.name}", GarIndex(files.gar, embedder))


@pytest.mark.parametrize("name", list(WORKSPACES))
def test_every_sop_of_a_workspace_opened_and_applied_on_the_canvas_is_saved_unchanged(
        name: str, browser: Browser, every_example: tuple[str, dict[str, Path]], embedder: CachedEmbedder) -> None:
    url, copies = every_example
    ws = copies[name]
    sops = sorted(p for p in (ws / "sops").iterdir() if p.suffix in (".sop", ".json"))
    before = {p: p.read_bytes() for p in sops}
    page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/?ws={urllib.parse.quote(str(ws.resolve()))}")
        expect(page.get_by_role("heading", name="Chat")).to_be_visible(timeout=90_000)
        me = Author(page)
        me.go("SOP studio")
        me.click(page.get_by_role("radio", name="Canvas", exact=True))
        header = page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"· line \d+$"))
        applied: set[str] = set()  # kinds of step applied in this workspace: each kind at least once
        for path in sops:
            canvas = _canvas(ws, path, embedder)
            listed = page.get_by_role("radiogroup", name="SOP files")
            for _attempt in range(3):  # a click landing while the page reruns is dropped: click again
                me.click(listed.get_by_text(path.name, exact=True))
                try:
                    expect(listed.get_by_role("radio", name=path.name)).to_be_checked(timeout=15_000)
                    break
                except AssertionError:
                    continue
            nodes = _flow(page).locator(".react-flow__node")
            expect(nodes).to_have_count(len(canvas.nodes))
            steps = sorted((n for n in canvas.nodes.values() if n.kind != "end" and not n.implicit),
                           key=lambda n: n.id != canvas.start)  # the start is selected when the SOP opens
            chosen = [n for i, n in enumerate(steps) if i == 0 or n.kind not in applied
                      and n.kind not in {m.kind for m in steps[:i]}]
            for node in chosen:
                for _attempt in range(3):  # a click landing while the page reruns is dropped: click again
                    if node.id != canvas.start:
                        me.click(_flow(page).locator(f".react-flow__node[data-id='{node.id}']"))
                    try:
                        expect(header.first).to_contain_text(node.id, timeout=15_000)
                        break
                    except AssertionError:
                        continue
                expect(header.first).to_contain_text(node.id)
                step_key = re.sub(r"[^\w-]", "-", f"{path.stem}-{path.suffix[1:]}-{node.id}-")
                apply = page.locator(f"[class*='st-key-apply_'][class*='{step_key}'] button")  # this step's form
                expect(apply).to_have_count(1)
                for _attempt in range(3):  # 'Edit this step' opens or closes as the step's kind wants: settle
                    page.wait_for_timeout(600)
                    if apply.is_visible():
                        break
                    me.click(apply.locator("xpath=ancestor::details[1]/summary"))
                me.click(apply)  # its fields as the side form shows them, unchanged
                applied.add(node.kind)
            expect(page.get_by_role("tabpanel", name="SOPs").get_by_text(
                "Saved; the next chat turn uses this version.")).to_be_visible()
            assert page.get_by_role("button", name="Save").is_disabled(), f"{path.name}: the canvas changed it"
            assert path.read_bytes() == before[path], path.name
        picker = page.locator("[data-testid=stSidebar]").get_by_role("combobox", name="Workspace")
        expect(picker).to_have_value(re.compile(rf"\(yours: {name}\)$"))  # still this workspace, clicks and all
        drafts = ws / ".state" / "drafts"
        assert not drafts.exists() or not any(p.is_file() for p in drafts.rglob("*")), "a draft was left"
        assert all(p.read_bytes() == b for p, b in before.items())
    finally:
        page.context.close()
