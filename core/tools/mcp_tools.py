"""The tools of MCP servers a workspace declares, as gateway tools.

At load each server is started (or reached) and listed within its start deadline; every tool it lists
(or the ``include``d ones) becomes a tool named ``<prefix>.<tool>`` whose params come from its input
schema (required or optional, typed). Calls pass the gateway like any tool's: permission, arguments
checked against the server's input schema before anything is sent, the call's deadline, side-effect
records, and the idempotency key in the request's ``_meta``. A server that cannot be started or reached
leaves a warning naming it: the rest of the workspace loads, and the tools SOPs name from it are off (an
``unavailable`` error: the request ends with one sentence) until it answers.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.shared.errors import ToolError
from core.shared.problems import Problem
from core.tools.base import ToolSpec, classify_error
from core.tools.held import UNAVAILABLE
from core.tools.mcp_client import McpConnection, McpUnavailable, RemoteTool, Target, connection
from core.workspace.config import StoreConfig, ToolDecl
from core.workspace.files import WorkspaceFiles
from core.workspace.gar_file import check_gar_params
from core.workspace.mcp import McpDecl, executable
from core.workspace.params import Param
from core.workspace.paths import leads_outside, view_origin
from core.workspace.variables import expand, expand_headers, why_missing

DEFAULT_CALL_TIMEOUT_S = 5.0  # when neither the gateway nor store.yaml gives one
META_KEY = "idempotencyKey"  # the request's _meta keys a server may read
META_SESSION, META_CUSTOMER = "sessionId", "customerId"
WRAPPED = "result"  # a server SDK's wrapping of a non-object return value


# ---------------------------------------------------------------------------------------------- schemas
def slot_type(prop: dict[str, Any]) -> str:
    """The slot type (core/workspace/slots.py) a JSON-schema property asks for, '' when none fits."""
    kind = _json_type(prop)
    values = prop.get("enum")
    if isinstance(values, list) and len(values) >= 2 and all(isinstance(v, str) and "," not in v for v in values):
        return f"one_of({', '.join(values)})"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "yes_no"
    fmt = prop.get("format")
    return {"email": "email", "date": "date"}.get(str(fmt), "") if kind == "string" else ""


def params_from_schema(schema: dict[str, Any]) -> list[Param]:
    """A tool's params from its input schema: each property, optional unless ``required``, typed."""
    props = schema.get("properties")
    required = set(schema.get("required") or [])
    if not isinstance(props, dict):
        return []
    return [Param(str(name), name not in required, slot_type(prop) if isinstance(prop, dict) else "")
            for name, prop in props.items()]


def _json_type(prop: dict[str, Any]) -> str:
    """The main JSON type of a property (``["string", "null"]`` and ``anyOf`` of a type and null included)."""
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "")
    if not kind:
        for option in prop.get("anyOf") or prop.get("oneOf") or []:
            if isinstance(option, dict) and option.get("type") not in (None, "null"):
                return _json_type(option)
    return str(kind or "")


def coerce(value: Any, prop: Any) -> Any:
    """A slot's value in the JSON type the schema asks for, when it converts without doubt ("2" -> 2)."""
    kind = _json_type(prop) if isinstance(prop, dict) else ""
    if isinstance(value, str):
        text = value.strip()
        if kind == "integer" and re.fullmatch(r"[-+]?\d+", text):
            return int(text)
        if kind == "number" and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)", text):
            num = float(text)
            return int(num) if num.is_integer() else num
        if kind == "boolean" and text.lower() in ("yes", "true", "no", "false"):
            return text.lower() in ("yes", "true")
    elif isinstance(value, bool):
        return value
    elif isinstance(value, int | float):
        if kind == "string":
            return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
    return value


