"""The engine behind an HTTP API (FastAPI): ``python -m core serve`` starts it with N workers.

Every worker process builds the engine for each served workspace once, on the shared state store
(``SOP_STATE_URL``: PostgreSQL for several workers or machines; by default each workspace's own SQLite
file, which several workers on one machine share safely). A worker keeps no session in memory: any
worker answers any session, so workers can be added behind a load balancer.

Routes (JSON in and out; OpenAPI at ``/docs`` and ``/openapi.json``):

* ``GET /health`` (alive) and ``GET /ready`` (every workspace loaded and the store answering);
* ``GET /workspaces``: the served workspaces, the default first;
* ``POST /workspaces/{workspace}/sessions/{session_id}/messages`` ``{"text": "...", "customer_id": "..."}``:
  one turn: the reply, the active goal, the trace id; ``POST /sessions/{session_id}/messages`` for the
  default workspace;
* ``GET /workspaces/{workspace}/sessions`` and ``.../sessions/{session_id}`` (state),
  ``.../traces`` and ``.../traces/{turn}``.

With ``SOP_API_TOKEN`` set every route but health and readiness needs ``Authorization: Bearer <token>``.
Bodies over ``SOP_API_MAX_BODY`` bytes (default 64 KiB) are refused before they are read whole. Every
error is ``{"error": {"code", "message"}}`` with its HTTP status. Sessions are stored under
``<workspace>/<session_id>`` so workspaces sharing one database never mix their sessions.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from core.shared.concurrency import TurnGate
from core.shared.errors import SopError, UserInputError

log = logging.getLogger(__name__)

MAX_BODY = int(os.environ.get("SOP_API_MAX_BODY", str(64 * 1024)))
MAX_TEXT = 4000
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ENV_WORKSPACES = "SOP_API_WORKSPACES"  # os.pathsep-separated folders, the default first (set by `serve`)
ENV_COMPUTE = "SOP_API_COMPUTE"  # turns a worker computes at once (set by `serve --compute`)
# Vectors a worker keeps in memory per workspace (about 1.8 kB each): a message is rarely sent twice, so more
# would only grow a long-running worker (20,000 hold 36 MB); the workspace's disk cache keeps every one.
WORKER_VECTORS = 4096


def compute_slots(value: str | None = None) -> int:
    """Turns one worker computes at once: ``value``, else ``SOP_API_COMPUTE``, else 1 (a turn is CPU work
    and a worker runs Python on one core at a time; turns waiting on a tool, a model or the memory service
    give their slot up, see :mod:`core.shared.concurrency`)."""
    raw = (value if value is not None else os.environ.get(ENV_COMPUTE, "")).strip() or "1"
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if slots < 1:
        raise UserInputError(f"{ENV_COMPUTE} takes a whole number of turns, at least 1; got {raw!r}")
    return slots

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def workspace_name(root: Path) -> str:
    """The name a workspace is served under: its folder's name."""
    return root.resolve().name


