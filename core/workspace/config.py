"""Workspace files: store.yaml, gar.csv, inventory, kb/, sops/ (ARCHITECTURE.md §4)."""

from __future__ import annotations

import csv
import difflib
import io
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from core.shared.errors import Location, WorkspaceError
from core.shared.problems import Problem, errors
from core.shared.yamlsrc import Path_, line_of, load_with_lines

if TYPE_CHECKING:
    from core.workspace.mcp import McpDecl

TOP_KEYS = {"name": str, "currency": str, "inventory": dict, "agents": dict, "tools": dict,
            "settings": dict, "description": str, "region": str, "commerce": dict, "greeting": str,
            "languages": list, "aliases": dict, "polite_particle": str, "handoff": str}
COMMERCE_KEYS = {"search_tool": str, "slots": dict}
INVENTORY_KEYS = {"source": str, "columns": dict, "attributes": list, "sheet": str, "worksheet": str,
                  "refresh_minutes": (int, float)}
SHEET_REFRESH_MINUTES = 10  # how often a Google Sheet inventory is read again by default
SPREADSHEET_URL = re.compile(r"^https://docs\.google\.com/spreadsheets/d/([A-Za-z0-9_-]{10,})(?:[/?#].*)?$")
SPREADSHEET_ID = re.compile(r"^[A-Za-z0-9_-]{10,}$")
ROLES = ("sku", "name", "category", "price", "stock", "brand", "description")
DEFAULT_SEARCH_TOOL = "inventory.query"  # the built-in search over a mapped inventory
COMMERCE_ROLES = ("category", "brand", "budget", "min_price", "max_price", "query", "features", "sku", "name")
AGENT_KEYS = {"goals": (str, list), "tools": list, "description": str}
TOOL_KEYS = {"description": str, "params": list, "table": str, "key": dict, "not_found": str,
             "http": dict, "python": str, "timeout_s": (int, float), "sheet": str, "side_effects": bool}
HTTP_KEYS = {"method": str, "url": str, "timeout_s": (int, float), "headers": dict, "max_bytes": int}
SETTINGS_KEYS = {"max_steps_per_turn": int, "tool_timeout_s": (int, float),
                 "intent_threshold": (int, float), "kb_min_score": (int, float), "turn_wait_s": (int, float)}
CURRENCY_REGIONS = {"USD": "US", "THB": "TH", "INR": "IN", "GBP": "GB", "JPY": "JP", "AUD": "AU", "CAD": "CA",
                    "SGD": "SG", "MYR": "MY", "IDR": "ID", "PHP": "PH", "VND": "VN", "NZD": "NZ", "CHF": "CH"}
GAR_COLUMNS = ("action", "action_type", "user_interaction_metadata", "api", "params")
ACTION_TYPES = {"api_call", "ask_user_input", "message_to_user", "external_knowledge"}
MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Param:
    """A slot named in gar.csv ``params``; ``?`` marks it optional, ``:type`` declares its type
    (``order_id:id``, ``note:free_text?``; core/workspace/slots.py ``SLOT_TYPES``)."""

    name: str
    optional: bool = False
    type: str = ""


@dataclass
class GarRow:
    """One row of the Global Action Repository."""

    action: str
    types: frozenset[str]
    metadata: str
    api: str
    params: list[Param]
    line: int

    def has(self, kind: str) -> bool:
        """Whether the row's action_type includes ``kind``."""
        return kind in self.types


@dataclass
class ToolDecl:
    """A tool declared in store.yaml."""

    name: str
    description: str = ""
    params: list[Param] = field(default_factory=list)
    table: str = ""
    sheet: str = ""
    key: dict[str, str] = field(default_factory=dict)
    not_found: str = "not found"
    http: dict[str, Any] = field(default_factory=dict)
    python: str = ""
    timeout_s: float | None = None
    side_effects: bool | None = None  # whether the tool changes the world (default: a Python tool does)
    line: int = 0


@dataclass
class AgentDecl:
    """A specialist agent and its row of the permission matrix."""

    name: str
    goals: list[str]
    tools: list[str]
    description: str = ""

    def owns(self, goal_type: str) -> bool:
        """Whether a goal type matches one of this agent's patterns."""
        return any(_glob(p, goal_type) for p in self.goals)


