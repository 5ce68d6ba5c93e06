"""The gateway: permissions, validation, timeouts, error normalisation, workspace-declared tools."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.tools.base import ToolSpec
from core.tools.declared import HttpTool, PythonTool, TableTool
from core.tools.gateway import ToolGateway, ToolScript
from core.workspace.config import AgentDecl, ToolDecl
from core.workspace.params import Param
from tests.tools.jsonhttp import send_json


class Slow:
    spec = ToolSpec("slow.tool", "sleeps", [Param("x", True)], timeout_s=0.2)

    def run(self, args: dict[str, Any]) -> Any:
        time.sleep(2)
        return "late"


class Boom:
    spec = ToolSpec("boom.tool", "raises", [Param("x")])

    def run(self, args: dict[str, Any]) -> Any:
        raise RuntimeError("kaboom")


def _gw(**tools: Any) -> ToolGateway:
    agents = {"sales": AgentDecl("sales", ["sales.*"], list(tools))}
    return ToolGateway(tools, agents)


def test_denied_outside_permission_matrix() -> None:
    gw = ToolGateway({"boom.tool": Boom()}, {"sales": AgentDecl("sales", ["sales.*"], [])})
    call = gw.call("sales", "boom.tool", {"x": 1})
    assert not call.ok and call.error_kind == "denied"


def test_timeout_and_crash_become_observations() -> None:
    gw = _gw(**{"slow.tool": Slow(), "boom.tool": Boom()})
    t0 = time.perf_counter()
    slow = gw.call("sales", "slow.tool", {})
    assert time.perf_counter() - t0 < 1.5
    assert slow.error_kind == "timeout"
    boom = gw.call("sales", "boom.tool", {"x": 1})
    assert boom.error_kind == "failure" and "kaboom" in boom.error


def test_argument_validation() -> None:
    gw = _gw(**{"boom.tool": Boom()})
    assert gw.call("sales", "boom.tool", {}).error_kind == "bad_args"
    assert "unknown argument" in gw.call("sales", "boom.tool", {"x": 1, "y": 2}).error


def test_script_consumed_in_order() -> None:
    gw = _gw(**{"boom.tool": Boom()})
    script = ToolScript({"boom.tool": [{"error": "invalid id"}, {"timeout": True}, {"result": 7}]})
    kinds = [gw.call("sales", "boom.tool", {"x": 1}, script=script) for _ in range(4)]
    assert [c.error_kind for c in kinds[:2]] == ["invalid_input", "timeout"]
    assert kinds[2].result == 7 and kinds[3].result == 7


def test_table_tool(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text("order_id,status\nORD-1,shipped\n")
    tool = TableTool(ToolDecl("orders.get", params=[Param("order_id")], table="orders.csv",
                              key={"order_id": "order_id"}, not_found="invalid order id"), tmp_path)
    gw = _gw(**{"orders.get": tool})
    assert gw.call("sales", "orders.get", {"order_id": "ord-1"}).result == {"order_id": "ORD-1", "status": "shipped"}
    miss = gw.call("sales", "orders.get", {"order_id": "ORD-9"})
    assert miss.error_kind == "invalid_input" and miss.error == "invalid order id"


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append({"path": self.path, "body": body})
        if "404" in self.path:
            self._send(404, {"error": "no such order"})
        elif "500" in self.path:
            self._send(500, {"error": "database down"})
        else:
            self._send(200, {"cancelled": True})

    def _send(self, code: int, data: dict[str, Any]) -> None:
        send_json(self, code, data)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture()
def server() -> Any:
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_http_tool(server: HTTPServer) -> None:
    port = server.server_address[1]
    decl = ToolDecl("orders.cancel", params=[Param("order_id"), Param("reason")],
                    http={"method": "POST", "url": f"http://127.0.0.1:{port}/orders/{{order_id}}/cancel"})
    gw = _gw(**{"orders.cancel": HttpTool(decl)})
    ok = gw.call("sales", "orders.cancel", {"order_id": "A1", "reason": "late"})
    assert ok.ok and ok.result == {"cancelled": True}
    assert _Handler.seen[-1] == {"path": "/orders/A1/cancel", "body": {"reason": "late"}}
    assert gw.call("sales", "orders.cancel", {"order_id": "404", "reason": "x"}).error_kind == "invalid_input"
    assert gw.call("sales", "orders.cancel", {"order_id": "500", "reason": "x"}).error_kind == "failure"


def test_python_tool(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        "def create_ticket(listing_id):\n    if listing_id == 'bad':\n        raise ValueError('invalid listing')\n"
        "    return {'ticket': 'T-' + listing_id}\n")
    tool = PythonTool(ToolDecl("seller.create_ticket", params=[Param("listing_id")], python="tools.py:create_ticket"),
                      tmp_path)
    gw = _gw(**{"seller.create_ticket": tool})
    assert gw.call("sales", "seller.create_ticket", {"listing_id": "L1"}).result == {"ticket": "T-L1"}
    assert gw.call("sales", "seller.create_ticket", {"listing_id": "bad"}).error_kind == "invalid_input"
