"""store.yaml ``tools:`` entries that name an MCP server (Model Context Protocol), and their checks.

One entry stands for one server and exposes the tools it lists, named ``<prefix>.<tool>`` (the prefix is
the entry's key unless ``prefix:`` says otherwise)::

    tools:
      orders:
        mcp: {command: python, args: [orders_server.py], env: {ORDERS_CSV: data/orders.csv}}
        include: [find_order, cancel_order]      # optional: only these of the server's tools
        side_effects: {find_order: false}        # optional: true/false for all, or per tool
        timeout_s: 5                             # optional: each call's deadline
      crm:
        mcp: {url: "https://crm.example.com/mcp", headers: {Authorization: "Bearer ${CRM_TOKEN}"}}

``${NAME}`` in ``env``, ``headers`` and ``url`` is read from the environment when the server starts, so
a secret never stands in the file (:mod:`core.workspace.variables`: never the product's own settings). Nothing here imports the MCP SDK: a workspace without servers never
loads it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.workspace.variables import ENV_REF, expand, refused_names

ENTRY_KEYS: dict[str, Any] = {"mcp": dict, "include": list, "prefix": str, "timeout_s": (int, float),
                              "side_effects": (bool, dict), "description": str}
SERVER_KEYS: dict[str, Any] = {"command": str, "args": list, "env": dict, "cwd": str, "url": str,
                               "headers": dict, "start_timeout_s": (int, float)}
DEFAULT_START_TIMEOUT_S = 10.0
MAX_START_TIMEOUT_S = 60.0
PYTHON_COMMANDS = ("python", "python3")  # the engine's own interpreter: a workspace's server needs no other


class Checker(Protocol):
    """What the store.yaml checker offers (core.workspace.store_yaml._Checker)."""

    lines: dict[tuple[str | int, ...], int]

    def add(self, path: tuple[str | int, ...], severity: str, message: str) -> None: ...

    def keys(self, data: dict[str, Any], spec: dict[str, Any], path: tuple[str | int, ...], what: str) -> None: ...


@dataclass
class McpDecl:
    """One MCP server a workspace declares (a ``tools:`` entry with ``mcp:``)."""

    name: str
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # as written: ``${NAME}`` is read when the server starts
    cwd: str = ""  # relative to the workspace (default: the workspace folder)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # as written, like env
    include: list[str] = field(default_factory=list)  # the server's tools to expose (empty: all)
    prefix: str = ""
    timeout_s: float | None = None
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    side_effects: bool | None = None  # for every tool; else each tool's annotations decide
    side_effects_of: dict[str, bool] = field(default_factory=dict)  # per tool (the server's own name)
    line: int = 0

    @property
    def transport(self) -> str:
        """``stdio`` (a command the engine starts) or ``http`` (a streamable HTTP endpoint)."""
        return "http" if self.url else "stdio"

    def tool_name(self, remote: str) -> str:
        """The workspace's name of the server's tool ``remote``."""
        return f"{self.prefix}.{remote}" if self.prefix else remote

    def remote_name(self, name: str) -> str | None:
        """The server's name of the workspace's tool ``name``, or None when ``name`` is not one of this server's."""
        if not self.prefix:
            return name
        head = self.prefix + "."
        return name[len(head):] if name.startswith(head) and len(name) > len(head) else None

    def exposes(self, remote: str) -> bool:
        """Whether the server's tool ``remote`` is one of the workspace's (``include``)."""
        return not self.include or remote in self.include

    def where(self) -> str:
        """What the server is, for messages: its command line or its URL."""
        return self.url if self.url else " ".join([self.command, *self.args])


