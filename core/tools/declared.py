"""Tools a workspace declares in store.yaml: table lookups, HTTP endpoints, Python functions."""

from __future__ import annotations

import ast
import hashlib
import http.client
import importlib.util
import inspect
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from core.shared.errors import Location, ToolError, WorkspaceError
from core.shared.problems import Problem
from core.tools.base import CONVERSATION_PARAMS, ToolSpec, classify_error
from core.tools.held import HeldTool
from core.tools.inventory_files import read_table
from core.workspace.config import ToolDecl
from core.workspace.paths import workspace_path
from core.workspace.variables import expand, expand_headers, why_missing


def _spec(decl: ToolDecl, side_effects: bool = False) -> ToolSpec:
    """The tool's spec; ``side_effects`` as store.yaml declares it, else the default of its kind."""
    changes = decl.side_effects if decl.side_effects is not None else side_effects
    return ToolSpec(decl.name, decl.description or decl.name, list(decl.params), timeout_s=decl.timeout_s,
                    side_effects=changes)


class TableTool:
    """A low-code mock API: the row of a table whose key columns equal the params."""

    def __init__(self, decl: ToolDecl, root: Path) -> None:
        self.spec = _spec(decl)
        self.decl = decl
        self.frame = read_table(decl.table, root, decl.sheet, f"tools.{decl.name}.table")
        self.frame.columns = [str(c).strip() for c in self.frame.columns]
        missing = [c for c in decl.key.values() if c not in self.frame.columns]
        if missing:
            raise WorkspaceError(f"tool {decl.name!r}: key column(s) {missing} not in {decl.table}",
                                 Location("store.yaml", decl.line))

    def run(self, args: dict[str, Any]) -> Any:
        mask = None
        for param, col in self.decl.key.items():
            want = str(args.get(param, "")).strip().lower()
            hit = self.frame[col].astype(str).str.strip().str.lower() == want
            mask = hit if mask is None else mask & hit
        rows = self.frame[mask] if mask is not None else self.frame.iloc[0:0]
        if rows.empty:
            raise ToolError(self.decl.not_found, "invalid_input")
        return {k: _plain(v) for k, v in rows.iloc[0].to_dict().items()}


def _plain(value: Any) -> Any:
    text = str(value)
    try:
        num = float(text)
        return int(num) if num.is_integer() and "." not in text else num
    except ValueError:
        return text


MAX_RESPONSE_BYTES = 1_000_000  # an HTTP tool's answer larger than this is an error (http.max_bytes)
CHUNK = 65536
SESSION_HEADER = "X-Session-Id"  # the conversation an HTTP call serves
CUSTOMER_HEADER = "X-Customer-Id"  # its customer, when the session has one


def _header_value(value: str) -> str:
    """``value`` as it may stand in a header: printable ASCII as it is, anything else percent-encoded."""
    if all(" " <= ch <= "~" for ch in value):
        return value
    return urllib.parse.quote(value, safe=" !#$&'()*+,/:;=?@[]~")


