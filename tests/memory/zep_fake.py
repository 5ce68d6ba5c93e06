"""A local stand-in for Zep Cloud's v4 API: a real HTTP server on 127.0.0.1 that records every request.

It speaks the wire format the pinned ``zep-cloud`` 4.x SDK expects (paths under ``/api/v4``,
JSON bodies, 4.x-shaped replies and ``{"error": {...}}`` error bodies) and keeps just enough
state (users, threads, messages, episodes) for the preference store to work against it.
Faults are scripted per route: a status (404, 409, 429, 500, …) or a delay longer than the
client's timeout, once, n times or until cleared.

It does not imitate Zep's own fact extraction: the context block it returns is canned.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PREFIX = "/api/v4"


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str  # without the /api/v4 prefix, e.g. "/users/lookup"
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None


@dataclass
class Fault:
    """A scripted misbehaviour for requests matching ``method`` and the ``path`` regex."""

    method: str
    path: str
    status: int = 500
    delay_s: float = 0.0
    times: int | None = 1  # None: until cleared
    headers: dict[str, str] = field(default_factory=dict)

    def matches(self, method: str, path: str) -> bool:
        return (self.times is None or self.times > 0) and self.method in (method, "ANY") and \
            re.fullmatch(self.path, path) is not None


class FakeZep:
    """The server plus its state; use as a context manager or call ``start``/``stop``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.users: dict[str, dict[str, Any]] = {}  # uuid -> user
        self.threads: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}  # thread uuid -> messages
        self.episodes: list[dict[str, Any]] = []
        self._idempotent: dict[tuple[str, str], tuple[int, Any]] = {}
        self._clock = itertools.count(1)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-zep",
                                        daemon=True)

    @property
    def url(self) -> str:
        """The API root to give the SDK (``ZEP_BASE_URL``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{PREFIX}"

    def start(self) -> FakeZep:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeZep:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting -----------------------------------------------------------------------
    def fail(self, method: str, path: str, status: int = 500, *, times: int | None = 1, delay_s: float = 0.0,
             headers: dict[str, str] | None = None) -> None:
        """Answer matching requests with ``status`` (after ``delay_s``), ``times`` times (None: always)."""
        with self._lock:
            self.faults.append(Fault(method, path, status, delay_s, times, headers or {}))

    def outage(self, status: int = 500, delay_s: float = 0.0) -> None:
        """Every request fails until :meth:`recover`."""
        self.fail("ANY", ".*", status, times=None, delay_s=delay_s)

    def recover(self) -> None:
        with self._lock:
            self.faults.clear()

    def calls(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        """Recorded requests, optionally of one method and matching a path regex."""
        with self._lock:
            return [r for r in self.requests if (method is None or r.method == method)
                    and (path is None or re.fullmatch(path, r.path))]

    def routes(self) -> list[str]:
        """``"METHOD /path"`` of every request so far, uuids replaced by ``{id}``."""
        with self._lock:
            return [f"{r.method} {re.sub(r'[0-9a-f]{32}', '{id}', r.path)}" for r in self.requests]

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- handling ------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: Any) -> tuple[int, Any, float,
                                                                                             dict[str, str]]:
        """Record the request, then answer: (status, JSON body, delay before answering, headers)."""
        parts = urlsplit(raw_path)
        path = parts.path[len(PREFIX):] if parts.path.startswith(PREFIX) else parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self._lock:
            self.requests.append(Recorded(method, path, query, headers, body))
            fault = next((f for f in self.faults if f.matches(method, path)), None)
            if fault is not None:
                if fault.times is not None:
                    fault.times -= 1
                return fault.status, _error("scripted_fault", f"scripted {fault.status}"), fault.delay_s, \
                    fault.headers
            key = headers.get("idempotency-key", "")
            if key and (path, key) in self._idempotent:
                status, reply = self._idempotent[(path, key)]
                return status, reply, 0.0, {}
            status, reply = self._route(method, path, query, body or {})
            if key and 200 <= status < 300:
                self._idempotent[(path, key)] = (status, reply)
            return status, reply, 0.0, {}

    def _route(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        if (method, path) == ("POST", "/users/lookup"):
            return self._lookup_user(body)
        if (method, path) == ("POST", "/users"):
            return self._create_user(body)
        if (m := re.fullmatch(r"/users/([^/]+)", path)) and method == "DELETE":
            return self._delete_user(m.group(1))
        if (method, path) == ("POST", "/threads"):
            return self._create_thread(body)
        if m := re.fullmatch(r"/threads/([^/]+)/messages", path):
            return self._add_messages(m.group(1), body) if method == "POST" else (405, _error("method", method))
        if (m := re.fullmatch(r"/threads/([^/]+)/context", path)) and method == "GET":
            return self._thread_context(m.group(1))
        if (m := re.fullmatch(r"/graphs/([^/]+)/episodes", path)) and method == "POST":
            return self._add_episode(m.group(1), body)
        if (m := re.fullmatch(r"/graphs/([^/]+)/episodes/list", path)) and method == "POST":
            return self._list_episodes(m.group(1), query, body)
        if (m := re.fullmatch(r"/graphs/([^/]+)/context", path)) and method == "POST":
            return self._graph_context(m.group(1), body)
        return 404, _error("not_found", f"no route {method} {path}")

    def _now(self) -> str:
        return f"2026-01-01T00:00:{next(self._clock):06d}Z"

    def _lookup_user(self, body: dict[str, Any]) -> tuple[int, Any]:
        user = next((u for u in self.users.values() if u["user_id"] == body.get("user_id")), None)
        return (200, user) if user else (404, _error("not_found", "user not found"))

    def _create_user(self, body: dict[str, Any]) -> tuple[int, Any]:
        if any(u["user_id"] == body.get("user_id") for u in self.users.values()):
            return 409, _error("conflict", "a user with this user_id already exists")
        uid = uuid.uuid4().hex
        user = {"uuid": uid, "user_id": body.get("user_id"), "graph_uuid": uuid.uuid4().hex,
                "metadata": body.get("metadata"), "created_at": self._now()}
        self.users[uid] = user
        return 201, user

    def _delete_user(self, user: str) -> tuple[int, Any]:
        if self.users.pop(user, None) is None:
            return 404, _error("not_found", "user not found")
        gone = {t for t, thread in self.threads.items() if thread["user_uuid"] == user}
        self.threads = {t: v for t, v in self.threads.items() if t not in gone}
        self.messages = {t: v for t, v in self.messages.items() if t not in gone}
        self.episodes = [e for e in self.episodes if e["user_uuid"] != user]
        return 202, {"task": _task()}

    def _graph_owner(self, graph: str) -> dict[str, Any] | None:
        return self.users.get(graph) or next((u for u in self.users.values() if u["graph_uuid"] == graph), None)

    def _create_thread(self, body: dict[str, Any]) -> tuple[int, Any]:
        user = self.users.get(str(body.get("user_uuid")))
        if user is None:
            return 404, _error("not_found", "user not found")
        tid = uuid.uuid4().hex
        thread = {"uuid": tid, "user_uuid": user["uuid"], "graph_uuid": user["graph_uuid"],
                  "created_at": self._now(), "updated_at": self._now()}
        self.threads[tid] = thread
        self.messages[tid] = []
        return 201, thread

    def _add_messages(self, thread: str, body: dict[str, Any]) -> tuple[int, Any]:
        if thread not in self.threads:
            return 404, _error("not_found", "thread not found")
        added = [{**m, "uuid": uuid.uuid4().hex, "thread_uuid": thread, "created_at": self._now(),
                  "processed": False} for m in body.get("messages", [])]
        self.messages[thread] += added
        return 202, {"messages": added, "task": _task()}

    def _thread_context(self, thread: str) -> tuple[int, Any]:
        if thread not in self.threads:
            return 404, _error("not_found", "thread not found")
        said = "\n".join(f"- {m.get('content')}" for m in self.messages[thread])
        return 200, {"context": f"<FACTS>\n{said}\n</FACTS>"}

    def _add_episode(self, graph: str, body: dict[str, Any]) -> tuple[int, Any]:
        owner = self._graph_owner(graph)
        if owner is None:
            return 404, _error("not_found", "graph not found")
        episode = {"uuid": uuid.uuid4().hex, "content": body.get("data"), "source": body.get("type", "text"),
                   "source_description": body.get("source_description"), "metadata": body.get("metadata"),
                   "graph_uuid": owner["graph_uuid"], "user_uuid": owner["uuid"], "created_at": self._now(),
                   "processed": False}
        self.episodes.append(episode)
        return 202, {"episode": episode, "task": _task()}

    def _list_episodes(self, graph: str, query: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        owner = self._graph_owner(graph)
        if owner is None:
            return 404, _error("not_found", "graph not found")
        eqs = [(f["property_name"], f["value"]) for f in
               ((body.get("filters") or {}).get("metadata_filters") or {}).get("filters") or []
               if f.get("operator") == "eq"]
        mine = [e for e in self.episodes if e["user_uuid"] == owner["uuid"]
                and all((e.get("metadata") or {}).get(k) == v for k, v in eqs)]
        mine.sort(key=lambda e: e["created_at"], reverse=query.get("order") == "desc")
        start = int(query.get("cursor") or 0)
        size = int(query.get("page_size") or 50)
        page = mine[start:start + size]
        more = start + size < len(mine)
        return 200, {"items": page, **({"next_cursor": str(start + size)} if more else {})}

    def _graph_context(self, graph: str, body: dict[str, Any]) -> tuple[int, Any]:
        owner = self._graph_owner(graph)
        if owner is None:
            return 404, _error("not_found", "graph not found")
        count = sum(1 for e in self.episodes if e["user_uuid"] == owner["uuid"])
        return 200, {"context": f"<FACTS>\n- {count} episode(s) about: {body.get('query')}\n</FACTS>",
                     "truncated": False}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "request_id": f"req_{uuid.uuid4().hex[:12]}"}}


def _task() -> dict[str, Any]:
    return {"uuid": uuid.uuid4().hex, "status": "pending", "type": "ingestion"}


def _handler_for(fake: FakeZep) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, reply, delay, extra = fake.handle(self.command, self.path, headers, body)
            if delay and fake._stop.wait(delay):
                return
            data = json.dumps(reply).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
            pass

    return Handler
