"""A reply of the local test servers that stand in for a workspace's HTTP endpoints: JSON with its length."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, code: int, data: Any) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