class HttpTool:
    """A real endpoint: ``{param}`` fills the URL, the rest goes in the JSON body or the query.

    One deadline covers the whole call (connecting, sending, the headers and every byte of the body): a
    server that answers slowly or a byte at a time is cut off when it passes, its connection closed so no
    thread stays stuck on it. The answer must be JSON of at most ``max_bytes``; a side-effecting call
    (any method but GET) carries an ``Idempotency-Key`` header, the same when a turn is re-run. Every call
    says which conversation it serves: ``X-Session-Id`` and, when the session has a customer,
    ``X-Customer-Id``."""

    takes_key = True
    takes_conversation = True
    takes_deadline = True

    def __init__(self, decl: ToolDecl) -> None:
        self.spec = _spec(decl, side_effects=str(decl.http.get("method", "GET")).upper() != "GET")
        if decl.http.get("timeout_s"):
            self.spec.timeout_s = float(decl.http["timeout_s"])
        self.decl = decl
        self.max_bytes = int(decl.http.get("max_bytes") or MAX_RESPONSE_BYTES)

    def run(self, args: dict[str, Any], key: str = "", session_id: str = "",
            customer_id: str | None = None, timeout_s: float | None = None) -> Any:
        method = str(self.decl.http.get("method", "GET")).upper()
        # ${NAME} from the environment first: the template's own, never anything a customer's value holds
        url, missing = expand(str(self.decl.http["url"]))
        configured, absent = expand_headers(self.decl.http.get("headers") or {})
        if missing or absent:
            raise ToolError(f"cannot call {self.spec.name}: {why_missing(missing + absent)}; nothing was sent",
                            "failure", public=False, sent=False)
        rest = dict(args)
        for name in list(rest):
            token = "{" + name + "}"
            if token in url:
                url = url.replace(token, urllib.parse.quote(str(rest.pop(name)), safe=""))
        body = None
        if method in ("POST", "PUT", "PATCH"):
            body = json.dumps(rest).encode()
        elif rest:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(rest)
        headers = {"Content-Type": "application/json", "Accept": "application/json", **configured}
        if key and self.spec.side_effects:
            headers["Idempotency-Key"] = key
        if session_id:
            headers[SESSION_HEADER] = _header_value(session_id)
        if customer_id:
            headers[CUSTOMER_HEADER] = _header_value(customer_id)
        return self._send(method, url, body, headers, timeout_s)

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
              timeout_s: float | None = None) -> Any:
        timeout = float(timeout_s or self.spec.timeout_s or 10)
        deadline = time.monotonic() + timeout
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolError(f"cannot call {url!r}: not an http(s) URL", "failure", public=False, sent=False)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = kind(parts.hostname, parts.port, timeout=timeout)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        try:  # nothing is sent before the connection is made: a failure here proves the request never left
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if time.monotonic() >= deadline or isinstance(exc, TimeoutError | socket.timeout):
                raise ToolError(f"timed out after {timeout:g}s connecting; nothing was sent", "timeout",
                                public=False, sent=False) from exc
            raise ToolError(f"cannot reach {parts.scheme}://{parts.netloc}: {exc}; nothing was sent", "failure",
                            public=False, sent=False) from exc
        fired = threading.Event()  # the watchdog cut the connection: what was read is not the whole answer
        watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _cut, args=(conn, fired))
        watchdog.daemon = True  # the deadline holds even for a dripping server
        watchdog.start()
        resp: http.client.HTTPResponse | None = None
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            raw = self._read(resp, deadline)
        except (OSError, http.client.HTTPException) as exc:
            if time.monotonic() >= deadline or isinstance(exc, TimeoutError | socket.timeout):
                raise ToolError(f"timed out after {timeout:g}s", "timeout", public=False) from exc
            raise ToolError(f"cannot reach {parts.scheme}://{parts.netloc}: {exc}", "failure", public=False) from exc
        except ValueError as exc:  # a header or URL http.client refuses, before anything is sent
            raise ToolError(f"cannot call {parts.scheme}://{parts.netloc}: {exc}", "failure", public=False,
                            sent=resp is None) from exc
        finally:
            watchdog.cancel()
            if resp is not None:
                resp.close()
            conn.close()
        if fired.is_set():  # cut at the deadline: the end of what was read is the cut, not the answer's end
            raise ToolError(f"timed out after {timeout:g}s", "timeout", public=False)
        text = raw.decode("utf-8", "replace")
        if resp.status >= 400:
            detail = _error_text(text) or resp.reason
            kind_ = "invalid_input" if resp.status in (400, 404, 409, 422) else classify_error(str(detail))
            raise ToolError(f"HTTP {resp.status}: {detail}", kind_, public=False)
        if not text.strip() and resp.status == 204:
            return {}
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolError(f"the service did not answer with JSON (HTTP {resp.status}, "
                            f"{resp.getheader('Content-Type') or 'no content type'}): {text[:80]!r}",
                            "failure", public=False) from exc

    def _read(self, resp: http.client.HTTPResponse, deadline: float) -> bytes:
        """The body, up to ``max_bytes``, read before the deadline."""
        length = resp.getheader("Content-Length")
        if length and length.isdigit() and int(length) > self.max_bytes:
            raise ToolError(f"the answer is {int(length):,} bytes, more than the {self.max_bytes:,} allowed",
                            "failure", public=False)
        out = bytearray()
        while True:
            if time.monotonic() >= deadline:
                raise TimeoutError("deadline passed while reading the answer")
            chunk = resp.read1(CHUNK)
            if not chunk:
                return bytes(out)
            out += chunk
            if len(out) > self.max_bytes:
                raise ToolError(f"the answer is more than the {self.max_bytes:,} bytes allowed", "failure",
                                public=False)


