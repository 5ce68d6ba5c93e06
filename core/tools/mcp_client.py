"""A synchronous handle on one MCP server: its own event-loop thread, one persistent session.

The engine is synchronous; the MCP SDK is asynchronous. Each server gets one background thread running
an asyncio loop, and on it one session (the SDK's ``Client``) that stays open between calls. Callers in
any thread wait on it with a deadline: starting and listing (``start_timeout_s``) and each call (the
gateway's). A session that breaks (the server process exits, the HTTP endpoint goes away) is dropped and
the next call starts a new one. Connections are shared within a process (every load of one workspace
reuses its server) and kept apart between processes (a forked worker starts its own); they are closed
when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from core.shared.errors import ToolError

MAX_LIST_PAGES = 50
CLOSE_WAIT_S = 3.0
START_MARGIN_S = 0.3  # a start inside a call gives up this long before the call's deadline
STDERR_TAIL = 300  # characters of a server's stderr quoted when it fails


class McpUnavailable(Exception):
    """A server could not be started, reached or listed (the message says why, for a lint problem)."""


@dataclass(frozen=True)
class Target:
    """Everything that identifies one server connection (resolved: no ``${NAME}`` left)."""

    label: str  # the store.yaml entry, for messages
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    stamp: tuple[tuple[str, int], ...] = ()  # the server's own files and their modification times


@dataclass
class RemoteTool:
    """One tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass
class _Session:
    """One attempt at a live session: ready once connected and listed, dead once it broke or closed."""

    ready: threading.Event = field(default_factory=threading.Event)
    client: Any = None
    tools: list[RemoteTool] = field(default_factory=list)
    error: str = ""
    dead: bool = False
    stop: asyncio.Event | None = None
    task: concurrent.futures.Future[None] | None = None
    errlog: TextIO | None = None
    http_error: str = ""  # the last HTTP error status the endpoint answered (the SDK keeps only "an error")