@dataclass
class InventoryDecl:
    """Where the inventory is and how its columns map to roles: a file of the workspace or a CSV URL
    (``source``, with ``sheet`` naming an .xlsx worksheet), or a Google Sheet (``sheet`` without ``source``,
    read through the Sheets API and cached: core/tools/sheets.py)."""

    source: str
    columns: dict[str, str]
    attributes: list[str]
    sheet: str = ""  # the .xlsx worksheet of ``source``
    google_sheet: str = ""  # a Google Sheet's spreadsheet id (``source`` is then "")
    worksheet: str = ""  # the Google Sheet's tab ("": its first tab)
    refresh_minutes: float = SHEET_REFRESH_MINUTES  # how long a cached copy of the Google Sheet is used


@dataclass(frozen=True)
class CommerceDecl:
    """store.yaml ``commerce``: the item search tool and which SOP slots play its roles 
    (core/understanding/domain/commerce.py)."""

    search_tool: str = DEFAULT_SEARCH_TOOL
    slots: dict[str, str] = field(default_factory=dict)  # search role (category, budget, brand, ...) -> slot name


@dataclass
class StoreConfig:
    """The parsed store.yaml."""

    name: str
    currency: str = ""
    inventory: InventoryDecl | None = None
    agents: dict[str, AgentDecl] = field(default_factory=dict)
    tools: dict[str, ToolDecl] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    region: str = ""  # ISO 3166 country code: how customers write local phone numbers
    commerce: CommerceDecl | None = None  # item behaviour; on (with defaults) when an inventory is mapped
    greeting: str = ""  # how the agent opens its answer to a hello (default: the language's own hello)
    languages: tuple[str, ...] = ()  # the languages customers may write in (default: every language known)
    aliases: dict[str, str] = field(default_factory=dict)  # words customers use -> the store's own ("เมาส์": Mouse)
    polite_particle: str = ""  # the particle closing the agent's Thai sentences (ครับ, ค่ะ); default ครับ
    handoff: str = ""  # the tool that reaches a person when a customer asks for one (a queue, a ticket desk)
    mcp: dict[str, McpDecl] = field(default_factory=dict)  # MCP servers whose tools the store uses (tools: x: {mcp:})

    @property
    def home_region(self) -> str:
        """The store's region, else the one its currency implies (USD -> US), else none."""
        return (self.region or CURRENCY_REGIONS.get(self.currency.upper(), "")).upper()

    def agent_for(self, goal_type: str, explicit: str = "") -> AgentDecl | None:
        """The agent owning a goal type: the SOP's ``agent`` field, else the matching pattern."""
        if explicit:
            return self.agents.get(explicit)
        for agent in self.agents.values():
            if agent.owns(goal_type):
                return agent
        return None


def _glob(pattern: str, name: str) -> bool:
    regex = "^" + re.escape(pattern).replace(r"\*", ".*") + "$"
    return re.match(regex, name) is not None


def parse_params(text: str) -> list[Param]:
    """Parse ``a|b:type|c?`` into params (``c:type?`` and ``c?:type`` are both optional and typed)."""
    out = []
    for part in (text or "").split("|"):
        name, _, typ = part.partition(":")
        optional = name.strip().endswith("?") or typ.strip().endswith("?") or (not typ and part.strip().endswith("?"))
        name = name.strip().rstrip("?").strip()
        if name:
            out.append(Param(name, optional, typ.strip().rstrip("?").strip()))
    return out