def _cut(conn: http.client.HTTPConnection, fired: threading.Event) -> None:
    """Close a connection whose call passed its deadline, waking the thread blocked on it (``fired`` says so)."""
    fired.set()
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _error_text(raw: str) -> str:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()[:300]
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            if key in data:
                return str(data[key])
    return str(data)[:300]


class PythonTool:
    """A function in a .py file inside the workspace: trusted code, run as the engine (README, SECURITY).

    A function with an ``idempotency_key`` parameter receives the key of the call (the same when a turn
    is re-run), to make a change at most once. One with a ``session_id`` and/or ``customer_id`` parameter
    receives the conversation's session id and customer id (``None`` when the session has no customer),
    to keep what it does for one conversation apart from the others; they are not params of the tool
    (not slots, never asked) unless store.yaml lists them, and then the call's own values are passed."""

    def __init__(self, decl: ToolDecl, root: Path) -> None:
        self.spec = _spec(decl, side_effects=True)
        self.decl = decl
        self.func = _load_function(decl, root)
        takes = _keyword_params(self.func)
        self.takes_key = "idempotency_key" in takes
        declared = {p.name for p in self.spec.params}
        self.conversation_params: tuple[str, ...] = tuple(
            n for n in CONVERSATION_PARAMS if n in takes and n not in declared)
        self.takes_conversation = bool(self.conversation_params)

    def run(self, args: dict[str, Any], key: str = "", session_id: str = "",
            customer_id: str | None = None) -> Any:
        kwargs = {**args, "idempotency_key": key} if self.takes_key and key else dict(args)
        given: dict[str, str | None] = {"session_id": session_id, "customer_id": customer_id or None}
        kwargs.update({n: given[n] for n in self.conversation_params})
        try:
            return self.func(**kwargs)
        except ToolError as exc:  # the function's own answer: it says the change failed, so its outcome is known
            exc.answered = True
            raise
        except Exception as exc:  # noqa: BLE001 - a workspace function may raise anything; it becomes an observation
            msg = f"{type(exc).__name__}: {exc}"
            raise ToolError(msg, classify_error(msg), public=False) from exc


def _keyword_params(func: Callable[..., Any]) -> set[str]:
    """The parameters ``func`` takes by name (``**kwargs`` names none)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


_MODULES: dict[Path, tuple[str, ModuleType]] = {}  # a workspace's .py file -> (its content's digest, its module)
_MODULES_LOCK = threading.Lock()


def _module(path: Path, decl: ToolDecl, file: str, where: Location) -> ModuleType:
    """The module of a workspace's .py file, run once while the file is unchanged: the functions of one file
    share its module (a back office keeping state in module variables sees one copy of them)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with _MODULES_LOCK:
        known = _MODULES.get(path)
        if known is not None and known[0] == digest:
            return known[1]
        spec = importlib.util.spec_from_file_location(f"workspace_tools_{abs(hash(str(path)))}", path)
        if spec is None or spec.loader is None:
            raise WorkspaceError(f"tool {decl.name!r}: cannot load {file}", where)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001
            raise WorkspaceError(f"tool {decl.name!r}: {file} failed to import: {exc}", where) from exc
        _MODULES[path] = (digest, module)
        return module


