"""Fern & Kettle's order desk as an MCP server (stdio): the shop's order system as the agent sees it.

Started by the engine from store.yaml (``tools: orders: {mcp: {command: python, args: [orders_server.py]}}``);
it reads the orders from data/orders.csv and keeps each conversation's changes (a cancellation, a new
address) apart by the ``sessionId`` the engine puts in every request's ``_meta``. Run it alone with
``python orders_server.py`` to talk MCP over stdin/stdout.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

HERE = Path(__file__).resolve().parent
ORDERS = HERE / os.environ.get("ORDERS_CSV", "data/orders.csv")
CALL_LOG = os.environ.get("ORDERS_CALL_LOG", "")  # a file that gets one JSON line per call (tests read it)
OrderId = Annotated[str, Field(pattern=r"^[A-Za-z]{2}-\d{4}$", description="an order number like FK-1042")]

server = MCPServer("fern-kettle-orders", instructions="Order look-ups and changes for Fern & Kettle.")
_changes: dict[tuple[str, str], dict[str, Any]] = {}  # (session, order) -> fields this conversation changed


def _orders() -> dict[str, dict[str, str]]:
    with ORDERS.open(encoding="utf-8", newline="") as fh:
        return {row["order_id"].upper(): row for row in csv.DictReader(fh)}


def _session(ctx: Context) -> str:
    meta = ctx.request_context.meta or {}
    return str(meta.get("sessionId") or "")


def _log(tool: str, ctx: Context, **args: Any) -> None:
    if CALL_LOG:
        meta = {k: v for k, v in (ctx.request_context.meta or {}).items() if not k.startswith("io.")}
        with open(CALL_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "args": args, "meta": meta, "server": os.getpid()}) + "\n")


def _order(order_id: str, ctx: Context) -> dict[str, Any]:
    row = _orders().get(order_id.strip().upper())
    if row is None:
        raise ToolError(f"invalid order number {order_id}: there is no such order")
    return {**row, **_changes.get((_session(ctx), row["order_id"]), {})}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def find_order(order_id: OrderId, ctx: Context) -> dict[str, Any]:
    """An order's status, items, total, carrier, tracking number and expected delivery date."""
    _log("find_order", ctx, order_id=order_id)
    return _order(order_id, ctx)


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def cancel_order(order_id: OrderId, ctx: Context, reason: str = "") -> dict[str, Any]:
    """Cancel an order that has not shipped; the payment is refunded."""
    _log("cancel_order", ctx, order_id=order_id, reason=reason)
    order = _order(order_id, ctx)
    if order["status"] != "processing":
        raise ToolError(f"order {order['order_id']} is {order['status']} and cannot be cancelled")
    _changes.setdefault((_session(ctx), order["order_id"]), {})["status"] = "cancelled"
    return {"cancelled": True, "order_id": order["order_id"], "refund_amount": order["total"]}


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def change_address(order_id: OrderId, new_address: Annotated[str, Field(min_length=8)],
                   ctx: Context) -> dict[str, Any]:
    """Send an order that has not shipped to another address."""
    _log("change_address", ctx, order_id=order_id, new_address=new_address)
    order = _order(order_id, ctx)
    if order["status"] != "processing":
        raise ToolError(f"order {order['order_id']} is {order['status']}: its address cannot change")
    _changes.setdefault((_session(ctx), order["order_id"]), {})["address"] = new_address
    return {"updated": True, "order_id": order["order_id"], "address": new_address}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def export_orders(ctx: Context) -> list[dict[str, str]]:
    """Every order (for the shop's staff; the store does not give it to the agent)."""
    _log("export_orders", ctx)
    return list(_orders().values())


if __name__ == "__main__":
    server.run()