def _name_tokens(name: str) -> set[str]:
    """Words of a slot or param name: snake_case, kebab-case and camelCase alike (``FullName`` ~ ``full_name``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    return {t for t in re.split(r"[\W_]+", spaced.lower()) if t}


def bind_params(params: list[Param], names: list[str]) -> dict[str, str]:
    """Which slot fills each of a tool's params (tool param -> slot name), paper §2.4.

    SOP slots may carry generic or step-specific names (``old_email``, ``old_email_otp``) while
    the API has its own (``destination``, ``otp``). A slot with the param's exact name wins;
    then the slot sharing the most name words with the param; then the remaining slots fill
    the remaining params in order, required params first. Slots left over are not bound.
    """
    bound = {p.name: p.name for p in params if p.name in names}
    free = [n for n in names if n not in bound.values()]
    todo = [p for p in params if p.name not in bound]
    todo.sort(key=lambda p: p.optional)
    for p in list(todo):
        scored = [(len(_name_tokens(p.name) & _name_tokens(n)), -i, n) for i, n in enumerate(free)]
        best = max(scored, default=(0, 0, ""))
        if best[0] > 0:
            bound[p.name] = best[2]
            free.remove(best[2])
            todo.remove(p)
    for p in todo:
        if free:
            bound[p.name] = free.pop(0)
    return bound


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
        if decl.python and ":" not in decl.python:
            chk.add(path + ("python",), "error", f"tool {name!r}: python must be 'file.py:function'")
        if decl.table and not decl.key:
            chk.add(path, "error", f"tool {name!r}: a table tool needs 'key' (param -> column)")
        out[decl.name] = decl
    return out


def load_gar(path: Path) -> tuple[list[GarRow], list[Problem]]:
    """Parse gar.csv; problems name the line."""
    file = path.name
    if not path.exists():
        return [], [Problem(file, 0, "error", "gar.csv is missing")]
    try:
        text = read_text_file(path, name=file)
    except WorkspaceError as exc:
        return [], [Problem(file, exc.location.line if exc.location else 0, "error", exc.message)]
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return [], [Problem(file, 1, "error", f"cannot read the header row: {exc}")]
    if header is None:
        return [], [Problem(file, 1, "error", "gar.csv is empty")]
    header = [h.strip() for h in header]
    missing = [c for c in GAR_COLUMNS if c not in header]
    if missing:
        return [], [Problem(file, 1, "error", f"missing column(s): {', '.join(missing)}"
                            f" (expected {', '.join(GAR_COLUMNS)})")]
    problems: list[Problem] = []
    rows: list[GarRow] = []
    seen: dict[str, int] = {}
    while True:
        lineno = reader.line_num + 1  # where the row starts (a quoted cell may span lines)
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a cell over the csv module's limit: that row, not the file
            problems.append(Problem(file, lineno, "error", f"cannot read this row: {exc}"))
            continue
        if not any(c.strip() for c in cells):
            continue
        rec = dict(zip(header, (c.strip() for c in cells), strict=False))
        row = _gar_row(rec, lineno, file, problems)
        if row is None:
            continue
        key = normalise_action(row.action)
        if key in seen:
            problems.append(Problem(file, lineno, "error",
                                    f"duplicate action {row.action!r} (first on line {seen[key]})"))
            continue
        seen[key] = lineno
        rows.append(row)
    return rows, problems


def _gar_row(rec: dict[str, str], lineno: int, file: str, problems: list[Problem]) -> GarRow | None:
    action = rec.get("action", "")
    if not action:
        problems.append(Problem(file, lineno, "error", "empty action"))
        return None
    types = frozenset(t.strip() for t in rec.get("action_type", "").split("|") if t.strip())
    bad = types - ACTION_TYPES
    if bad or not types:
        problems.append(Problem(file, lineno, "error",
                                f"action {action!r}: unknown action_type {sorted(bad) or '(empty)'}"
                                f"; use {', '.join(sorted(ACTION_TYPES))}"))
        return None
    api = rec.get("api", "")
    if "api_call" in types and not api:
        problems.append(Problem(file, lineno, "error", f"action {action!r} is an api_call but names no api"))
    params = parse_params(rec.get("params", ""))
    from core.workspace.slots import type_problem

    for p in params:
        why = type_problem(p.type) if p.type else ""
        if why:
            problems.append(Problem(file, lineno, "error", f"action {action!r}: slot {p.name!r}: {why}"))
    if "ask_user_input" in types and not params:
        problems.append(Problem(file, lineno, "error",
                                f"action {action!r} asks the user but names no slot in params"))
    return GarRow(action, types, rec.get("user_interaction_metadata", ""), api, params, lineno)


def normalise_action(text: str) -> str:
    """Lower-case, single-spaced action text for exact matching."""
    return " ".join(re.sub(r"[^\w\s-]", " ", text.lower()).split())


def read_text_file(path: Path, *, limit: int = MAX_FILE_BYTES, name: str = "") -> str:
    """Read a user's text file, refusing binary, non-UTF-8 or oversized content with a clear error
    (located at ``name``, the file as the user knows it, when given; else the path)."""
    where = name or str(path)
    size = path.stat().st_size
    if size > limit:
        raise WorkspaceError(f"file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB", Location(where))
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise WorkspaceError("binary file, expected UTF-8 text", Location(where))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise WorkspaceError(f"not UTF-8 text (bad byte at offset {exc.start})", Location(where, line)) from exc


_VIEWS: dict[Path, Path] = {}  # a staged view of a workspace (resolved) -> the workspace it mirrors (resolved)
_VIEWS_LOCK = threading.Lock()


def _resolved(path: Path) -> Path:
    """``path`` with ``..``, symbolic links and a relative start resolved (a link loop or a NUL stays as written)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