def parse_servers(raw: Any, chk: Checker) -> dict[str, McpDecl]:
    """The MCP servers among store.yaml's ``tools:`` entries (those with an ``mcp:`` key), checked."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, McpDecl] = {}
    for name, spec in raw.items():
        if isinstance(spec, dict) and "mcp" in spec:
            decl = _server(str(name), spec, chk)
            if decl is not None:
                out[decl.name] = decl
    return out


def _server(name: str, spec: dict[str, Any], chk: Checker) -> McpDecl | None:
    path: tuple[str | int, ...] = ("tools", name)
    chk.keys(spec, ENTRY_KEYS, path, f"MCP server {name!r}")
    server = spec.get("mcp")
    if not isinstance(server, dict):
        chk.add(path + ("mcp",), "error", f"tool {name!r}: mcp must be a mapping: {{command: ..., args: [...]}} "
                                          "for a server the engine starts, or {url: ...} for one it calls")
        return None
    chk.keys(server, SERVER_KEYS, path + ("mcp",), f"MCP server {name!r}")
    command, url = _text(server.get("command")), _text(server.get("url"))
    if bool(command) == bool(url):
        chk.add(path + ("mcp",), "error", f"MCP server {name!r} needs exactly one of command (a server the engine "
                                          "starts) or url (a streamable HTTP endpoint)")
        return None
    if url and not re.match(r"^(https?://|\$\{)", url):
        chk.add(path + ("mcp", "url"), "error", f"MCP server {name!r}: url must start with http:// or https://")
        return None
    prefix = spec.get("prefix", name)
    decl = McpDecl(name=name, command=command, url=url, cwd=_text(server.get("cwd")),
                   args=_strings(server.get("args"), path + ("mcp", "args"), chk),
                   env=_pairs(server.get("env"), path + ("mcp", "env"), chk),
                   headers=_pairs(server.get("headers"), path + ("mcp", "headers"), chk),
                   include=_strings(spec.get("include"), path + ("include",), chk),
                   prefix=str(prefix).strip().rstrip(".") if isinstance(prefix, str) else name,
                   timeout_s=_seconds(spec.get("timeout_s")),
                   start_timeout_s=min(MAX_START_TIMEOUT_S, _seconds(server.get("start_timeout_s"))
                                       or DEFAULT_START_TIMEOUT_S),
                   line=chk.lines.get(path, 0))
    effects = spec.get("side_effects")
    if isinstance(effects, bool):
        decl.side_effects = effects
    elif isinstance(effects, dict):
        for tool, value in effects.items():
            if isinstance(value, bool):
                decl.side_effects_of[str(tool)] = value
            else:
                chk.add(path + ("side_effects", str(tool)), "error",
                        f"MCP server {name!r}: side_effects of {tool!r} must be true or false")
    if command and decl.headers:
        chk.add(path + ("mcp", "headers"), "warning", f"MCP server {name!r}: headers are sent to a url only; "
                                                      "a command's server gets env")
    for where, value in [(("mcp", "url"), decl.url), *((("mcp", "headers", k), v) for k, v in decl.headers.items()),
                         *((("mcp", "env", k), v) for k, v in decl.env.items())]:
        refused = refused_names(value)
        if refused:
            chk.add(path + where, "error", f"MCP server {name!r}: ${{{refused[0]}}} is the product's own setting, "
                                           "never given to a workspace; declare a variable of the workspace's own")
    for header, value in decl.headers.items():
        if not ENV_REF.search(value):
            chk.add(path + ("mcp", "headers", header), "warning",
                    f"MCP server {name!r}: header {header!r} is written in store.yaml; take its value from the "
                    f"environment instead, e.g. {header}: \"Bearer ${{{_env_name(name)}_TOKEN}}\"")
    return decl


def _env_name(name: str) -> str:
    return re.sub(r"\W+", "_", name).upper().strip("_") or "SERVER"


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _seconds(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _strings(value: Any, path: tuple[str | int, ...], chk: Checker) -> list[str]:
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, str | int | float) and not isinstance(item, bool):
            out.append(str(item))
        else:
            chk.add(path + (i,), "error", f"{'.'.join(map(str, path))}: {item!r} must be a word or a number")
    return out


def _pairs(value: Any, path: tuple[str | int, ...], chk: Checker) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, str | int | float) and not isinstance(item, bool):
            out[str(key)] = str(item)
        else:
            chk.add(path + (str(key),), "error", f"{'.'.join(map(str, path))}: {key!r} must be text "
                                                 "(write ${NAME} to take it from the environment)")
    return out


def executable(command: str) -> str:
    """The program to start: ``python``/``python3`` is the engine's own interpreter (a workspace's server then
    runs with the engine's packages, the MCP SDK among them, whichever ``python`` the shell would find)."""
    return sys.executable if command in PYTHON_COMMANDS else command
