"""``python -m core bench --first-render``: how long a new user waits for the playground's first page.

Each run starts ``streamlit run app.py`` as a fresh process (so the model and the
workspace load from scratch, as on a first visit), opens it in headless Chromium and
times, from the moment the browser asks for the page:

* ``first_render_s``: the page shows something to read: the page title and either the
  chat or the progress indicator of the loading model and workspace;
* ``ready_s``: the chat input can be typed into.

``server_s`` is the time from the process start until the server answers at all.
Chromium is Debian's (``chromium``); Playwright drives it, nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from core.state.sessions.pgserver import free_port

APP = Path(__file__).resolve().parents[2] / "app.py"
PAID_SERVICES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SOP_LLM_MODEL", "ZEP_API_KEY")


def _chromium() -> str:
    found = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("the first-render benchmark needs Debian's chromium (apt-get install chromium)")
    return found


def _wait_health(url: str, proc: subprocess.Popen[bytes], limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("streamlit did not start") from None
            time.sleep(0.05)


def one_run(workspace: Path, chromium: str) -> dict[str, float]:
    """One cold start of the app, timed (seconds)."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in PAID_SERVICES}
    with tempfile.TemporaryDirectory(prefix="sop-render-") as tmp:
        env |= {"SOP_WORKSPACE": str(workspace), "SOP_WORKSPACES_DIR": str(Path(tmp) / "created")}
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
                                 "--server.address", "127.0.0.1", "--server.headless", "true"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_health(url, proc)
            server = time.perf_counter() - started
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("h1, [data-testid=stProgress], [data-testid=stSpinner]", timeout=180_000)
                first = time.perf_counter() - t0
                page.get_by_placeholder("Message the agent").wait_for(timeout=180_000)
                ready = time.perf_counter() - t0
                browser.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"server_s": round(server, 2), "first_render_s": round(first, 2), "ready_s": round(ready, 2)}


def run_first_render(workspace: str | Path, runs: int = 3) -> dict[str, Any]:
    """``runs`` cold starts; the median of each figure and every run."""
    chromium = _chromium()
    samples = [one_run(Path(workspace).resolve(), chromium) for _ in range(runs)]
    median = {k: round(statistics.median(s[k] for s in samples), 2) for k in samples[0]}
    return {"runs": samples, **median}
