"""Reading a Google Sheet through the Sheets API v4 (:mod:`core.tools.sheets` keeps the copy): the sheet
asked for, the credentials the environment holds (an API key or a service account), and the two calls, each
under one deadline."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.workspace.paths import MAX_FILE_BYTES

BASE_URL_ENV = "SOP_SHEETS_BASE_URL"  # another address for the API (a local stand-in in tests)
DEFAULT_BASE_URL = "https://sheets.googleapis.com"
API_KEY_ENV = "SOP_SHEETS_API_KEY"
FALLBACK_KEY_ENV = "GOOGLE_API_KEY"
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
TIMEOUT_ENV = "SOP_SHEETS_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"
CHUNK = 64 * 1024


class SheetError(Exception):
    """A read of the sheet that failed: the HTTP status (0 when there was no answer) and what was said."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SheetRef:
    """One worksheet of one spreadsheet."""

    spreadsheet: str
    worksheet: str = ""  # "": the first tab

    @property
    def label(self) -> str:
        """How problems name the sheet (their ``file``)."""
        return f"Google Sheet {self.spreadsheet}" + (f" ({self.worksheet})" if self.worksheet else "")

    @property
    def url(self) -> str:
        """The sheet in a browser."""
        return f"https://docs.google.com/spreadsheets/d/{self.spreadsheet}/edit"

    @property
    def a1_range(self) -> str:
        """The range asked for: the whole tab, by name (quoted as A1 notation wants), else the first tab's
        columns."""
        if not self.worksheet:
            return "A:ZZZ"
        return "'" + self.worksheet.replace("'", "''") + "'"


@dataclass(frozen=True)
class Credentials:
    """How the API is called: an API key, or a service account (its JSON key file's fields)."""

    origin: str  # the environment variable they came from
    api_key: str = ""
    account: Mapping[str, str] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Credentials | None:
        """The credentials the environment holds: SOP_SHEETS_API_KEY, else the service account of
        GOOGLE_APPLICATION_CREDENTIALS, else GOOGLE_API_KEY; None when it holds none.

        Raises:
            SheetError: GOOGLE_APPLICATION_CREDENTIALS names a file that is missing or is not a service
                account's JSON key.
        """
        env = os.environ if env is None else env
        if env.get(API_KEY_ENV, "").strip():
            return cls(API_KEY_ENV, api_key=env[API_KEY_ENV].strip())
        path = env.get(CREDENTIALS_ENV, "").strip()
        if path:
            return cls(CREDENTIALS_ENV, account=_service_account(path))
        if env.get(FALLBACK_KEY_ENV, "").strip():
            return cls(FALLBACK_KEY_ENV, api_key=env[FALLBACK_KEY_ENV].strip())
        return None


