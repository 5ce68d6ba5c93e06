"""A Google Sheet inventory (store.yaml ``inventory.sheet`` without ``source``).

The sheet is read through the Google Sheets API v4 (``GET /v4/spreadsheets/{id}/values/{range}``), with an API
key (``key=``) or a service account's bearer token (its JSON key signed into a JWT and exchanged at its
``token_uri``). Credentials come only from the environment. Each copy read is kept in the workspace's
``.state/sheets/``: the workspace reads that copy while it is younger than ``refresh_minutes`` and asks the API
again after that. A read that fails (no key, an HTTP error, no answer before the deadline) keeps the copy and
reports a warning naming the sheet and what went wrong; with no copy at all it is an error, and the rest of
the workspace loads without the inventory.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.shared.errors import Location, WorkspaceError
from core.shared.problems import Problem
from core.workspace.config import InventoryDecl
from core.workspace.paths import MAX_FILE_BYTES, view_home

BASE_URL_ENV = "SOP_SHEETS_BASE_URL"  # another address for the API (a local stand-in in tests)
DEFAULT_BASE_URL = "https://sheets.googleapis.com"
API_KEY_ENV = "SOP_SHEETS_API_KEY"
FALLBACK_KEY_ENV = "GOOGLE_API_KEY"
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
TIMEOUT_ENV = "SOP_SHEETS_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
SCOPE = "https://www.googleapis.com/auth/spreadsheets.readonly"
KEY_HINT = (f"set {API_KEY_ENV} to a Google API key (for a sheet anyone with the link may view) or "
            f"{CREDENTIALS_ENV} to a service account's JSON key file (share the sheet with its client_email), "
            "then start the playground again")
CACHE_DIR = Path(".state") / "sheets"
MAX_ROWS = 200_000
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


@dataclass(frozen=True)
class SheetCopy:
    """What ``.state/sheets/<id>_<tab>.json`` holds: the last copy read (None: none yet), when it was read,
    and the last attempt to read it again with what went wrong ("" when it worked)."""

    values: list[list[str]] | None
    fetched_at: float = 0.0
    checked_at: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class SheetStatus:
    """A Google Sheet inventory as the Store page shows it."""

    label: str
    url: str
    worksheet: str
    refresh_minutes: float
    fetched_at: float | None  # when the copy in use was read (epoch seconds); None: no copy
    rows: int
    credentials: str  # the environment variable the key came from; "" when none is set
    missing_key: str  # what to set when no key is (else "")
    error: str  # what went wrong the last time it was read ("" when it worked)


class SheetFeed:
    """One Google Sheet and its copy in ``.state/sheets/``: read from the copy while it is fresh, from the API
    after ``refresh_s`` seconds (or when forced), the copy kept when that fails. Thread-safe."""

    def __init__(self, ref: SheetRef, state_dir: Path, refresh_s: float, *, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.ref = ref
        digest = hashlib.sha1(ref.worksheet.encode()).hexdigest()[:10]
        self.path = state_dir / "sheets" / f"{ref.spreadsheet}_{digest}.json"
        self.refresh_s = max(0.0, refresh_s)
        self.env = env
        self.clock = clock
        self._lock = threading.Lock()
        self._copy = self._load()
        self._client: SheetsClient | None = None

    @classmethod
    def for_inventory(cls, decl: InventoryDecl, root: Path, *, env: Mapping[str, str] | None = None,
                      clock: Callable[[], float] = time.time) -> SheetFeed:
        """The feed of a workspace's Google Sheet inventory; its copy lives in the workspace's ``.state/`` (the
        workspace's own when ``root`` is a staged view of it)."""
        return cls(SheetRef(decl.google_sheet, decl.worksheet), view_home(root) / ".state",
                   decl.refresh_minutes * 60, env=env, clock=clock)

    @property
    def label(self) -> str:
        """How problems name the sheet."""
        return self.ref.label

    def due(self) -> bool:
        """Whether the next :meth:`read` asks the API: no copy yet, or the interval passed since the last try."""
        copy = self._copy
        return copy.values is None or self.clock() - max(copy.fetched_at, copy.checked_at) >= self.refresh_s

    def read(self, force: bool = False) -> tuple[list[list[str]], list[Problem]]:
        """The sheet's rows: the copy while it is fresh, else (or when ``force``) a new copy from the API.

        Returns:
            The rows, and a warning when they are an older copy because reading the sheet failed.

        Raises:
            WorkspaceError: the sheet cannot be read and there is no copy of it yet.
        """
        with self._lock:
            self._copy = self._load()  # another process may have read it meanwhile
            if not force and not self.due():
                return self._copy.values or [], self._standing()
            try:
                values = self._fetch()
            except SheetError as exc:
                self._save(SheetCopy(self._copy.values, self._copy.fetched_at, self.clock(), str(exc)))
                if self._copy.values is None:
                    raise WorkspaceError(f"cannot read the sheet: {exc}", Location(self.label)) from exc
                return self._copy.values, self._standing()
            now = self.clock()
            self._save(SheetCopy(values, now, now, ""))
            return values, []

    def _fetch(self) -> list[list[str]]:
        credentials = Credentials.from_env(self.env)
        if credentials is None:
            raise SheetError(f"no key for the Google Sheets API: {KEY_HINT}")
        if self._client is None or self._client.credentials != credentials:
            self._client = SheetsClient(credentials, env=self.env)
        return self._client.values(self.ref)

    def _standing(self) -> list[Problem]:
        """The warning that the rows are an older copy, while the last failure stands."""
        copy = self._copy
        if not copy.error or copy.values is None:
            return []
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(copy.fetched_at))
        return [Problem(self.label, 0, "warning", f"cannot read the sheet again ({copy.error}); using the copy "
                                                  f"read at {when}")]

    def status(self) -> SheetStatus:
        """Where the sheet stands: its copy, the credentials in use, the last failure."""
        copy = self._copy = self._load()
        try:
            credentials = Credentials.from_env(self.env)
        except SheetError as exc:
            origin, missing, error = CREDENTIALS_ENV, "", str(exc)
        else:
            origin = credentials.origin if credentials else ""
            missing, error = ("" if credentials else KEY_HINT), copy.error
        return SheetStatus(self.label, self.ref.url, self.ref.worksheet, self.refresh_s / 60,
                           copy.fetched_at if copy.values is not None else None,
                           sum(1 for row in (copy.values or [])[1:] if any(c.strip() for c in row)), origin,
                           missing, error)

    def _load(self) -> SheetCopy:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            values = data.get("values")
            rows = [[str(c) for c in row] for row in values] if isinstance(values, list) else None
            return SheetCopy(rows, float(data.get("fetched_at") or 0), float(data.get("checked_at") or 0),
                             str(data.get("error") or ""))
        except (OSError, ValueError, TypeError, AttributeError):
            return SheetCopy(None)  # none yet, or unreadable: read the sheet again

    def _save(self, copy: SheetCopy) -> None:
        """Write the copy atomically (a reader in another process sees the old file or the new one)."""
        self._copy = copy
        data = {"spreadsheet": self.ref.spreadsheet, "worksheet": self.ref.worksheet, "range": self.ref.a1_range,
                "fetched_at": copy.fetched_at, "checked_at": copy.checked_at, "error": copy.error,
                "values": copy.values}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)


