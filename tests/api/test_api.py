"""The HTTP API (core.server.api): turns, sessions and traces over JSON; auth, bad requests and conflicts.

In-process tests drive the FastAPI app through its ASGI interface (Starlette's TestClient, a real
HTTP exchange in memory); the last test starts ``python -m core serve`` with two worker processes
on PostgreSQL and talks to it over TCP.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from core.bench.api import ApiServer
from core.engine.build import build_orchestrator
from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.server.api import create_app
from core.state.sessions import open_state_store

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "examples" / "library_desk"
TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _copy(src: Path, dst: Path) -> Path:
    copy_workspace(src, dst)
    return dst


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, embedder: CachedEmbedder) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("api")
    library, bikes = _copy(LIBRARY, tmp / "library_desk"), _copy(ROOT / "examples" / "bike_repairs", tmp / "bikes")
    url = f"sqlite:///{tmp / 'sessions.sqlite'}"  # both workspaces on one store: their sessions never mix

    def build(root: Path, ws: Any) -> Any:
        return build_orchestrator(root, state_url=url, loaded=ws)

    app = create_app([library, bikes], token=TOKEN, load_in_background=False, build=build)
    with TestClient(app) as c:
        yield c


def test_a_conversation_over_http_with_its_state_and_traces(client: TestClient) -> None:
    r = client.post("/sessions/c1/messages", json={"text": "I want to renew a book"}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workspace"] == "library_desk" and body["turn"] == 1 and body["trace_id"] == "library_desk/c1/1"
    assert body["active_goal"]["type"] == "library.renew" and "card_number" in body["active_goal"]["missing"]
    assert "card number" in body["reply"] and body["ended"] is False and body["attempts"] == 1
    r = client.post("/workspaces/library_desk/sessions/c1/messages", headers=AUTH,
                    json={"text": "2123 4000 0123 45", "customer_id": "patron-9"})
    assert r.json()["turn"] == 2 and "card_number" not in r.json()["active_goal"]["missing"]
    state = client.get("/workspaces/library_desk/sessions/c1", headers=AUTH).json()
    assert state["version"] == 2 and state["customer_id"] == "patron-9"
    traces = client.get("/workspaces/library_desk/sessions/c1/traces", headers=AUTH).json()
    assert [t["turn"] for t in traces] == [1, 2] and traces[1]["why"]
    one = client.get("/workspaces/library_desk/sessions/c1/traces/2", headers=AUTH).json()
    assert one["user"] == "2123 4000 0123 45"
    listed = client.get("/workspaces/library_desk/sessions", headers=AUTH).json()
    assert [s["session_id"] for s in listed] == ["c1"]
    # the same session name in another workspace is another session
    other = client.post("/workspaces/bikes/sessions/c1/messages", json={"text": "I want to book a repair"},
                        headers=AUTH).json()
    assert other["turn"] == 1 and other["active_goal"]["type"] == "repairs.book"
    assert client.get("/workspaces/bikes/sessions", headers=AUTH).json()[0]["session_id"] == "c1"
    # a session that went to a person is marked so in the list and in its state
    client.post("/workspaces/bikes/sessions/c2/messages", json={"text": "let me talk to a human please"},
                headers=AUTH)
    marks = {s["session_id"]: s["handoff_turn"] for s in client.get("/workspaces/bikes/sessions",
                                                                     headers=AUTH).json()}
    assert marks == {"c1": None, "c2": 1}
    assert client.get("/workspaces/bikes/sessions/c2", headers=AUTH).json()["handoff_turn"] == 1


def test_workspaces_health_readiness_and_the_openapi_document(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok"}  # open: a load balancer's probe has no token
    assert client.get("/ready").json() == {"status": "ready", "workspaces": ["library_desk", "bikes"],
                                           "turns": {"computing": 0, "waiting": 0, "slots": 1}}
    listed = client.get("/workspaces", headers=AUTH).json()
    assert [(w["name"], w["default"]) for w in listed] == [("library_desk", True), ("bikes", False)]
    assert "library.renew" in listed[0]["sops"] and listed[0]["title"] == "Riverside Public Library"
    paths = client.get("/openapi.json").json()["paths"]
    assert "/workspaces/{workspace}/sessions/{session_id}/messages" in paths


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}])
def test_without_the_right_bearer_token_nothing_is_read_or_changed(client: TestClient,
                                                                   headers: dict[str, str]) -> None:
    for call in (lambda: client.get("/workspaces", headers=headers),
                 lambda: client.post("/sessions/auth1/messages", json={"text": "hello"}, headers=headers),
                 lambda: client.get("/workspaces/library_desk/sessions/c1", headers=headers)):
        r = call()
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    assert client.get("/workspaces/library_desk/sessions/auth1", headers=AUTH).status_code == 404


def test_bad_requests_get_a_json_error_naming_the_problem(client: TestClient) -> None:
    def post(body: bytes, path: str = "/sessions/bad1/messages") -> httpx.Response:
        return client.post(path, content=body, headers={**AUTH, "content-type": "application/json"})

    r = post(b'{"text": "hi"')
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_json" and "character 13" in \
        r.json()["error"]["message"]
    r = post(b'{"txt": "hi"}')
    assert r.status_code == 422 and r.json()["error"]["message"] == "text: Field required"
    r = post(b'{"text": ""}')
    assert r.status_code == 422 and r.json()["fields"][0]["field"] == "text"
    r = post(b'{"text": 12}')
    assert r.status_code == 422 and "text" in r.json()["error"]["message"]
    r = post(b'{"text": "hi"}', "/sessions/..%2Fetc/messages")
    assert r.status_code in (404, 422) and "error" in r.json()
    r = post(b'{"text": "hi"}', "/sessions/" + "x" * 200 + "/messages")
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_session_id"
    r = client.get("/workspaces/nope/sessions/c1", headers=AUTH)
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_workspace" and "library_desk" in r.text
    r = client.get("/workspaces/library_desk/sessions/never-seen", headers=AUTH)
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_session"
    r = client.get("/workspaces/library_desk/sessions/never-seen/traces", headers=AUTH)
    assert r.status_code == 404
    r = client.get("/no/such/route", headers=AUTH)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert client.get("/workspaces/library_desk/sessions/bad1", headers=AUTH).status_code == 404  # nothing stored


def test_oversized_bodies_are_refused_before_they_are_read(client: TestClient) -> None:
    big = b'{"text": "' + b"a" * 70_000 + b'"}'
    r = client.post("/sessions/big1/messages", content=big, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        yield b'{"text": "'
        for _ in range(40):
            yield b"b" * 2048
        yield b'"}'

    r = client.post("/sessions/big1/messages", content=chunks(), headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 413
    long_text = {"text": "c" * 12_001}  # under the body limit, over a message's length
    r = client.post("/sessions/big1/messages", json=long_text, headers=AUTH)
    assert r.status_code == 422 and "12000" in r.json()["error"]["message"]
    assert client.get("/workspaces/library_desk/sessions/big1", headers=AUTH).status_code == 404


def test_a_workspace_that_cannot_load_is_not_ready_and_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    _copy(LIBRARY, broken)
    (broken / "sops" / "renew_loan.sop").write_text("---\nid: x\n---\n    ask patron for it\n  bad indent\n")
    app = create_app([broken], token="", load_in_background=False,
                     build=lambda root, ws: build_orchestrator(root, state_url=f"sqlite:///{tmp_path}/s.db",
                                                               loaded=ws))
    with TestClient(app) as c:
        r = c.get("/ready")
        assert r.status_code == 503 and "renew_loan.sop" in r.json()["error"]["message"]
        r = c.post("/sessions/s/messages", json={"text": "hello"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "not_ready"
        assert c.get("/health").status_code == 200


class _LockLost:
    """A store whose turn lock does not hold (a lock lost to a network split, say) and whose commit is slow:
    only the optimistic version check keeps concurrent turns of one session apart."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def session_lock(self, session_id: str, wait_s: float) -> AbstractContextManager[float]:
        from contextlib import nullcontext

        return nullcontext(0.0)

    def save(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.05)  # turns overlap for sure
        self._store.save(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_turn_that_loses_the_commit_race_is_rerun_and_nothing_is_lost(tmp_path: Path, backend: str) -> None:
    if backend == "postgres":
        from tests.pg import database_url

        url = database_url(f"api-conflicts-{tmp_path.name}")
    else:
        url = f"sqlite:///{tmp_path / 's.db'}"
    store = _LockLost(open_state_store(url))
    ws = _copy(ROOT / "examples" / "bike_repairs", tmp_path / "bikes")
    app = create_app([ws], token="", load_in_background=False,
                     build=lambda root, loaded: build_orchestrator(root, store=store, loaded=loaded))  # type: ignore[arg-type]
    texts = [f"is my bike ready? ticket RT-{2040 + i}" for i in range(6)]
    results: list[httpx.Response] = []
    refused: list[dict[str, Any]] = []

    def client_sends(c: TestClient, text: str) -> None:
        for _ in range(20):  # as the API says on a 503: nothing changed, send it again
            r = c.post("/sessions/race/messages", json={"text": text})
            if r.status_code != 503:
                results.append(r)
                return
            refused.append(r.json())

    with TestClient(app) as c:
        threads = [threading.Thread(target=client_sends, args=(c, t)) for t in texts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r.status_code == 200 for r in results) and len(results) == 6, [r.text for r in results]
        assert max(r.json()["attempts"] for r in results) > 1  # some turn lost the race and ran again
        assert all(e["error"]["code"] == "try_again" and "send this one again" in e["reply"] for e in refused)
        assert sorted(r.json()["turn"] for r in results) == [1, 2, 3, 4, 5, 6]  # each committed once
        stored = c.get("/workspaces/bikes/sessions/race/traces").json()
        assert sorted(t["user"] for t in stored) == sorted(texts)
        assert c.get("/workspaces/bikes/sessions/race").json()["version"] == 6
    store.close()


def test_serve_runs_two_workers_on_postgres_and_they_share_the_sessions(tmp_path: Path) -> None:
    from tests.pg import database_url

    url = database_url(f"api-serve-{tmp_path.name}")
    ws = _copy(LIBRARY, tmp_path / "library_desk")
    server = ApiServer(ws, 2, url, token=TOKEN)
    base = server.base
    try:
        server.wait_ready(240)
        sessions = [f"w{i}" for i in range(4)]
        sent: list[tuple[str, int]] = []
        failed: list[str] = []
        lock = threading.Lock()

        def customer(session: str) -> None:
            with httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
                for text in ("I want to renew a book", "2123 4000 0123 45", "the night circus"):
                    r = http.post(f"/sessions/{session}/messages", json={"text": text})
                    with lock:
                        if r.status_code == 200:
                            sent.append((session, r.json()["turn"]))
                        else:
                            failed.append(f"{r.status_code} {r.text}")

        threads = [threading.Thread(target=customer, args=(s,)) for s in sessions * 2]  # two clients per session
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failed and len(sent) == 24, failed
        with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
            for s in sessions:
                turns = [t["turn"] for t in http.get(f"/workspaces/library_desk/sessions/{s}/traces").json()]
                assert turns == [1, 2, 3, 4, 5, 6]  # every turn stored once, none lost, none twice
                assert sorted(t for (x, t) in sent if x == s) == turns
        assert httpx.get(f"{base}/workspaces").status_code == 401
    finally:
        server.stop()


def test_serve_refuses_a_compute_setting_that_is_not_a_positive_number(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from core.__main__ import main

    monkeypatch.setenv("SOP_API_COMPUTE", "lots")
    assert main(["serve", "--workspace", str(LIBRARY), "--port", "1"]) == 2  # refused before it listens
    assert "SOP_API_COMPUTE takes a whole number of turns, at least 1; got 'lots'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--workspace", str(LIBRARY), "--compute", "0"])
