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

Its parts: :mod:`core.server.served` (the engines a worker serves), :mod:`core.server.routes` (the routes),
:mod:`core.server.middleware` (what every request passes through) and :mod:`core.server.workers` (several
workers on one port).
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from core.server.middleware import BodyLimit, install
from core.server.routes import all_routes
from core.server.served import ENV_WORKSPACES, Served, compute_slots, workspace_name
from core.shared.concurrency import TurnGate

MAX_BODY = int(os.environ.get("SOP_API_MAX_BODY", str(64 * 1024)))


def create_app(roots: list[Path] | None = None, *, token: str | None = None, max_body: int = MAX_BODY,
               load_in_background: bool = True, build: Callable[[Path, Any], Any] | None = None,
               compute: int | None = None) -> Any:
    """The FastAPI application for these workspaces (default: ``SOP_API_WORKSPACES``, else the current
    folder). ``token`` (default ``SOP_API_TOKEN``) turns on bearer authentication; ``build`` makes each
    workspace's engine from its folder and loaded workspace (default :func:`core.engine.build.build_orchestrator`
    with the environment's stores); ``compute``: turns computed at once (default :func:`compute_slots`)."""
    from fastapi import FastAPI

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
    install(app)
    app.include_router(all_routes())
    return BodyLimit(app, max_body)


def app_from_env() -> Any:
    """The application for ``uvicorn --factory`` in each worker (workspaces from ``SOP_API_WORKSPACES``).
    A worker loads its workspaces before it takes its first connection, so with several workers on one
    port no request reaches one still loading."""
    return create_app(load_in_background=False)
