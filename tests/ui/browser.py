"""What the browser tests share: the app served on a free port for a workspace, and Debian's Chromium."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from core.state.sessions.pgserver import free_port
from tests.conftest import PAID_SERVICES

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "_shots"  # screenshots the browser tests take (the README's pictures come from here)
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
VENV = Path(sys.executable).parents[1]  # the environment running the tests: `make run` must not build another


def need_chromium() -> str:
    """Debian's Chromium, for a test module to drive; without it the module is skipped (an error under CI, whose
    set-up installs it)."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            raise RuntimeError("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("Debian chromium is not installed (apt-get install chromium)", allow_module_level=True)
    return CHROMIUM


@contextmanager
def serve(ws: Path, base: Path, *, via_make: bool = False) -> Iterator[str]:
    """The playground on ``ws`` at a free port (``streamlit run app.py``, or ``make run PORT=…`` with
    ``via_make``), new workspaces going under ``base``; its URL once it answers, and it is stopped after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in PAID_SERVICES}
    env |= {"SOP_WORKSPACE": str(ws), "SOP_WORKSPACES_DIR": str(base / "created")}
    options = ["--server.address", "127.0.0.1", "--server.headless", "true"]
    command = (["make", "-s", "-o", f"{VENV}/.ready", "run", f"VENV={VENV}", f"PORT={port}",
                f"STREAMLIT_ARGS={' '.join(options)}"] if via_make
               else [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
                     *options])
    log_path = base / "app.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        try:
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the app did not start on port {port}: {log_path.read_text()}") from None
                    time.sleep(0.3)
            yield url
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the app and every process it started (``make`` runs Streamlit as a child)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=need_chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def open_app(browser: Browser, url: str, width: int = 1440, height: int = 1000) -> Page:
    """A fresh browser context on the app, once its first page (the chat) is drawn; close ``page.context``."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    expect(page.get_by_role("heading", name="Chat")).to_be_visible(timeout=90_000)
    return page
