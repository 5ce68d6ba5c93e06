"""The app driven in-process by Streamlit's AppTest, on a writable copy of the demo workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.browser import chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture()
def app_ws(ws_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOP_WORKSPACE", str(ws_copy))
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(tmp_path / "created"))
    return ws_copy


@pytest.fixture()
def at(app_ws: Path) -> Iterator[AppTest]:
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    assert not app.exception, app.exception
    yield app


def texts(at: AppTest) -> str:
    """Everything the page shows as text (markdown, captions, alerts, titles), one blob for `in` checks."""
    parts = [e.value for kind in (at.markdown, at.caption, at.error, at.warning, at.success, at.info, at.title,
                                  at.subheader) for e in kind]
    return "\n".join(str(p) for p in parts)


def studio_gen(ws: Path, n: int = 0) -> str:
    """The SOP studio's editors' key part for workspace ``ws`` at its ``n``-th redraw (``sop_choice_<gen>``)."""
    from ui import services

    return f"{services.workspace_tag(ws)}_{n}"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium for the browser tests (tests/ui/browser.py), launched once."""
    with chromium() as b:
        yield b
