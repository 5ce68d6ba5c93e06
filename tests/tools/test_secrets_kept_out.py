"""No secret is kept: a receiver's 500 whose body echoes the bearer token it was sent, and an MCP server whose
dying words carry an environment secret it was given, leave neither value in what is stored or shown (the
session store's traces and state, the HTTP API's traces, the Inspector's export); each is masked as ``***``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from core import build_orchestrator
from core.bench.processes import write_workspace
from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.server.api import create_app
from core.tools.mcp_client import close_all
from tests.tools.faultserver import fault_server

TOKEN = "desk-bearer-7c1e9a44d2"
SECRET = "mcp-env-secret-93b1f07e"


def _stored(orch: object, session: str) -> str:
    """Everything the store keeps of a session, as text: its state and its traces."""
    state = orch.load_state(session)  # type: ignore[attr-defined]
    return state.model_dump_json() + json.dumps(orch.store.traces(session))  # type: ignore[attr-defined]


def test_a_500_echoing_the_bearer_token_is_stored_and_served_masked(
        tmp_path: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.playground import Playground

    monkeypatch.setenv("DESK_TOKEN", TOKEN)
    with fault_server() as srv:
        ws = write_workspace(tmp_path / "ws")
        yaml = (ws / "store.yaml").read_text(encoding="utf-8")
        (ws / "store.yaml").write_text(yaml.replace(
            "    python: tools.py:open_ticket\n",
            f"    http: {{method: POST, url: '{srv.base}/500', headers: {{Authorization: 'Bearer ${{DESK_TOKEN}}'}}}}\n"),
            encoding="utf-8")
        url = f"sqlite:///{tmp_path}/s.sqlite"
        app = create_app([ws], load_in_background=False,
                         build=lambda root, loaded: build_orchestrator(root, state_url=url, loaded=loaded))
        with TestClient(app) as client:
            client.post("/sessions/s/messages", json={"text": "I need to open a ticket"})
            client.post("/sessions/s/messages", json={"text": "the printer on floor 2 is jammed"})
            served = client.get(f"/workspaces/{ws.name}/sessions/s/traces").text
        echoed = srv.requests("/500")
    assert echoed and echoed[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"  # the receiver got it, and echoed it
    assert "upstream refused" in served and TOKEN not in served and "***" in served
    orch = build_orchestrator(ws, state_url=url)
    assert TOKEN not in _stored(orch, f"{ws.name}/s")  # the API keeps a session as <workspace>/<id>
    pg = Playground(ws, embedder=embedder, state_url=url)
    try:
        exported = pg.inspector.export_session(f"{ws.name}/s")
    finally:
        pg.close()
    assert "upstream refused" in exported and TOKEN not in exported


def test_an_mcp_servers_last_words_lose_the_environment_secret_it_was_given(
        tmp_path: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.tools.test_mcp import SERVER, _desk

    monkeypatch.setenv("DESK_SECRET", SECRET)
    log = tmp_path / "calls.jsonl"
    server = (f"{{command: python, args: ['{SERVER}'], env: {{MCP_TEST_LOG: '{log}', "
              "MCP_TEST_SECRET: '${DESK_SECRET}'}, start_timeout_s: 15}")
    ws_dir = _desk(tmp_path, server)
    try:
        orch = build_orchestrator(ws_dir, loaded=load_workspace(ws_dir, embedder),
                                  state_url=f"sqlite:///{tmp_path}/s.sqlite")
        orch.handle_message("s", "break the ticket store now")
        orch.handle_message("s", "T-5")
        stored = _stored(orch, "s")
    finally:
        close_all()
    assert "the ticket store is gone ***" in stored and SECRET not in stored
