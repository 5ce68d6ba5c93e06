"""An MCP server for tests/tools/test_mcp.py, run as a real child process.

``python mcp_test_server.py`` serves stdio; ``python mcp_test_server.py http PORT`` serves streamable HTTP on
127.0.0.1:PORT and refuses (401) every request whose ``Authorization`` is not ``Bearer $MCP_TEST_TOKEN``.
Every call it receives is appended to the file ``$MCP_TEST_LOG`` (one JSON line: tool, args, _meta).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

server = MCPServer("test-desk")


def _log(tool: str, ctx: Context, **args: Any) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        meta = {k: v for k, v in (ctx.request_context.meta or {}).items() if not k.startswith("io.")}
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "args": args, "meta": meta}) + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(ticket: Annotated[str, Field(pattern=r"^T-\d+$")], ctx: Context,
           size: Annotated[int, Field(ge=1, le=5)] = 1) -> dict[str, Any]:
    """Look up a ticket."""
    _log("lookup", ctx, ticket=ticket, size=size)
    if ticket == "T-0":
        raise ToolError(f"invalid ticket {ticket}")
    return {"ticket": ticket, "state": "open", "size": size}


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def close_ticket(ticket: str, ctx: Context) -> str:
    """Close a ticket."""
    _log("close_ticket", ctx, ticket=ticket)
    return f"closed {ticket}"


@server.tool()
def crash(ticket: str, ctx: Context) -> str:
    """Ends the server's process in the middle of the call."""
    _log("crash", ctx, ticket=ticket)
    print("the ticket store is gone", os.environ.get("MCP_TEST_SECRET", ""), file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def slow(ticket: str, ctx: Context) -> str:
    """Answers after 3 s."""
    _log("slow", ctx, ticket=ticket)
    time.sleep(3)
    return "late"


def _guarded(app: Any, token: str) -> Any:
    async def guard(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"no token"})
                return
        await app(scope, receive, send)

    return guard


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        app = _guarded(server.streamable_http_app(), os.environ.get("MCP_TEST_TOKEN", ""))
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
