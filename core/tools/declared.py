"""Tools a workspace declares in store.yaml: table lookups, HTTP endpoints, Python functions."""

from __future__ import annotations

import importlib.util
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import Location, ToolError, WorkspaceError
from core.tools.base import ToolSpec, classify_error
from core.tools.inventory import read_table
from core.workspace import ToolDecl


def _spec(decl: ToolDecl, side_effects: bool = False) -> ToolSpec:
    return ToolSpec(decl.name, decl.description or decl.name, list(decl.params), timeout_s=decl.timeout_s,
                    side_effects=side_effects)


class TableTool:
    """A low-code mock API: the row of a table whose key columns equal the params."""

    def __init__(self, decl: ToolDecl, root: Path) -> None:
        self.spec = _spec(decl)
        self.decl = decl
        self.frame = read_table(decl.table, root, decl.sheet)
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


class HttpTool:
    """A real endpoint: ``{param}`` fills the URL, the rest goes in the JSON body or the query."""

    def __init__(self, decl: ToolDecl) -> None:
        self.spec = _spec(decl, side_effects=str(decl.http.get("method", "GET")).upper() != "GET")
        if decl.http.get("timeout_s"):
            self.spec.timeout_s = float(decl.http["timeout_s"])
        self.decl = decl

    def run(self, args: dict[str, Any]) -> Any:
        method = str(self.decl.http.get("method", "GET")).upper()
        url = str(self.decl.http["url"])
        rest = dict(args)
        for key in list(rest):
            token = "{" + key + "}"
            if token in url:
                url = url.replace(token, urllib.parse.quote(str(rest.pop(key)), safe=""))
        body = None
        if method in ("POST", "PUT", "PATCH"):
            body = json.dumps(rest).encode()
        elif rest:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(rest)
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   **{str(k): str(v) for k, v in (self.decl.http.get("headers") or {}).items()}}
        req = urllib.request.Request(url, data=body, method=method, headers=headers)
        return self._send(req)

    def _send(self, req: urllib.request.Request) -> Any:
        timeout = self.spec.timeout_s or 10
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - URL from the workspace owner
                raw = resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc.read().decode("utf-8", "replace")) or exc.reason
            kind = "invalid_input" if exc.code in (404, 422) else classify_error(str(detail))
            raise ToolError(f"HTTP {exc.code}: {detail}", kind) from exc
        except TimeoutError as exc:
            raise ToolError(f"timed out after {timeout:g}s", "timeout") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                raise ToolError(f"timed out after {timeout:g}s", "timeout") from exc
            raise ToolError(f"cannot reach {req.full_url}: {exc.reason}", "failure") from exc
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw


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
    """A function in a .py file of the workspace."""

    def __init__(self, decl: ToolDecl, root: Path) -> None:
        self.spec = _spec(decl, side_effects=True)
        self.decl = decl
        self.func = _load_function(decl, root)

    def run(self, args: dict[str, Any]) -> Any:
        try:
            return self.func(**args)
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - a workspace function may raise anything; it becomes an observation
            msg = f"{type(exc).__name__}: {exc}"
            raise ToolError(msg, classify_error(msg)) from exc


def _load_function(decl: ToolDecl, root: Path) -> Callable[..., Any]:
    file, _, name = decl.python.partition(":")
    path = (root / file).resolve()
    where = Location("store.yaml", decl.line)
    if not path.exists():
        raise WorkspaceError(f"tool {decl.name!r}: {file} does not exist", where)
    spec = importlib.util.spec_from_file_location(f"workspace_tools_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise WorkspaceError(f"tool {decl.name!r}: cannot load {file}", where)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise WorkspaceError(f"tool {decl.name!r}: {file} failed to import: {exc}", where) from exc
    func = getattr(module, name, None)
    if not callable(func):
        raise WorkspaceError(f"tool {decl.name!r}: {file} has no function {name!r}", where)
    return func  # type: ignore[no-any-return]


def build_declared(decl: ToolDecl, root: Path) -> Any:
    """The tool object for a store.yaml declaration."""
    if decl.table:
        return TableTool(decl, root)
    if decl.http:
        return HttpTool(decl)
    return PythonTool(decl, root)
