"""store.yaml read and checked: every key against what it may hold, each problem with its line, into a
:class:`core.workspace.config.StoreConfig`."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from core.shared.problems import Problem
from core.shared.yamlsrc import Path_, line_of, load_with_lines
from core.workspace.config import (
    COMMERCE_ROLES,
    DEFAULT_SEARCH_TOOL,
    ROLES,
    SPREADSHEET_ID,
    SPREADSHEET_URL,
    AgentDecl,
    CommerceDecl,
    InventoryDecl,
    StoreConfig,
    ToolDecl,
)
from core.workspace.params import parse_params
from core.workspace.variables import refused_names

TOP_KEYS = {"name": str, "currency": str, "inventory": dict, "agents": dict, "tools": dict,
            "settings": dict, "description": str, "region": str, "commerce": dict, "greeting": str,
            "languages": list, "aliases": dict, "polite_particle": str, "handoff": str}
COMMERCE_KEYS = {"search_tool": str, "slots": dict}
INVENTORY_KEYS = {"source": str, "columns": dict, "attributes": list, "sheet": str, "worksheet": str,
                  "refresh_minutes": (int, float)}
AGENT_KEYS = {"goals": (str, list), "tools": list, "description": str}
TOOL_KEYS = {"description": str, "params": list, "table": str, "key": dict, "not_found": str,
             "http": dict, "python": str, "timeout_s": (int, float), "sheet": str, "side_effects": bool}
HTTP_KEYS = {"method": str, "url": str, "timeout_s": (int, float), "headers": dict, "max_bytes": int}
SETTINGS_KEYS = {"max_steps_per_turn": int, "tool_timeout_s": (int, float),
                 "intent_threshold": (int, float), "kb_min_score": (int, float), "turn_wait_s": (int, float),
                 "turn_deadline_s": (int, float)}


def _did_you_mean(word: str, options: Any) -> str:
    near = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


class _Checker:
    """Collects problems about one YAML document with its line map."""

    def __init__(self, file: str, lines: dict[Path_, int]) -> None:
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []

    def add(self, path: Path_, severity: str, message: str) -> None:
        self.problems.append(Problem(self.file, line_of(self.lines, path), severity, message))  # type: ignore[arg-type]

    def keys(self, data: dict[str, Any], spec: dict[str, Any], path: Path_, what: str) -> None:
        for key, value in data.items():
            if key not in spec:
                self.add(path + (str(key),), "warning",
                         f"unknown key {key!r} in {what}{_did_you_mean(str(key), spec)}")
            elif value is not None and not isinstance(value, spec[key]):
                want = spec[key]
                names = "/".join(t.__name__ for t in want) if isinstance(want, tuple) else want.__name__
                self.add(path + (str(key),), "error",
                         f"{what} key {key!r} must be {names}, got {type(value).__name__}")


def load_store_config(path: Path) -> tuple[StoreConfig, list[Problem]]:
    """Parse and validate store.yaml; problems carry line numbers."""
    file = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return StoreConfig(name=path.parent.name), [Problem(file, 0, "error", "store.yaml is missing")]
    except UnicodeDecodeError:
        return StoreConfig(name=path.parent.name), [Problem(file, 0, "error", "not UTF-8 text")]
    try:
        data, lines = load_with_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        col = mark.column + 1 if mark else 0
        msg = getattr(exc, "problem", None) or str(exc)
        return StoreConfig(name=path.parent.name), [Problem(file, line, "error", f"YAML syntax: {msg}", col)]
    chk = _Checker(file, lines)
    if not isinstance(data, dict):
        chk.add((), "error", "store.yaml must be a mapping of keys (name, agents, ...)")
        return StoreConfig(name=path.parent.name), chk.problems
    chk.keys(data, TOP_KEYS, (), "store.yaml")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        chk.add(("name",), "error", "required key 'name' (the store's name) is missing")
    cfg = StoreConfig(name=str(name or path.parent.name), currency=str(data.get("currency") or ""),
                      description=str(data.get("description") or ""), region=str(data.get("region") or ""))
    try:
        cfg.greeting = " ".join(str(data.get("greeting") or "").split())
        cfg.languages = _languages(data.get("languages"), chk)
        cfg.aliases = _aliases(data.get("aliases"), chk)
        cfg.polite_particle = " ".join(str(data.get("polite_particle") or "").split())
        cfg.handoff = str(data.get("handoff") or "").strip()
        cfg.inventory = _inventory(data.get("inventory"), chk)
        cfg.commerce = _commerce(data.get("commerce"), cfg.inventory is not None, chk)
        cfg.agents = _agents(data.get("agents"), chk)
        cfg.tools = _tools(data.get("tools"), chk)
        from core.workspace.mcp import parse_servers

        cfg.mcp = parse_servers(data.get("tools"), chk)
        settings = data.get("settings") or {}
        if isinstance(settings, dict):
            chk.keys(settings, SETTINGS_KEYS, ("settings",), "settings")
            cfg.settings = {k: v for k, v in settings.items()
                            if k in SETTINGS_KEYS and isinstance(v, int | float) and not isinstance(v, bool)}
    except Exception as exc:  # noqa: BLE001 - a safety net: a value of a type no check expected is a problem
        chk.add((), "error", f"store.yaml cannot be used ({type(exc).__name__}: {exc}); check the types of its values")
    return cfg, chk.problems


def _aliases(raw: Any, chk: _Checker) -> dict[str, str]:
    """The ``aliases:`` mapping: words customers use (in any language) -> the store's own words for them
    (a category, a brand, a feature): "เมาส์: Mouse" lets a Thai customer name the demo's mice."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for said, meant in raw.items():
        if not isinstance(said, str) or not said.strip() or not isinstance(meant, str) or not meant.strip():
            chk.add(("aliases", said), "error", f"aliases: {said!r}: {meant!r} must map a word to a word "
                    "(write both in quotes when they look like numbers or yes/no)")
            continue
        out[" ".join(said.split())] = " ".join(meant.split())
    return out