@contextmanager
def workspace_view(view: Path, of: Path) -> Iterator[None]:
    """While it lasts, files of ``view`` (a staged copy of the workspace ``of``, made of symbolic links into
    it) may lead into ``of``: they are that workspace's own files."""
    key = _resolved(view)
    with _VIEWS_LOCK:
        _VIEWS[key] = _resolved(of)
    try:
        yield
    finally:
        with _VIEWS_LOCK:
            _VIEWS.pop(key, None)


def view_home(root: Path) -> Path:
    """The workspace ``root`` stands for: the one it mirrors when it is a staged view (:func:`workspace_view`),
    else itself (resolved). Its ``.state/`` holds what a view has none of (cached copies of remote sheets)."""
    key = _resolved(root)
    with _VIEWS_LOCK:
        return _VIEWS.get(key, key)


def view_origin(root: Path) -> Path:
    """The workspace a staged view (:func:`workspace_view`) mirrors, resolved; ``root`` itself when it is none."""
    key = _resolved(root)
    with _VIEWS_LOCK:
        return _VIEWS.get(key, key)


def leads_outside(root: Path, rel: str | Path) -> Path | None:
    """Where ``rel`` (a path a workspace names, relative to its folder ``root``) really leads when that is
    outside the workspace, once ``..``, absolute paths and symbolic links are followed; None when it stays
    inside."""
    home = _resolved(root)
    with _VIEWS_LOCK:
        homes = [home, *([_VIEWS[home]] if home in _VIEWS else [])]
    target = _resolved(home / rel)
    return None if any(target.is_relative_to(h) for h in homes) else target


def workspace_path(root: Path, rel: str, key: str, *, file: str = "store.yaml", line: int = 0) -> Path:
    """The path ``rel`` names under ``key`` of ``file`` (``tools.orders.python`` of store.yaml), inside the
    workspace ``root``.

    Raises:
        WorkspaceError: when it leads outside the workspace (after ``..``, an absolute path or a symbolic
            link), naming the file, the key and the path.
    """
    outside = leads_outside(root, rel)
    if outside is not None:
        raise WorkspaceError(f"{key}: {rel!r} leads outside the workspace (to {outside}); a workspace may only "
                             "use files inside its own folder", Location(file, line))
    return root / rel


def store_paths(cfg: StoreConfig) -> list[tuple[str, str]]:
    """Every file store.yaml names, as (key, path): the inventory (unless it is a URL), declared tools' tables
    and Python files, and the files and folder of MCP servers it starts."""
    out: list[tuple[str, str]] = []
    if cfg.inventory and cfg.inventory.source and not cfg.inventory.source.startswith(("http://", "https://")):
        out.append(("inventory.source", cfg.inventory.source))
    for tool in cfg.tools.values():
        if tool.table:
            out.append((f"tools.{tool.name}.table", tool.table))
        if tool.python:
            out.append((f"tools.{tool.name}.python", tool.python.split(":", 1)[0]))
    for server in cfg.mcp.values():  # a server the engine starts: its files given by relative path, its folder
        out += [(f"tools.{server.name}.mcp.args", arg) for arg in server.args
                if server.command and re.fullmatch(r"[\w./-]+\.\w{1,8}", arg) and not arg.startswith(("-", "/"))]
        if server.cwd:
            out.append((f"tools.{server.name}.mcp.cwd", server.cwd))
    return out