@dataclass
class McpToolSpec(ToolSpec):
    """A tool spec whose arguments are also checked against the server's input JSON schema."""

    schema: dict[str, Any] = field(default_factory=dict)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Names, then values: an argument the schema does not take, a missing required one (``bad_args``: a
        mistake in the SOP or GAR), or a value it refuses (``invalid_input``: the customer's value is asked
        for again) is refused before anything is sent.

        Raises:
            ToolError: naming the argument and what the schema wants.
        """
        props = self.schema.get("properties")
        if not isinstance(props, dict):
            return {k: v for k, v in args.items() if v is not None}  # nothing listed yet to check against
        clean = {k: coerce(v, props.get(k)) for k, v in args.items() if v is not None}
        unknown = sorted(k for k in clean if k not in props)
        if unknown and self.schema.get("additionalProperties") is not True:
            raise ToolError(f"{self.name}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not in the "
                            f"MCP server's input schema (it takes {', '.join(props) or 'nothing'}); nothing was "
                            "sent", "bad_args", public=False)
        missing = [p.name for p in self.params if not p.optional and clean.get(p.name) in (None, "")]
        if missing:
            raise ToolError(f"{self.name}: missing required argument(s) {', '.join(missing)}; nothing was sent",
                            "bad_args", public=False)
        problem = _schema_problem(self.schema, clean)
        if problem:
            raise ToolError(f"{self.name}: invalid {problem}; nothing was sent", "invalid_input", public=False)
        return clean


def _schema_problem(schema: dict[str, Any], args: dict[str, Any]) -> str:
    """What the first value the schema refuses is and why ('' when all pass, or the schema is unusable)."""
    from jsonschema import exceptions, validators

    try:
        checker = validators.validator_for(schema)(schema)
        found = sorted(checker.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    except (exceptions.SchemaError, exceptions.UnknownType, TypeError, ValueError):
        return ""
    if not found:
        return ""
    first = found[0]
    where = ".".join(str(p) for p in first.absolute_path)
    return f"{where}: {first.message}" if where else first.message


def schema_problem(schema: dict[str, Any]) -> str:
    """Why a listed input schema cannot be used to check arguments ('' when it can)."""
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        return exc.message
    return ""


# ---------------------------------------------------------------------------------------------- tools
@dataclass
class McpServer:
    """A declared server and the connection to it (None when it cannot even be tried: a variable unset)."""

    decl: McpDecl
    conn: McpConnection | None
    why_not: str = ""


class McpTool:
    """One tool of an MCP server, called through the server's persistent session.

    ``remote`` is None for a tool an SOP names while its server could not be listed: it is looked up when
    called, if the server answers by then."""

    takes_key = True
    takes_conversation = True
    takes_deadline = True

    def __init__(self, name: str, server: McpServer, remote: RemoteTool | None) -> None:
        self.server = server
        self.remote = remote
        decl = server.decl
        self.remote_name = decl.remote_name(name) or name
        self.spec = _spec(name, decl, remote)

    def run(self, args: dict[str, Any], key: str = "", session_id: str = "", customer_id: str | None = None,
            timeout_s: float | None = None) -> Any:
        """Send the call (the gateway has checked it) and return what the tool answered.

        Raises:
            ToolError: the tool's own error (``invalid_input`` when it says the input is wrong), the server
                being unavailable or stopping mid-call (``failure``), or the deadline passing (``timeout``).
        """
        conn = self.server.conn
        if conn is None:  # never started: not trusted, or a variable it needs is not set
            raise ToolError(f"the MCP server {self.server.decl.name!r} is not available: {self.server.why_not}",
                            UNAVAILABLE, public=False, sent=False)
        timeout = timeout_s or self.spec.timeout_s or DEFAULT_CALL_TIMEOUT_S
        if self.remote is None:
            args = self._late_check(conn, args, timeout)
        meta: dict[str, Any] = {META_SESSION: session_id} if session_id else {}
        if key:
            meta[META_KEY] = key
        if customer_id:
            meta[META_CUSTOMER] = customer_id
        return _answer(conn.call(self.remote_name, args, meta, timeout), self.remote)

    def _late_check(self, conn: McpConnection, args: dict[str, Any], timeout: float) -> dict[str, Any]:
        """For a tool its server did not list at load: list it now and check the arguments against it."""
        try:
            listed = {t.name: t for t in conn.list_tools(conn.start_wait(timeout))}
        except McpUnavailable as exc:  # still not started: the tool is off, not tried again at once
            raise ToolError(f"the MCP server {self.server.decl.name!r} is not available: {exc}", UNAVAILABLE,
                            public=False, sent=False) from exc
        remote = listed.get(self.remote_name)
        if remote is None or not self.server.decl.exposes(self.remote_name):
            raise ToolError(f"the MCP server {self.server.decl.name!r} lists no tool {self.remote_name!r}",
                            "failure", public=False, sent=False)
        self.remote = remote
        self.spec = _spec(self.spec.name, self.server.decl, remote)
        return self.spec.validate(args)


def _spec(name: str, decl: McpDecl, remote: RemoteTool | None) -> McpToolSpec:
    if remote is None:
        return McpToolSpec(name, f"a tool of the MCP server {decl.name!r}", [], accepts_extra=True,
                           timeout_s=decl.timeout_s, side_effects=_side_effects(decl, name, None))
    return McpToolSpec(name, remote.description or name, params_from_schema(remote.input_schema),
                       timeout_s=decl.timeout_s, side_effects=_side_effects(decl, remote.name, remote),
                       schema=remote.input_schema)


def _side_effects(decl: McpDecl, remote_name: str, remote: RemoteTool | None) -> bool:
    """store.yaml's word (per tool, then for the server), else the tool's annotations: read-only tools change
    nothing; any other may (the MCP default), a destructive one surely does."""
    if remote_name in decl.side_effects_of:
        return decl.side_effects_of[remote_name]
    if decl.side_effects is not None:
        return decl.side_effects
    if remote is None:
        return True
    return bool(remote.destructive) or not remote.read_only


def _answer(result: Any, remote: RemoteTool | None) -> Any:
    """A ``CallToolResult`` as the engine's result: structured content, else JSON text, else the text.

    Raises:
        ToolError: when the tool reports an error (its text decides the kind: "invalid ..." is bad input).
    """
    text = "\n".join(str(getattr(c, "text", "")) for c in getattr(result, "content", None) or []
                     if getattr(c, "type", "") == "text").strip()
    if getattr(result, "is_error", False):
        message = text or "the tool reported an error"
        raise ToolError(message, classify_error(message), public=False)
    data = getattr(result, "structured_content", None)
    if data is not None:
        props = ((remote.output_schema or {}).get("properties") if remote else None) or {}
        if isinstance(data, dict) and set(data) == {WRAPPED} and set(props) <= {WRAPPED}:
            return data[WRAPPED]
        return data
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


# ---------------------------------------------------------------------------------------------- loading
def target_of(decl: McpDecl, root: Path) -> tuple[Target | None, str]:
    """The resolved connection target of a declaration, or None and why (a variable not set). A stdio server
    runs in the workspace folder; for a staged view of a workspace (a save being checked) that is the
    workspace itself, so the check reuses its server instead of starting another."""
    missing: list[str] = []

    def value(text: str) -> str:
        out, absent = expand(text)
        missing.extend(absent)
        return out

    env = tuple((k, value(v)) for k, v in decl.env.items())
    expanded, absent = expand_headers(decl.headers)
    missing.extend(absent)
    headers = tuple(expanded.items())
    url = value(decl.url)
    if missing:
        return None, why_missing(missing)
    home = view_origin(root)
    cwd = (home / decl.cwd) if decl.cwd else home
    if decl.url:
        return Target(decl.name, url=url, headers=headers), ""
    args = tuple(value(a) for a in decl.args)
    stamp = tuple((a, (cwd / a).stat().st_mtime_ns) for a in args if _is_file(cwd / a))
    return Target(decl.name, command=executable(decl.command), args=args, env=env, cwd=str(cwd.resolve()),
                  stamp=stamp), ""


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def build_mcp_tools(files: WorkspaceFiles, named: Iterable[str], *, trusted: bool = True,
                    reason: str = "") -> tuple[dict[str, McpTool], list[Problem]]:
    """The tools of every MCP server the workspace declares, and the problems found listing them.

    ``named``: the tool names the workspace's SOPs, GAR, agents and hand-off use; those of a server that
    cannot be listed still get a tool (which fails until the server answers), so the rest loads. For a
    workspace not ``trusted`` no server is started or called (no command run, no variable read into a
    header): the entries are checked as written and the named tools refuse their calls (``reason``).
    """
    tools: dict[str, McpTool] = {}
    problems: list[Problem] = []
    decls: dict[str, ToolDecl] = {}
    owner = str(view_origin(files.root))
    for decl in files.config.mcp.values():
        outside = leads_outside(view_origin(files.root), decl.cwd) if decl.cwd else None
        if outside is not None:
            problems.append(Problem("store.yaml", decl.line, "error", f"MCP server {decl.name!r}: cwd {decl.cwd!r} "
                                    f"leads outside the workspace (to {outside})"))
            continue
        if not trusted:
            problems += _unstarted_problems(decl)
            _held(McpServer(decl, None, reason), named, tools)
            continue
        target, why_not = target_of(decl, files.root)
        server = McpServer(decl, connection(target, decl.start_timeout_s, owner) if target else None, why_not)
        try:
            if server.conn is None:
                raise McpUnavailable(why_not)
            listed = server.conn.list_tools()
        except McpUnavailable as exc:
            server.why_not = server.why_not or str(exc)
            problems.append(Problem("store.yaml", decl.line, "warning", f"MCP server {decl.name!r} ({decl.where()}) "
                                    f"is not available: {exc}. Its tools fail until it answers; the rest of the "
                                    "workspace works"))
            _held(server, named, tools)
            continue
        problems += _listing_problems(decl, listed)
        for remote in listed:
            if decl.exposes(remote.name):
                name = decl.tool_name(remote.name)
                tools[name] = McpTool(name, server, remote)
                decls[name] = ToolDecl(name, remote.description, tools[name].spec.params, line=decl.line)
    problems += check_gar_params(files.gar, decls)
    return tools, problems


def _held(server: McpServer, named: Iterable[str], tools: dict[str, McpTool]) -> None:
    """A tool, not listed, for each name the workspace uses of a server that is not listed (it is tried when
    called, if the server can be by then)."""
    for name in sorted(set(named)):
        if server.decl.remote_name(name) is not None and name not in tools:
            tools[name] = McpTool(name, server, None)


def _unstarted_problems(decl: McpDecl) -> list[Problem]:
    """What can be checked of a server without starting or calling it: a command that is not found."""
    program = executable(decl.command)
    if decl.url or "${" in program or os.sep in program or shutil.which(program):
        return []  # a path is looked up where the server would run, only when it runs
    return [Problem("store.yaml", decl.line, "warning", f"MCP server {decl.name!r}: command {decl.command!r} is not "
                    "on PATH")]


def _listing_problems(decl: McpDecl, listed: list[RemoteTool]) -> list[Problem]:
    names = [t.name for t in listed]
    out: list[Problem] = []
    for wanted in decl.include:
        if wanted not in names:
            out.append(Problem("store.yaml", decl.line, "error", f"MCP server {decl.name!r}: include names "
                               f"{wanted!r}, which the server does not list{_near(wanted, names)} (it lists: "
                               f"{', '.join(names) or 'nothing'})"))
    for remote in listed:
        why = schema_problem(remote.input_schema) if decl.exposes(remote.name) else ""
        if why:
            out.append(Problem("store.yaml", decl.line, "warning", f"MCP server {decl.name!r}: the input schema of "
                               f"{remote.name!r} is not valid JSON Schema ({why}); only argument names are checked"))
    return out


def _near(word: str, options: list[str]) -> str:
    near = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def named_tools(files: WorkspaceFiles, sop_tools: Iterable[str]) -> set[str]:
    """Every tool name the workspace uses: GAR rows, SOP steps (``sop_tools``), agents' lists, the hand-off."""
    cfg = files.config
    out = {r.api for r in files.gar if r.api} | {t for t in sop_tools if t}
    out |= {t for a in cfg.agents.values() for t in a.tools}
    if cfg.handoff:
        out.add(cfg.handoff)
    return out


def unknown_tool_hint(name: str, cfg: StoreConfig, tools: dict[str, Any]) -> str:
    """For an unknown tool named like an MCP server's: which tools that server lists ('' otherwise)."""
    for decl in cfg.mcp.values():
        remote = decl.remote_name(name)
        if remote is None or not decl.prefix:
            continue
        listed = sorted(t.remote_name for t in tools.values() if isinstance(t, McpTool) and t.server.decl is decl)
        return (f"; the MCP server {decl.name!r} lists no tool {remote!r} here{_near(remote, listed)} (its tools: "
                f"{', '.join(listed) or 'none'})")
    return ""