def _python_file(decl: ToolDecl, root: Path) -> Path:
    """The .py file of a Python tool, checked to be a file of the workspace.

    Raises:
        WorkspaceError: it leads outside the workspace or does not exist.
    """
    file = decl.python.partition(":")[0]
    where = Location("store.yaml", decl.line)
    try:  # no ".." out of it, no absolute path elsewhere, no symbolic link to a file elsewhere
        path = Path(os.path.normpath(workspace_path(root, file, f"tools.{decl.name}.python").absolute()))
    except WorkspaceError as exc:
        raise WorkspaceError(f"tool {decl.name!r}: {exc.message}; a Python tool must be a file of the workspace "
                             "(it runs as trusted code)", where) from None
    if not path.exists():
        raise WorkspaceError(f"tool {decl.name!r}: {file} does not exist", where)
    return path


def _load_function(decl: ToolDecl, root: Path) -> Callable[..., Any]:
    file, _, name = decl.python.partition(":")
    where = Location("store.yaml", decl.line)
    path = _python_file(decl, root)
    module = _module(path, decl, file, where)
    func = getattr(module, name, None)
    if not callable(func):
        raise WorkspaceError(f"tool {decl.name!r}: {file} has no function {name!r}", where)
    return func  # type: ignore[no-any-return]


def held_python(decl: ToolDecl, root: Path, reason: str) -> HeldTool:
    """A Python tool of a workspace that is not trusted: checked without running anything (the file is the
    workspace's, it parses, it defines the function at its top level), its calls refused with ``reason``.

    Raises:
        WorkspaceError: naming the file and what is wrong with it.
    """
    file, _, name = decl.python.partition(":")
    where = Location("store.yaml", decl.line)
    path = _python_file(decl, root)
    try:
        tree = ast.parse(path.read_bytes(), filename=file)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", 0) or 0
        raise WorkspaceError(f"tool {decl.name!r}: {file} is not valid Python (line {line}: "
                             f"{getattr(exc, 'msg', exc)})", where) from None
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    imported = {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
                for a in n.names}
    if name not in defined | assigned | imported:
        raise WorkspaceError(f"tool {decl.name!r}: {file} has no function {name!r}", where)
    return HeldTool(_spec(decl, side_effects=True), reason)


PROBE_TIMEOUT_S = 1.0  # how long lint waits for an HTTP tool's server to accept a connection


def unreachable_http(decls: Iterable[ToolDecl], timeout_s: float = PROBE_TIMEOUT_S) -> list[Problem]:
    """A lint warning for each HTTP tool whose server does not accept a connection now (one try per host and
    port; nothing is sent, not even a request line). The tool fails until its server answers; the rest of the
    workspace works. A URL whose ``${VAR}`` is not set is left to the call, which says so."""
    tried: dict[tuple[str, int], str] = {}
    out: list[Problem] = []
    for decl in decls:
        if not decl.http or not decl.http.get("url"):
            continue
        url, missing = expand(str(decl.http["url"]))
        parts = urllib.parse.urlsplit(url)
        if missing or not parts.hostname:
            continue
        where = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        if where not in tried:
            try:
                socket.create_connection(where, timeout=timeout_s).close()
                tried[where] = ""
            except OSError as exc:
                tried[where] = exc.strerror or type(exc).__name__
        if tried[where]:
            out.append(Problem("store.yaml", decl.line, "warning", f"tool {decl.name!r}: its server {where[0]}:"
                               f"{where[1]} does not answer ({tried[where]}). The tool fails until it answers; "
                               "the rest of the workspace works"))
    return out


def build_declared(decl: ToolDecl, root: Path, *, trusted: bool = True, reason: str = "") -> Any:
    """The tool object for a store.yaml declaration; a Python tool of a workspace not ``trusted`` is checked
    without being imported and refuses its calls (``reason`` says why)."""
    if decl.table:
        return TableTool(decl, root)
    if decl.http:
        return HttpTool(decl)
    if not trusted:
        return held_python(decl, root, reason)
    return PythonTool(decl, root)
