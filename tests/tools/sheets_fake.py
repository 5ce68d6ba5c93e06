"""A local stand-in for the Google Sheets API v4 and Google's OAuth token endpoint, on 127.0.0.1, speaking
their wire formats: ``GET /v4/spreadsheets/{id}/values/{range}`` answers ``{"range", "majorDimension":
"ROWS", "values"}`` (each row cut after its last filled cell, trailing empty rows left out, no ``values`` at
all for an empty range), errors are ``{"error": {"code", "message", "status"}}``, and ``POST /token`` takes a
service account's signed JWT (RS256, checked against its public key) for a bearer token."""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from core.playground.uploads import replace_top_level_block
from tests.tools.jsonhttp import send_json

SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


# a spreadsheet the tests serve, and a workspace whose inventory it is
SHEET = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-Q"
LABEL = f"Google Sheet {SHEET} (Stock)"
ROWS = [
    ["Item code", "Product", "Type", "Maker", "Price (THB)", "Qty", "Colour"],
    ["M1", "Viper Mini", "Mouse", "Razer", "1,290", "4", "Black"],
    ["M2", "G305", "Mouse", "Logitech", "1,190", "0", ""],  # a row ending in an empty cell comes back shorter
    [],  # an empty row in the middle: no item
    ["K1", "Alloy Core", "Keyboard", "HyperX", "call us", "7", "Red"],
]
STORE = f"""name: Sheet Shop
currency: THB
inventory:
  sheet: https://docs.google.com/spreadsheets/d/{SHEET}/edit#gid=0
  worksheet: Stock
  columns: {{sku: Item code, name: Product, category: Type, brand: Maker, price: Price (THB), stock: Qty}}
  attributes: [Colour]
  refresh_minutes: 5
agents:
  sales: {{goals: "sales.*", tools: [inventory.query]}}
"""


def sheet_store(root: Path) -> None:
    """Point a copy of the demo workspace's inventory at the sheet (the rest of store.yaml as it is)."""
    text = (root / "store.yaml").read_text(encoding="utf-8")
    block = STORE[STORE.index("inventory:"):STORE.index("agents:")]
    (root / "store.yaml").write_text(replace_top_level_block(text, "inventory", {}).replace("inventory: {}\n", block),
                                     encoding="utf-8")


def serving_the_sheet() -> FakeSheets:
    """A stand-in serving the spreadsheet: a first tab, then "Stock" with ROWS (a copy the test may change)."""
    fake = FakeSheets()
    fake.sheets[SHEET] = {"Summary": [["nothing", "here"]], "Stock": [list(r) for r in ROWS]}
    return fake


@dataclass
class ServiceAccount:
    """A service account's key pair and the JSON key file Google hands out for it."""

    email: str = "inventory-reader@shop-project.iam.gserviceaccount.com"
    key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))

    def json_key(self, token_uri: str) -> dict[str, str]:
        pem = self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()).decode()
        return {"type": "service_account", "project_id": "shop-project", "private_key_id": "k1",
                "private_key": pem, "client_email": self.email, "client_id": "1", "token_uri": token_uri}


class FakeSheets:
    """The API with spreadsheets held in memory: ``sheets[id][tab]`` is a list of rows (the first tab first).

    ``api_key`` is the key it accepts; ``account`` the service account it issues tokens to; ``shared_with``
    the accounts each spreadsheet is shared with; ``fail`` makes every values call answer that HTTP status;
    ``delay_s`` holds every answer back; ``drip`` sends the body one byte at a time. ``requests`` lists what
    was asked (method and path, the key left out).
    """

    def __init__(self) -> None:
        self.sheets: dict[str, dict[str, list[list[Any]]]] = {}
        self.api_key = "test-key-123"
        self.account: ServiceAccount | None = None
        self.shared_with: dict[str, set[str]] = {}
        self.fail: int | None = None
        self.delay_s = 0.0
        self.drip = False
        self.requests: list[str] = []
        self._tokens: set[str] = set()
        self._counter = itertools.count(1)
        self._closing = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ the endpoints
    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or self.account is None:
            return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."}
        public = self.account.key.public_key()
        try:
            claims = jwt.decode(form.get("assertion", ""), public, algorithms=["RS256"],
                                audience=f"{self.url}/token")
        except jwt.PyJWTError as exc:
            return 400, {"error": "invalid_grant", "error_description": f"Invalid JWT Signature. ({exc})"}
        if claims.get("iss") != self.account.email or claims.get("scope") != SCOPE:
            return 400, {"error": "invalid_scope", "error_description": "Invalid OAuth scope or ID token audience."}
        token = f"ya29.fake-{next(self._counter)}"
        self._tokens.add(token)
        return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}

    def values(self, sheet_id: str, rng: str, query: dict[str, str], auth: str) -> tuple[int, dict[str, Any]]:
        who = ""
        if auth.startswith("Bearer "):
            if auth[7:] not in self._tokens:
                return _error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
            who = self.account.email if self.account else ""
        elif "key" not in query:
            return _error(403, "The request is missing a valid API key.")
        elif query["key"] != self.api_key:
            return _error(400, "API key not valid. Please pass a valid API key.")
        if self.fail:
            return _error(self.fail, {403: "The caller does not have permission", 404: "Requested entity was not "
                                      "found.", 500: "Internal error encountered."}.get(self.fail, "Error."))
        tabs = self.sheets.get(sheet_id)
        if tabs is None:
            return _error(404, "Requested entity was not found.")
        if who and who not in self.shared_with.get(sheet_id, set()):
            return _error(403, "The caller does not have permission")
        name = rng.split("!")[0]
        name = name[1:-1].replace("''", "'") if name.startswith("'") else name
        if ":" in name or not name:  # A1 notation with no tab: the first tab
            name = next(iter(tabs))
        if name not in tabs:
            return _error(400, f"Unable to parse range: {rng}")
        rows = [list(r) for r in tabs[name]]
        for r in rows:
            while r and r[-1] in ("", None):
                r.pop()
        while rows and not rows[-1]:
            rows.pop()
        width = max((len(r) for r in rows), default=0)
        body: dict[str, Any] = {"range": f"{name}!A1:{chr(64 + max(width, 1))}{max(len(rows), 1)}",
                                "majorDimension": "ROWS"}
        if rows:
            body["values"] = rows
        return 200, body


def _error(code: int, message: str) -> tuple[int, dict[str, Any]]:
    return code, {"error": {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}}


def _handler(fake: FakeSheets) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parts.query))
            fake.requests.append(f"GET {urllib.parse.unquote(parts.path)}")
            prefix = "/v4/spreadsheets/"
            if not parts.path.startswith(prefix) or "/values/" not in parts.path:
                self._send(*_error(404, "Method not found."))
                return
            sheet_id, rng = parts.path[len(prefix):].split("/values/", 1)
            self._send(*fake.values(urllib.parse.unquote(sheet_id), urllib.parse.unquote(rng), query,
                                    self.headers.get("Authorization", "")))

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            fake.requests.append(f"POST {self.path}")
            self._send(*(fake.token(form) if self.path == "/token" else _error(404, "Not found.")))

        def _send(self, code: int, data: dict[str, Any]) -> None:
            if fake.delay_s and fake._closing.wait(fake.delay_s):
                return
            if not fake.drip:
                send_json(self, code, data)
                return
            raw = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            try:
                for i in range(len(raw)):
                    if fake._closing.is_set():
                        return
                    self.wfile.write(raw[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                return  # the client gave up (its deadline passed)

    return Handler