@dataclass
class Served:
    """The engines of one worker process: one per workspace, built once."""

    roots: dict[str, Path]
    default: str
    engines: dict[str, Any] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    sops: dict[str, list[str]] = field(default_factory=dict)
    error: str = ""
    ready: threading.Event = field(default_factory=threading.Event)
    build: Callable[[Path, Any], Any] | None = None  # (root, loaded workspace) -> engine; default build_orchestrator
    gate: TurnGate = field(default_factory=lambda: TurnGate(1))  # turns computing at once in this worker

    def load(self) -> None:
        """Build every engine (the embedding model is shared); a failure is kept for ``/ready``."""
        from core.engine.build import build_orchestrator, load_workspace
        from core.retrieval.embedding import CachedEmbedder, shared_model
        from core.shared.resident import give_back

        try:
            for name, root in self.roots.items():
                ws = load_workspace(root, CachedEmbedder(shared_model(), root / ".state" / "embeddings",
                                                         max_memory=WORKER_VECTORS))
                self.engines[name] = (self.build or (lambda r, w: build_orchestrator(r, loaded=w)))(root, ws)
                self.titles[name] = ws.files.config.name
                self.sops[name] = [s.id for s in ws.sops]
            give_back()  # what parsing, embedding and indexing freed goes back to the system, not the worker
            self.ready.set()
        except (SopError, OSError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.error("the API cannot serve: %s", self.error)

    def close(self) -> None:
        stores = []
        for orch in self.engines.values():
            orch.close()
            stores += [orch.store, orch.memory]
        for s in dict.fromkeys(stores):  # a store shared by several engines is closed once
            try:
                s.close()
            except Exception as exc:  # noqa: BLE001 - shutting down: logged, the rest still closed
                log.warning("closing %r: %s", s, exc)


class ApiError(Exception):
    """An error the API answers with its status and a JSON body."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def _error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}, **extra}


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 without being read whole (by
    its Content-Length, or as soon as a streamed body passes the limit)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._refuse(send)
            return
        chunks: list[bytes] = []  # read here, at most ``limit`` bytes, then handed to the app
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the client's disconnect

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(_error_body("body_too_large", f"the request body is over {self.limit} bytes")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class MessageIn(BaseModel):
    text: str = Field(min_length=1, max_length=MAX_TEXT, description="what the customer wrote")
    customer_id: str | None = Field(default=None, max_length=128,
                                    description="the signed-in customer (their preferences carry over)")

class GoalOut(BaseModel):
    type: str
    status: str
    missing: list[str]
    next_question: str = ""

class ReplyOut(BaseModel):
    workspace: str
    session_id: str
    reply: str
    turn: int
    trace_id: str = Field(description="<workspace>/<session_id>/<turn>: GET .../traces/{turn}")
    active_goal: GoalOut | None
    stack: list[str]
    ended: bool
    attempts: int = Field(description="1, or more when the turn lost a commit race and was re-run")


def create_app(roots: list[Path] | None = None, *, token: str | None = None, max_body: int = MAX_BODY,
               load_in_background: bool = True, build: Callable[[Path, Any], Any] | None = None,
               compute: int | None = None) -> Any:
    """The FastAPI application for these workspaces (default: ``SOP_API_WORKSPACES``, else the current
    folder). ``token`` (default ``SOP_API_TOKEN``) turns on bearer authentication; ``build`` makes each
    workspace's engine from its folder and loaded workspace (default :func:`core.engine.build.build_orchestrator`
    with the environment's stores); ``compute``: turns computed at once (default :func:`compute_slots`)."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    if roots is None:
        listed = [p for p in os.environ.get(ENV_WORKSPACES, "").split(os.pathsep) if p.strip()]
        roots = [Path(p) for p in listed] or [Path.cwd()]
    served = Served({workspace_name(r): r.resolve() for r in roots}, workspace_name(roots[0]), build=build,
                    gate=TurnGate(compute if compute is not None else compute_slots()))
    secret = token if token is not None else os.environ.get("SOP_API_TOKEN", "").strip()

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        if load_in_background:  # /health answers at once, /ready once the model and workspaces are loaded
            threading.Thread(target=served.load, name="load-workspaces", daemon=True).start()
        else:
            served.load()
        yield
        served.close()

    app = FastAPI(title="SOP Agent Playground API", version="1", lifespan=lifespan,
                  description="Send customer messages to the SOP agent; read sessions and their traces.")
    app.state.served = served
    app.state.secret = secret
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    app.middleware("http")(_auth)
    app.include_router(_router())
    return BodyLimit(app, max_body)


def _json(status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> Any:
    return JSONResponse(_error_body(code, message, **extra), status_code=status, headers=headers)


async def _api_error(_: Any, exc: Exception) -> Any:
    assert isinstance(exc, ApiError)
    return _json(exc.status, exc.code, exc.message, {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None,
                 **exc.extra)


async def _invalid_request(_: Any, exc: Exception) -> Any:
    """422 naming each field and its problem; 400 for a body that is not JSON at all."""
    problems = list(getattr(exc, "errors", lambda: [])())
    broken = next((p for p in problems if p.get("type") == "json_invalid"), None)
    if broken is not None:
        where = broken.get("loc", ["body", 0])[-1]
        return _json(400, "bad_json", f"the body is not valid JSON (at character {where}): "
                                      f"{broken.get('ctx', {}).get('error', 'malformed')}")
    fields = [{"field": ".".join(str(x) for x in p.get("loc", []) if x != "body"), "problem": p.get("msg", "")}
              for p in problems]
    message = "; ".join(f"{f['field'] or 'body'}: {f['problem']}" for f in fields)
    return _json(422, "invalid_request", message, fields=fields)


async def _http_error(_: Any, exc: Exception) -> Any:
    status = int(getattr(exc, "status_code", 500))
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    return _json(status, code, str(getattr(exc, "detail", exc)))


async def _unexpected(_: Any, exc: Exception) -> Any:
    log.exception("API request failed")
    return _json(500, "internal_error", f"the request failed: {type(exc).__name__}")


OPEN_PATHS = frozenset({"/health", "/ready", "/docs", "/openapi.json", "/docs/oauth2-redirect"})


async def _auth(request: Any, call_next: Any) -> Any:
    """With a token set, every route but health, readiness and the docs needs it as a bearer token."""
    secret = request.app.state.secret
    if secret and request.url.path not in OPEN_PATHS:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), secret.encode()):
            why = "missing bearer token" if not given else "wrong bearer token"
            return _json(401, "unauthorized", f"{why}: send Authorization: Bearer <SOP_API_TOKEN>",
                         {"WWW-Authenticate": "Bearer"})
    return await call_next(request)


def _engine(served: Served, workspace: str) -> Any:
    if workspace not in served.roots:
        raise ApiError(404, "unknown_workspace", f"no workspace {workspace!r}; served: {', '.join(served.roots)}")
    if not served.ready.is_set():
        raise ApiError(503, "not_ready", served.error or "the workspaces are still loading; try again shortly")
    return served.engines[workspace]


def _key(workspace: str, session_id: str) -> str:
    """The stored session id: the workspace's name before the caller's id."""
    if not NAME.match(session_id):
        raise ApiError(422, "invalid_session_id", "a session id is 1-128 letters, digits, '.', '_' or '-', "
                       f"starting with a letter or digit; got {session_id[:40]!r}")
    return f"{workspace}/{session_id}"


def _reply(served: Served, workspace: str, session_id: str, body: MessageIn) -> ReplyOut:
    orch = _engine(served, workspace)
    sid = _key(workspace, session_id)
    out = orch.respond(sid, body.text, body.customer_id)
    if not out.taken:
        raise ApiError(503, "try_again" if out.kind != "llm_unavailable" else "model_unavailable",
                       f"the message was not taken ({out.kind}); nothing changed: send it again", reply=out.reply)
    state = out.state
    goal = state.active_goal
    active = None if goal is None else GoalOut(type=goal.type, status=str(goal.status.value), missing=goal.missing,
                                               next_question=goal.next_question or "")
    stack = [state.goals[g].type for g in state.goal_stack if g in state.goals]
    return ReplyOut(workspace=workspace, session_id=session_id, reply=out.reply, turn=int(out.turn or 0),
                    trace_id=f"{sid}/{out.turn}", active_goal=active, stack=stack,
                    ended=goal is None and not stack, attempts=out.attempts)


def _served(request: Request) -> Served:
    return request.app.state.served  # type: ignore[no-any-return]


def _router() -> APIRouter:
    router = APIRouter()
    @router.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @router.get("/ready", tags=["service"])
    def ready(request: Request) -> Any:
        """Every workspace is loaded and the state store answers (503 until then); the turns this worker
        computes and holds in line now."""
        served = _served(request)
        if not served.ready.is_set():
            return _json(503, "not_ready", served.error or "loading the workspaces")
        try:
            for orch in served.engines.values():
                orch.store.load("__ready__")  # a round trip to the store
        except Exception as exc:  # noqa: BLE001 - reported as not ready
            return _json(503, "store_unavailable", f"the state store does not answer: {exc}")
        return JSONResponse({"status": "ready", "workspaces": list(served.roots),
                             "turns": {"computing": served.gate.computing, "waiting": served.gate.queued,
                                       "slots": served.gate.slots}})

    @router.get("/workspaces", tags=["workspaces"])
    def workspaces(request: Request) -> list[dict[str, Any]]:
        """The served workspaces, the default first."""
        served = _served(request)
        return [{"name": n, "title": served.titles.get(n, ""), "sops": served.sops.get(n, []),
                 "default": n == served.default} for n in served.roots]

    @router.post("/workspaces/{workspace}/sessions/{session_id}/messages", tags=["messages"])
    async def post_message(request: Request, workspace: str, session_id: str, body: MessageIn) -> ReplyOut:
        """Send one customer message to a session (created on its first message); the agent's reply."""
        served = _served(request)
        return await served.gate.run(_reply, served, workspace, session_id, body)

    @router.post("/sessions/{session_id}/messages", tags=["messages"])
    async def post_default(request: Request, session_id: str, body: MessageIn) -> ReplyOut:
        """Send a message to a session of the default workspace."""
        served = _served(request)
        return await served.gate.run(_reply, served, served.default, session_id, body)

    router.include_router(_session_routes())
    return router


def _session_routes() -> APIRouter:
    router = APIRouter()

    @router.get("/workspaces/{workspace}/sessions", tags=["sessions"])
    def sessions(request: Request, workspace: str) -> list[dict[str, Any]]:
        """The workspace's sessions, newest first."""
        prefix = f"{workspace}/"
        rows = _engine(_served(request), workspace).store.list_sessions()
        return [{**r, "session_id": r["session_id"][len(prefix):]} for r in rows if r["session_id"].startswith(prefix)]

    @router.get("/workspaces/{workspace}/sessions/{session_id}", tags=["sessions"])
    def session(request: Request, workspace: str, session_id: str) -> dict[str, Any]:
        """A session's state: goals, the stack, slots, history, version."""
        state = _engine(_served(request), workspace).load_state(_key(workspace, session_id))
        if state is None:
            raise ApiError(404, "unknown_session", f"no session {session_id!r} in workspace {workspace!r}")
        return dict(state.model_dump(mode="json"))

    @router.get("/workspaces/{workspace}/sessions/{session_id}/traces", tags=["sessions"])
    def traces(request: Request, workspace: str, session_id: str) -> list[dict[str, Any]]:
        """Every turn's trace (what was read, decided, called and why), by turn."""
        found = _engine(_served(request), workspace).store.traces(_key(workspace, session_id))
        if not found:
            raise ApiError(404, "unknown_session", f"no session {session_id!r} in workspace {workspace!r}")
        return list(found)

    @router.get("/workspaces/{workspace}/sessions/{session_id}/traces/{turn}", tags=["sessions"])
    def trace(request: Request, workspace: str, session_id: str, turn: int) -> dict[str, Any]:
        """One turn's trace."""
        found = [t for t in _engine(_served(request), workspace).store.traces(_key(workspace, session_id))
                 if t.get("turn") == turn]
        if not found:
            raise ApiError(404, "unknown_trace", f"no turn {turn} in session {session_id!r}")
        return dict(found[0])

    return router


def app_from_env() -> Any:
    """The application for ``uvicorn --factory`` in each worker (workspaces from ``SOP_API_WORKSPACES``).
    A worker loads its workspaces before it takes its first connection, so with several workers on one
    port no request reaches one still loading."""
    return create_app(load_in_background=False)


def _worker(host: str, port: int, log_level: str) -> None:
    """One API worker: its own listening socket on the shared port (SO_REUSEPORT, the kernel spreads the
    connections), made as a TCP socket so replies go out without Nagle's delay."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    config = uvicorn.Config("core.server.api:app_from_env", factory=True, log_level=log_level,
                            timeout_graceful_shutdown=10)
    uvicorn.Server(config).run(sockets=[sock])


def serve_workers(host: str, port: int, workers: int, log_level: str = "info") -> int:
    """Run ``workers`` API processes on one port until SIGINT/SIGTERM; a worker that dies is started again.
    Returns the exit code."""
    import multiprocessing as mp
    import signal
    import time

    ctx = mp.get_context("spawn")
    stopping = threading.Event()

    def start() -> Any:
        proc = ctx.Process(target=_worker, args=(host, port, log_level), daemon=False)
        proc.start()
        return proc

    def stop(*_: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    procs = [start() for _ in range(workers)]
    restarts, code = 0, 0
    try:
        while not stopping.is_set():
            for i, proc in enumerate(procs):
                if not proc.is_alive() and not stopping.is_set():
                    restarts += 1
                    if restarts > 3 * workers:  # not a crash now and then: it cannot run here (port taken, ...)
                        log.error("API workers keep exiting (last code %s): stopping", proc.exitcode)
                        stopping.set()
                        code = 1
                        break
                    log.warning("API worker %s exited with %s: starting another", proc.pid, proc.exitcode)
                    procs[i] = start()
            stopping.wait(0.5)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + 15
        for proc in procs:
            proc.join(max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
    return code