def _languages(raw: Any, chk: _Checker) -> tuple[str, ...]:
    """The ``languages:`` list: language codes the engine has a lexicon for (en, th, ...)."""
    from core.language.lexicons import lexicons

    if not isinstance(raw, list):
        return ()
    known = [lx.language for lx in lexicons()]
    out: list[str] = []
    for i, code in enumerate(raw):
        code = str(code).strip().lower()
        if code in known:
            out.append(code)
        else:
            near = difflib.get_close_matches(code, known, n=1)
            chk.add(("languages", i), "error", f"languages: no language {code!r} here (known: {', '.join(known)})"
                    + (f"; did you mean {near[0]!r}?" if near else ""))
    return tuple(dict.fromkeys(out))


def _inventory(raw: Any, chk: _Checker) -> InventoryDecl | None:
    if raw is None or not isinstance(raw, dict):
        return None
    chk.keys(raw, INVENTORY_KEYS, ("inventory",), "inventory")
    source = raw.get("source")
    google = ""
    if not source and raw.get("sheet"):  # a sheet without a source is a Google Sheet; beside one, an .xlsx tab
        google = _google_sheet(raw, chk)
        if not google:
            return None
    elif not isinstance(source, str) or not source:
        chk.add(("inventory",), "error", "inventory needs 'source' (a .csv/.xlsx path or a CSV URL) or 'sheet' "
                                         "(a Google Sheet's id or URL)")
        return None
    else:
        for key in ("worksheet", "refresh_minutes"):
            if key in raw:
                chk.add(("inventory", key), "warning", f"inventory.{key} is for a Google Sheet ('sheet:' without "
                        f"'source:'); it is not used with source {source!r}"
                        + (" (an .xlsx file's tab is 'sheet:')" if key == "worksheet" else ""))
    cols = raw.get("columns") or {}
    if not isinstance(cols, dict):
        cols = {}
    for role in cols:
        if role not in ROLES:
            chk.add(("inventory", "columns", str(role)), "warning",
                    f"unknown column role {role!r}{_did_you_mean(str(role), ROLES)}")
    for role in ("name", "price"):
        if role not in cols:
            chk.add(("inventory", "columns"), "error", f"inventory.columns must map the {role!r} role")
    attrs = raw.get("attributes") or []
    decl = InventoryDecl(source=str(source or ""), columns={str(k): str(v) for k, v in cols.items()},
                         attributes=[str(a) for a in attrs] if isinstance(attrs, list) else [])
    if google:
        decl.google_sheet, decl.worksheet = google, str(raw.get("worksheet") or "").strip()
        minutes = raw.get("refresh_minutes")
        if isinstance(minutes, int | float) and not isinstance(minutes, bool):
            decl.refresh_minutes = float(minutes)
    else:
        decl.sheet = str(raw.get("sheet") or "")
    return decl


def _google_sheet(raw: dict[str, Any], chk: _Checker) -> str:
    """The spreadsheet id of ``inventory.sheet`` when it names a Google Sheet (its id or its URL), else ''
    with an error; a ``refresh_minutes`` below zero is an error too."""
    text = raw.get("sheet")
    text = text.strip() if isinstance(text, str) else ""
    found = SPREADSHEET_URL.match(text) or SPREADSHEET_ID.match(text)
    if found is None:
        chk.add(("inventory", "sheet"), "error", f"inventory.sheet {text!r} is neither a Google Sheet's id nor its "
                "URL (https://docs.google.com/spreadsheets/d/<id>/...); a local .csv/.xlsx file is 'source:'")
        return ""
    minutes = raw.get("refresh_minutes")
    if isinstance(minutes, int | float) and not isinstance(minutes, bool) and minutes < 0:
        chk.add(("inventory", "refresh_minutes"), "error", "inventory.refresh_minutes must be 0 or more "
                "(minutes a cached copy of the sheet is used before it is read again)")
    return found.group(1) if found.re is SPREADSHEET_URL else found.group(0)


