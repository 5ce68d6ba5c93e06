"""A Google Sheet inventory that cannot be read and has no copy yet turns off the item search only: lint warns,
chat and the HTTP API serve everything else, a request that needs the search ends with one sentence, and the
search works once the sheet answers (the local stand-in for the Sheets API, tests/tools/sheets_fake.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from core.cli.main import main
from core.engine.build import build_orchestrator, load_workspace
from core.language.replies import say
from core.retrieval.embedding import CachedEmbedder
from core.server.api import create_app
from core.tools import held
from core.tools.held import HeldTool
from tests.tools.sheets_fake import LABEL, serving_the_sheet, sheet_store

RETURNS = "what is your return policy?"


@pytest.fixture()
def unread(ws_copy: Path) -> Path:
    """The demo store with its inventory moved to a Google Sheet that has never been read (no key is set)."""
    sheet_store(ws_copy)
    return ws_copy


def test_lint_warns_and_does_not_fail(unread: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["lint", "--workspace", str(unread)])
    out = capsys.readouterr().out
    mine = [line for line in out.splitlines() if line.startswith(LABEL)]
    assert code == 0 and len(mine) == 1 and ": warning: cannot read the sheet" in mine[0]
    assert "inventory.query is off until the sheet can be read" in mine[0] and "everything else works" in mine[0]


def test_chat_answers_the_rest_and_the_search_says_one_sentence(unread: Path, embedder: CachedEmbedder) -> None:
    ws = load_workspace(unread, embedder)
    assert isinstance(ws.tools["inventory.query"], HeldTool) and "orders.get_status" in ws.tools
    orch = build_orchestrator(unread, loaded=ws, state_url="sqlite:///:memory:")  # no WorkspaceError
    reply = orch.handle_message("s", "Recommend a gaming mouse")
    assert reply.strip() == say("tool_unavailable", "en")  # not a question it could never use the answer of
    assert orch.load_state("s").active_goal is None
    assert "7 days" in orch.handle_message("s", RETURNS)  # the knowledge base still answers


def test_the_api_is_ready_and_answers(unread: Path, embedder: CachedEmbedder) -> None:
    app = create_app([unread], load_in_background=False,
                     build=lambda root, loaded: build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:"))
    with TestClient(app) as client:
        assert client.get("/ready").status_code == 200
        answer = client.post("/sessions/s/messages", json={"text": RETURNS})
        assert answer.status_code == 200 and "7 days" in answer.json()["reply"]
        search = client.post("/sessions/s2/messages", json={"text": "Recommend a gaming mouse"})
        assert search.status_code == 200 and search.json()["reply"].strip() == say("tool_unavailable", "en")


def test_the_search_comes_back_once_the_sheet_answers(unread: Path, embedder: CachedEmbedder,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ws = load_workspace(unread, embedder)
    orch = build_orchestrator(unread, loaded=ws, state_url="sqlite:///:memory:")
    fake = serving_the_sheet()
    try:
        monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
        monkeypatch.setenv("SOP_SHEETS_API_KEY", fake.api_key)
        monkeypatch.setattr(held, "RETRY_EVERY_S", 0.0)
        search = ws.tools["inventory.query"]
        assert not search.available()  # the first look starts in the background; the turn does not wait
        assert search.wait(10)
        assert [r["name"] for r in orch.gateway.call("sales", "inventory.query", {"category": "mouse"}).result] \
            == ["Viper Mini", "G305"]
    finally:
        fake.close()