def sheet_table(values: list[list[str]], label: str) -> tuple[pd.DataFrame, list[int]]:
    """The sheet's rows as a table of strings (its first row names the columns; empty rows left out), with
    each table row's row number in the sheet.

    Raises:
        WorkspaceError: naming the sheet and row: no header row, a column with no name or a name twice, more
            rows than MAX_ROWS.
    """
    header = [c.strip() for c in (values[0] if values else [])]
    while header and not header[-1]:
        header.pop()
    if not header:
        raise WorkspaceError("the sheet is empty: its first row must name the columns", Location(label, 1))
    blank = [i for i, c in enumerate(header) if not c]
    if blank:
        raise WorkspaceError(f"column {_letters(blank[0])} has no name in the header row", Location(label, 1))
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise WorkspaceError(f"duplicate column name(s) in the header row: {', '.join(dupes)}", Location(label, 1))
    width = len(header)
    rows, lines = [], []
    for number, row in enumerate(values[1:], start=2):
        if any(c.strip() for c in row):
            rows.append((row + [""] * width)[:width])
            lines.append(number)
    if len(rows) > MAX_ROWS:
        raise WorkspaceError(f"the sheet has more than {MAX_ROWS:,} items; the limit is {MAX_ROWS:,}", Location(label))
    return pd.DataFrame(rows, columns=header, dtype=str), lines


def _letters(index: int) -> str:
    """A column's letters (0 -> A, 26 -> AA)."""
    out = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        out = chr(65 + rest) + out
    return out
