"""The API's routes (:mod:`core.server.api`): health and readiness, the served workspaces, a customer's message
(one turn, computed through the worker's gate), and sessions with their traces."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from core.engine.orchestrator import MAX_MESSAGE_CHARS
from core.server.middleware import ApiError, json_error
from core.server.served import Served

MAX_TEXT = MAX_MESSAGE_CHARS  # a message the engine reads whole
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


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


def all_routes() -> APIRouter:
    """Every route of the API."""
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
            return json_error(503, "not_ready", served.error or "loading the workspaces")
        try:
            for orch in served.engines.values():
                orch.store.load("__ready__")  # a round trip to the store
        except Exception as exc:  # noqa: BLE001 - reported as not ready
            return json_error(503, "store_unavailable", f"the state store does not answer: {exc}")
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