def _commerce(raw: Any, has_inventory: bool, chk: _Checker) -> CommerceDecl | None:
    if not isinstance(raw, dict):
        return CommerceDecl() if has_inventory else None
    chk.keys(raw, COMMERCE_KEYS, ("commerce",), "commerce")
    tool = raw.get("search_tool")
    slots = _mapping(raw.get("slots"))
    for role in slots:
        if role not in COMMERCE_ROLES:
            chk.add(("commerce", "slots", str(role)), "warning",
                    f"unknown search role {role!r}{_did_you_mean(str(role), COMMERCE_ROLES)}")
    return CommerceDecl(search_tool=str(tool) if isinstance(tool, str) and tool.strip() else DEFAULT_SEARCH_TOOL,
                        slots={str(k): str(v) for k, v in slots.items() if k in COMMERCE_ROLES})


def _mapping(value: Any) -> dict[str, Any]:
    """A mapping value as a dict (a value of another type was reported by the key checks; it counts as empty)."""
    return dict(value) if isinstance(value, dict) else {}


def _agents(raw: Any, chk: _Checker) -> dict[str, AgentDecl]:
    if not isinstance(raw, dict) or not raw:
        chk.add(("agents",), "error", "store.yaml needs 'agents' (name -> goals pattern and tools)")
        return {}
    out: dict[str, AgentDecl] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            chk.add(("agents", str(name)), "error", f"agent {name!r} must be a mapping with goals and tools")
            continue
        chk.keys(spec, AGENT_KEYS, ("agents", str(name)), f"agent {name!r}")
        goals = spec.get("goals") or f"{name}.*"
        goal_list = [goals] if isinstance(goals, str) else [str(g) for g in goals] if isinstance(goals, list) else []
        tools = spec.get("tools") or []
        out[str(name)] = AgentDecl(str(name), goal_list, [str(t) for t in tools] if isinstance(tools, list) else [],
                                   str(spec.get("description") or ""))
    return out


def _tools(raw: Any, chk: _Checker) -> dict[str, ToolDecl]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, ToolDecl] = {}
    for name, spec in raw.items():
        path: Path_ = ("tools", str(name))
        if not isinstance(spec, dict):
            chk.add(path, "error", f"tool {name!r} must be a mapping")
            continue
        if "mcp" in spec:  # an MCP server and the tools it lists: core/workspace/mcp.py
            continue
        chk.keys(spec, TOOL_KEYS, path, f"tool {name!r}")
        kinds = [k for k in ("table", "http", "python") if spec.get(k)]
        if len(kinds) != 1:
            chk.add(path, "error", f"tool {name!r} needs exactly one of table, http, python, mcp "
                                   f"(has {kinds or 'none'})")
            continue
        params = spec.get("params") or []
        decl = ToolDecl(name=str(name), description=str(spec.get("description") or ""),
                        params=parse_params("|".join(str(p) for p in params)) if isinstance(params, list) else [],
                        table=str(spec.get("table") or ""), sheet=str(spec.get("sheet") or ""),
                        key={str(k): str(v) for k, v in _mapping(spec.get("key")).items()},
                        not_found=str(spec.get("not_found") or "not found"),
                        http=_mapping(spec.get("http")), python=str(spec.get("python") or ""),
                        timeout_s=spec.get("timeout_s") if isinstance(spec.get("timeout_s"), int | float)
                        and not isinstance(spec.get("timeout_s"), bool) else None,
                        side_effects=spec.get("side_effects") if isinstance(spec.get("side_effects"), bool) else None,
                        line=line_of(chk.lines, path))
        if decl.http:
            chk.keys(decl.http, HTTP_KEYS, path + ("http",), f"tool {name!r} http")
            if not decl.http.get("url"):
                chk.add(path + ("http",), "error", f"tool {name!r}: http needs a url")
            headers = decl.http.get("headers") if isinstance(decl.http.get("headers"), dict) else {}
            for where, value in [(("http", "url"), decl.http.get("url")),
                                 *((("http", "headers", str(k)), v) for k, v in headers.items())]:
                refused = refused_names(str(value or ""))
                if refused:
                    chk.add(path + where, "error", f"tool {name!r}: ${{{refused[0]}}} is the product's own setting, "
                                                   "never given to a workspace; declare a variable of the "
                                                   "workspace's own")
        if decl.python and ":" not in decl.python:
            chk.add(path + ("python",), "error", f"tool {name!r}: python must be 'file.py:function'")
        if decl.table and not decl.key:
            chk.add(path, "error", f"tool {name!r}: a table tool needs 'key' (param -> column)")
        out[decl.name] = decl
    return out