def _service_account(path: str) -> dict[str, str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SheetError(f"{CREDENTIALS_ENV} ({path}) cannot be read as a JSON key file: {exc}") from exc
    need = ("client_email", "private_key", "token_uri")
    missing = [k for k in need if not isinstance(data, dict) or not isinstance(data.get(k), str) or not data[k]]
    if missing or data.get("type", "service_account") != "service_account":
        raise SheetError(f"{CREDENTIALS_ENV} ({path}) is not a service account's JSON key "
                         f"(missing: {', '.join(missing) or 'type service_account'})")
    return {k: str(v) for k, v in data.items() if isinstance(v, str)}


class SheetsClient:
    """The two calls a sheet inventory needs, each under one deadline: a token for a service account and the
    values of a range."""

    def __init__(self, credentials: Credentials, *, base_url: str | None = None, timeout_s: float | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.credentials = credentials
        self.base_url = (base_url or env.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL).rstrip("/")
        self.timeout_s = timeout_s if timeout_s is not None else _timeout(env)
        self._token: tuple[str, float] | None = None  # (access token, monotonic time it expires)

    def values(self, ref: SheetRef) -> list[list[str]]:
        """The cells of the range, row by row, as text (rows as long as their last filled cell).

        Raises:
            SheetError: no answer before the deadline, an HTTP error (its status and the API's message), or
                an answer that is not the values JSON.
        """
        rng = urllib.parse.quote(ref.a1_range, safe="")
        query: dict[str, str] = {"majorDimension": "ROWS", "valueRenderOption": "FORMATTED_VALUE"}
        headers = {"Accept": "application/json"}
        if self.credentials.api_key:
            query["key"] = self.credentials.api_key
        else:
            headers["Authorization"] = f"Bearer {self._access_token()}"
        url = (f"{self.base_url}/v4/spreadsheets/{urllib.parse.quote(ref.spreadsheet, safe='')}/values/{rng}?"
               + urllib.parse.urlencode(query))
        status, raw = _exchange("GET", url, None, headers, self.timeout_s)
        data = _json(raw, status)
        if status >= 400:
            raise SheetError(self._explain(status, _api_error(data, raw), ref), status)
        if not isinstance(data, dict) or not isinstance(data.get("values", []), list):
            raise SheetError(f"the API's answer holds no 'values' list (HTTP {status})", status)
        rows = data.get("values", [])
        if str(data.get("majorDimension", "ROWS")) != "ROWS":
            raise SheetError(f"the API answered by {data.get('majorDimension')}, not by rows", status)
        return [[_cell(c) for c in row] if isinstance(row, list) else [_cell(row)] for row in rows]

    def _explain(self, status: int, said: str, ref: SheetRef) -> str:
        """The API's own words, and what usually fixes that status."""
        hint = ""
        if status == 403 and self.credentials.account:
            hint = f"; share the sheet with {self.credentials.account['client_email']}"
        elif status == 403:
            hint = ("; share the sheet with 'anyone with the link' and check that the key's project has the "
                    "Sheets API enabled")
        elif status == 404:
            hint = "; check the spreadsheet id"
        elif status == 400 and "parse range" in said.lower() and ref.worksheet:
            hint = f"; is there a worksheet (tab) named {ref.worksheet!r}?"
        return f"HTTP {status} {said}{hint}"

    def _access_token(self) -> str:
        """A bearer token for the service account, reused until a minute before it expires."""
        if self._token is not None and time.monotonic() < self._token[1]:
            return self._token[0]
        import jwt

        account = self.credentials.account or {}
        now = int(time.time())
        claims = {"iss": account["client_email"], "scope": SCOPE, "aud": account["token_uri"],
                  "iat": now, "exp": now + 3600}
        key_id = {"kid": account["private_key_id"]} if account.get("private_key_id") else None
        try:
            assertion = jwt.encode(claims, account["private_key"], algorithm="RS256", headers=key_id)
        except (ValueError, TypeError, jwt.PyJWTError) as exc:
            raise SheetError(f"{CREDENTIALS_ENV}: the service account's private_key cannot sign ({exc})") from exc
        body = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       "assertion": assertion}).encode()
        status, raw = _exchange("POST", account["token_uri"], body,
                                {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
                                self.timeout_s)
        data = _json(raw, status)
        if status >= 400 or not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise SheetError(f"the service account's token was refused: HTTP {status} {_api_error(data, raw)}",
                             status)
        ttl = float(data.get("expires_in") or 3600)
        self._token = (data["access_token"], time.monotonic() + max(ttl - 60, 0))
        return data["access_token"]


def _timeout(env: Mapping[str, str]) -> float:
    try:
        value = float(env.get(TIMEOUT_ENV, "") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return "" if value is None else str(value)


def _json(raw: bytes, status: int) -> Any:
    try:
        return json.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
    except json.JSONDecodeError as exc:
        if status >= 400:
            return None  # an error page that is not JSON: its text is the message
        raise SheetError(f"the API did not answer with JSON (HTTP {status}): {raw[:80]!r}", status) from exc


def _api_error(data: Any, raw: bytes) -> str:
    """The message of an error body: the API's ``{"error": {code, message, status}}`` or OAuth's
    ``{"error", "error_description"}``, else the body's first words."""
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return " ".join(str(p) for p in (err.get("status"), err.get("message")) if p) or json.dumps(err)[:200]
        if isinstance(err, str):
            return err + (f": {data['error_description']}" if data.get("error_description") else "")
    return " ".join(raw.decode("utf-8", "replace").split())[:200]


def _exchange(method: str, url: str, body: bytes | None, headers: dict[str, str],
              timeout_s: float) -> tuple[int, bytes]:
    """One HTTP request under one deadline: connecting, sending, the headers and every byte of the answer.
    A server that answers slowly or a byte at a time is cut off when it passes (its connection closed).

    Raises:
        SheetError: no answer before the deadline, the host cannot be reached, or the answer is too big.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SheetError(f"{parts.scheme}://{parts.netloc} is not an http(s) address")
    where = f"{parts.scheme}://{parts.netloc}"
    deadline = time.monotonic() + timeout_s
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=timeout_s)
    watchdog = threading.Timer(timeout_s, _cut, args=(conn,))
    watchdog.daemon = True
    watchdog.start()
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, body=body, headers=headers)
        resp = conn.getresponse()
        out = bytearray()
        while chunk := resp.read1(CHUNK):
            out += chunk
            if time.monotonic() >= deadline:
                raise TimeoutError("the deadline passed while reading the answer")
            if len(out) > MAX_FILE_BYTES:
                raise SheetError(f"{where} answered with more than {MAX_FILE_BYTES // 2**20} MB")
        return resp.status, bytes(out)
    except (OSError, http.client.HTTPException) as exc:
        if time.monotonic() >= deadline or isinstance(exc, TimeoutError | socket.timeout):
            raise SheetError(f"{where} did not answer within {timeout_s:g} s") from exc
        raise SheetError(f"cannot reach {where}: {exc}") from exc
    finally:
        watchdog.cancel()
        conn.close()


def _cut(conn: http.client.HTTPConnection) -> None:
    """Close a connection whose request passed its deadline, waking the thread blocked on it."""
    if conn.sock is not None:
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