@dataclass
class WorkspaceFiles:
    """The parsed workspace files (SOPs are compiled separately)."""

    root: Path
    config: StoreConfig
    gar: list[GarRow]
    problems: list[Problem]

    @property
    def id(self) -> str:
        """A stable id for the workspace (its folder name)."""
        return self.root.resolve().name

    def sop_files(self) -> list[Path]:
        """The SOP files, sorted (a link leading outside the workspace is not one: see :func:`escapes`)."""
        return [p for p in self._sop_candidates() if leads_outside(self.root, p) is None]

    def kb_files(self) -> list[Path]:
        """The knowledge-base documents, sorted (a link leading outside the workspace is not one)."""
        return [p for p in self._kb_candidates() if leads_outside(self.root, p) is None]

    def _sop_candidates(self) -> list[Path]:
        d = self.root / "sops"
        return sorted(p for p in d.glob("*") if p.suffix in (".sop", ".json")) if d.is_dir() else []

    def _kb_candidates(self) -> list[Path]:
        d = self.root / "kb"
        return sorted(p for p in d.rglob("*") if p.suffix.lower() in (".md", ".txt")) if d.is_dir() else []

    def escapes(self) -> list[Problem]:
        """An error for every SOP or knowledge-base file that leads outside the workspace (a symbolic link
        to a file elsewhere): it is not loaded."""
        out: list[Problem] = []
        for path in self._sop_candidates() + self._kb_candidates():
            outside = leads_outside(self.root, path)
            if outside is not None:
                rel = path.relative_to(self.root).as_posix()
                out.append(Problem(rel, 0, "error", f"{rel} leads outside the workspace (to {outside}); it is not "
                                                    "loaded: a workspace may only use files inside its own folder"))
        return out

    def state_dir(self) -> Path:
        """Where default SQLite files live (git-ignored)."""
        return self.root / ".state"


def load_workspace_files(root: str | Path) -> WorkspaceFiles:
    """Load store.yaml and gar.csv of a workspace.

    Raises:
        WorkspaceError: when the folder does not exist.
    """
    path = Path(root)
    if not path.is_dir():
        raise WorkspaceError("workspace folder does not exist", Location(str(path)))
    own = {name: _escape(path, name) for name in ("store.yaml", "gar.csv")}
    if own["store.yaml"]:
        cfg, p1 = StoreConfig(name=path.name), own["store.yaml"]
    else:
        cfg, p1 = load_store_config(path / "store.yaml")
    gar: list[GarRow] = []
    p2: list[Problem] = own["gar.csv"]  # a gar.csv leading outside is not read
    if not p2 and ((path / "gar.csv").exists() or any((path / "sops").glob("*.sop"))):
        gar, p2 = load_gar(path / "gar.csv")  # JSON SOPs alone carry their own tools and messages: no GAR needed
    files = WorkspaceFiles(path, cfg, gar, [])
    files.problems = p1 + p2 + check_gar_params(gar, cfg.tools) + files.escapes()
    return files


def _escape(root: Path, name: str) -> list[Problem]:
    """An error when the workspace's own ``name`` (store.yaml, gar.csv) leads outside it; it is not read."""
    outside = leads_outside(root, name)
    if outside is None:
        return []
    return [Problem(name, 0, "error", f"{name} leads outside the workspace (to {outside}); it is not read: a "
                                      "workspace may only use files inside its own folder")]


def check_gar_params(rows: list[GarRow], tools: dict[str, ToolDecl]) -> list[Problem]:
    """Every declared tool's required params get a slot from the GAR row that calls it."""
    problems: list[Problem] = []
    for row in rows:
        decl = tools.get(row.api)
        if decl is None or "api_call" not in row.types:
            continue
        names = [p.name for p in row.params]
        bound = bind_params(decl.params, names)
        unbound = [p.name for p in decl.params if not p.optional and p.name not in bound]
        if unbound:
            problems.append(Problem("gar.csv", row.line, "error",
                                    f"action {row.action!r}: no param fills {row.api}'s {', '.join(unbound)}"
                                    f" (params: {', '.join(names) or 'none'})"))
        extra = [n for n in names if n not in bound.values()]
        if extra and "ask_user_input" not in row.types:
            problems.append(Problem("gar.csv", row.line, "error",
                                    f"action {row.action!r}: {row.api} has no param for {', '.join(extra)}"
                                    f" (it takes {', '.join(p.name for p in decl.params) or 'nothing'})"))
    return problems


def raise_on_errors(problems: list[Problem]) -> None:
    """Raise the first error as a WorkspaceError (with all errors in the message)."""
    errs = errors(problems)
    if errs:
        first = errs[0]
        more = f" (+{len(errs) - 1} more; run `python -m core lint`)" if len(errs) > 1 else ""
        raise WorkspaceError(first.message + more, Location(first.file, first.line, first.column))
