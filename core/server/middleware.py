"""What every API request passes through (:mod:`core.server.api`): the body limit, the bearer token, and
errors answered as ``{"error": {"code", "message"}}`` with their HTTP status."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


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


def json_error(status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> Any:
    return JSONResponse(_error_body(code, message, **extra), status_code=status, headers=headers)


async def _api_error(_: Any, exc: Exception) -> Any:
    assert isinstance(exc, ApiError)
    return json_error(exc.status, exc.code, exc.message, {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None,
                 **exc.extra)


async def _invalid_request(_: Any, exc: Exception) -> Any:
    """422 naming each field and its problem; 400 for a body that is not JSON at all."""
    problems = list(getattr(exc, "errors", lambda: [])())
    broken = next((p for p in problems if p.get("type") == "json_invalid"), None)
    if broken is not None:
        where = broken.get("loc", ["body", 0])[-1]
        return json_error(400, "bad_json", f"the body is not valid JSON (at character {where}): "
                                      f"{broken.get('ctx', {}).get('error', 'malformed')}")
    fields = [{"field": ".".join(str(x) for x in p.get("loc", []) if x != "body"), "problem": p.get("msg", "")}
              for p in problems]
    message = "; ".join(f"{f['field'] or 'body'}: {f['problem']}" for f in fields)
    return json_error(422, "invalid_request", message, fields=fields)


async def _http_error(_: Any, exc: Exception) -> Any:
    status = int(getattr(exc, "status_code", 500))
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    return json_error(status, code, str(getattr(exc, "detail", exc)))


async def _unexpected(_: Any, exc: Exception) -> Any:
    log.exception("API request failed")
    return json_error(500, "internal_error", f"the request failed: {type(exc).__name__}")


OPEN_PATHS = frozenset({"/health", "/ready", "/docs", "/openapi.json", "/docs/oauth2-redirect"})


async def _auth(request: Any, call_next: Any) -> Any:
    """With a token set, every route but health, readiness and the docs needs it as a bearer token."""
    secret = request.app.state.secret
    if secret and request.url.path not in OPEN_PATHS:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), secret.encode()):
            why = "missing bearer token" if not given else "wrong bearer token"
            return json_error(401, "unauthorized", f"{why}: send Authorization: Bearer <SOP_API_TOKEN>",
                         {"WWW-Authenticate": "Bearer"})
    return await call_next(request)


def install(app: Any) -> None:
    """The error handlers and the bearer check on a FastAPI app."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    app.middleware("http")(_auth)