class McpConnection:
    """A server reached through the MCP SDK, used from synchronous code."""

    def __init__(self, target: Target, start_timeout_s: float) -> None:
        self.target = target
        self.start_timeout_s = start_timeout_s
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp {target.label}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ public
    def list_tools(self, timeout_s: float | None = None) -> list[RemoteTool]:
        """The server's tools, listed afresh (starting the server when no session is live).

        Raises:
            McpUnavailable: it could not be started or did not answer in time.
        """
        wait = min(timeout_s or self.start_timeout_s, self.start_timeout_s)
        deadline = time.monotonic() + wait
        session, fresh = self._ensure(wait)
        if not fresh:  # a session started earlier: its listing may be out of date
            try:
                session.tools = self._wait(self._list(session.client), deadline - time.monotonic())
            except concurrent.futures.TimeoutError:
                raise McpUnavailable(f"did not list its tools within {wait:g} s") from None
            except Exception as exc:  # noqa: BLE001 - any SDK or transport failure: the session is gone
                self._drop(session)
                raise McpUnavailable(f"stopped answering ({describe(exc)})") from exc
        return list(session.tools)

    def call(self, name: str, args: dict[str, Any], meta: dict[str, Any], timeout_s: float) -> Any:
        """Call the server's tool ``name`` and return the SDK's result, within ``timeout_s``.

        Raises:
            ToolError: ``timeout`` past the deadline; ``failure`` when the server cannot be started or stops
                during the call (it is started again on the next call).
        """
        deadline = time.monotonic() + timeout_s
        try:
            session, _ = self._ensure(self.start_wait(timeout_s))
        except McpUnavailable as exc:
            raise ToolError(f"the MCP server {self.target.label!r} is not available: {exc}", "failure",
                            public=False, sent=False) from exc
        future = asyncio.run_coroutine_threadsafe(
            session.client.call_tool(name, args, meta=meta or None), self._loop)
        try:
            return future.result(max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            future.cancel()  # the SDK tells the server the request is cancelled
            raise ToolError(f"timed out after {timeout_s:g}s", "timeout", public=False) from None
        except Exception as exc:  # noqa: BLE001 - the transport broke or the server went away mid-call
            words = self._last_words(session)
            self._drop(session)
            raise ToolError(f"the MCP server {self.target.label!r} stopped during the call ({describe(exc)}"
                            f"{words}); it is started again on the next call", "failure", public=False) from exc

    def start_wait(self, timeout_s: float) -> float:
        """How long a call with ``timeout_s`` may wait for the server to start: its start deadline, ended early
        enough that "not available" is said before the call's own deadline (nothing was sent then)."""
        return min(self.start_timeout_s, max(0.05, timeout_s - START_MARGIN_S))

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """End the session (the server process with it) and the loop thread."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            self._drop(session)
            if session.task is not None:
                try:
                    session.task.result(wait_s)
                except BaseException:  # noqa: BLE001 - closing: whatever it ended with is no one's concern now
                    pass
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(wait_s)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()

    # ------------------------------------------------------------------ sessions
    def _ensure(self, timeout_s: float) -> tuple[_Session, bool]:
        """A live, listed session: the current one, or a new one started now (then ``True``).

        Raises:
            McpUnavailable: the server could not be started, or did not answer within ``timeout_s``.
        """
        with self._lock:
            session, fresh = self._session, False
            if session is None or session.dead:
                session, fresh = _Session(), True
                self._session = session
                session.task = asyncio.run_coroutine_threadsafe(self._run(session), self._loop)
        if not session.ready.wait(timeout_s):
            words = self._last_words(session)
            self._drop(session)
            raise McpUnavailable(f"did not answer within {timeout_s:g} s{words}")
        if session.error or session.dead:
            raise McpUnavailable(session.error or "its session has just ended")
        return session, fresh

    def _drop(self, session: _Session) -> None:
        """Mark a session dead and end it in the background (closing its transport and process)."""
        with self._lock:
            if self._session is session:
                self._session = None
        session.dead = True
        if session.client is not None and session.stop is not None:  # connected: leave the session in order
            self._loop.call_soon_threadsafe(session.stop.set)
        elif session.task is not None:  # still connecting: cancel that (the SDK ends the process it started)
            session.task.cancel()

    async def _run(self, session: _Session) -> None:
        """Hold one session open until it is dropped: connect, list, mark ready, wait."""
        session.stop = asyncio.Event()
        try:
            async with self._client(session) as client:
                session.client = client
                session.tools = await self._list(client)
                session.ready.set()
                await session.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting caller; cancellation ends it quietly
            if not session.ready.is_set():
                session.error = f"{describe(exc)}{self._last_words(session)}"
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            session.dead = True
            session.ready.set()
            if session.errlog is not None:
                session.errlog.close()

    @asynccontextmanager
    async def _client(self, session: _Session) -> AsyncIterator[Any]:
        """The SDK client for the target, connected: a command over stdio, or a URL over streamable HTTP."""
        from mcp import Client, StdioServerParameters

        t = self.target
        if t.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async def note(response: httpx2.Response) -> None:
                if response.status_code >= 400:
                    session.http_error = f"HTTP {response.status_code} {response.reason_phrase}".strip()

            async with httpx2.AsyncClient(headers=dict(t.headers), timeout=httpx2.Timeout(30.0, read=300.0),
                                          event_hooks={"response": [note]}) as http:
                async with Client(streamable_http_client(t.url, http_client=http), cache=None) as client:
                    yield client
            return
        from mcp.client.stdio import stdio_client

        session.errlog = _errlog()
        params = StdioServerParameters(command=t.command, args=list(t.args), env=dict(t.env), cwd=t.cwd or None)
        async with Client(stdio_client(params, errlog=session.errlog), cache=None) as client:
            yield client

    @staticmethod
    async def _list(client: Any) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                hints = tool.annotations
                tools.append(RemoteTool(tool.name, tool.description or "", dict(tool.input_schema or {}),
                                        dict(tool.output_schema) if tool.output_schema else None,
                                        hints.read_only_hint if hints else None,
                                        hints.destructive_hint if hints else None))
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _wait(self, coro: Any, timeout_s: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(max(0.0, timeout_s))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    @staticmethod
    def _last_words(session: _Session) -> str:
        """The end of what a stdio server wrote to stderr, or the HTTP error an endpoint answered, quoted for a
        message ('' when nothing)."""
        if session.http_error:
            return f"; the endpoint answered {session.http_error}"
        log = session.errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            text = log.read()[-STDERR_TAIL:]
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return f"; it wrote: {lines[-1]!r}" if lines else ""


def _errlog() -> TextIO:
    """A file for a server's stderr: opened for appending, so the server's writes always land at its end
    however far it is read; unlinked at once (it goes when it is closed)."""
    fd, path = tempfile.mkstemp(prefix="mcp-stderr-", suffix=".log")
    os.close(fd)
    log = open(path, "a+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed with its session
    os.unlink(path)
    return log


def describe(exc: BaseException) -> str:
    """One line saying why a session or call failed (the first real error inside SDK exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    if isinstance(exc, FileNotFoundError):
        return f"cannot start it: no such program {exc.filename or ''}".rstrip()
    if isinstance(exc, PermissionError):
        return f"cannot start it: {exc.strerror or exc} {exc.filename or ''}".rstrip()
    text = str(exc).strip() or type(exc).__name__
    if text == "Connection closed":
        return "the server closed the connection (its process ended or refused the protocol)"
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


_CONNECTIONS: dict[Target, McpConnection] = {}
_LATEST: dict[tuple[str, str], Target] = {}  # (workspace, entry) -> the target in use
_OWNER = os.getpid()
_REGISTRY_LOCK = threading.Lock()


def connection(target: Target, start_timeout_s: float, owner: str = "") -> McpConnection:
    """The process's connection to ``target`` (made on first use). ``owner`` names the workspace entry: when its
    target changes (a new command, an edited server file), the old connection is closed."""
    global _OWNER
    stale: McpConnection | None = None
    with _REGISTRY_LOCK:
        if os.getpid() != _OWNER:  # a forked worker: the parent's loop threads do not exist here
            _CONNECTIONS.clear()
            _LATEST.clear()
            _OWNER = os.getpid()
        key = (owner, target.label)
        previous = _LATEST.get(key)
        if owner and previous is not None and previous != target:
            stale = _CONNECTIONS.pop(previous, None)
        _LATEST[key] = target
        conn = _CONNECTIONS.get(target)
        if conn is None:
            conn = _CONNECTIONS[target] = McpConnection(target, start_timeout_s)
        conn.start_timeout_s = start_timeout_s
    if stale is not None and stale is not conn:
        threading.Thread(target=stale.close, name=f"mcp close {target.label}", daemon=True).start()
    return conn


@atexit.register
def close_all() -> None:
    """Close every connection of this process (their server processes end with them)."""
    with _REGISTRY_LOCK:
        conns = list(_CONNECTIONS.values()) if os.getpid() == _OWNER else []
        _CONNECTIONS.clear()
        _LATEST.clear()
    closers = [threading.Thread(target=c.close, daemon=True) for c in conns]
    for th in closers:
        th.start()
    for th in closers:
        th.join(CLOSE_WAIT_S + 1)
