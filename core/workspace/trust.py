"""Workspace trust: a workspace's Python tools and MCP servers run only once someone trusts it.

A workspace's store.yaml may name programs to run: a ``python:`` tool (a function in a .py file of the
workspace, imported as the engine) and an ``mcp:`` server (a command the engine starts, or a URL it calls
with headers from the environment). Teams copy workspaces from each other, so opening, linting or chatting
with one runs none of them until it is trusted; its other tools (tables, HTTP endpoints, the built-ins) work.

Trust is kept outside every workspace, in a small JSON file (``SOP_TRUST_FILE``, else
``$XDG_CONFIG_HOME/sop-playground/trusted.json``, else ``~/.config/sop-playground/trusted.json``):
``{"workspaces": {"<resolved folder>": "<fingerprint>"}}``. The fingerprint is a hash of what would run:
each Python and MCP entry of store.yaml as written, with the content of the workspace files it names (the
.py file of a Python tool, a server script among an MCP command's arguments). Change a command, its
arguments, its environment or one of those files, and the workspace must be trusted again. A workspace
that declares nothing to run needs no trust.

Trusted without asking: the demo workspace (the project's root folder), the bundled examples
(``examples/*``), and a copy of either whose fingerprint is unchanged (it runs exactly the same code).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from core.shared.problems import Problem
from core.workspace.config import StoreConfig
from core.workspace.paths import leads_outside, view_origin

TRUST_FILE_ENV = "SOP_TRUST_FILE"
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the demo workspace; its examples/ are the bundled ones
HOW_TO_TRUST = ("trust it with 'Trust this workspace' in the playground or --trust on the command line "
                "(python -m core lint --trust)")
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Runnable:
    """One store.yaml entry that runs something: a Python tool or an MCP server."""

    kind: str  # "python" or "mcp"
    name: str
    line: int

    def __str__(self) -> str:
        return f"{'Python tool' if self.kind == 'python' else 'MCP server'} {self.name}"


def runnables(cfg: StoreConfig) -> list[Runnable]:
    """What a workspace's store.yaml would run, in the file's order."""
    found = [Runnable("python", d.name, d.line) for d in cfg.tools.values() if d.python]
    found += [Runnable("mcp", d.name, d.line) for d in cfg.mcp.values()]
    return sorted(found, key=lambda r: (r.line, r.name))


def fingerprint(root: Path, cfg: StoreConfig) -> str:
    """A hash of everything the workspace at ``root`` would run (see the module's docstring)."""
    entries: list[list[object]] = []
    for decl in sorted((d for d in cfg.tools.values() if d.python), key=lambda d: d.name):
        entries.append(["python", decl.name, decl.python, _digest(root, decl.python.partition(":")[0])])
    for mcp in sorted(cfg.mcp.values(), key=lambda d: d.name):
        here = Path(mcp.cwd) if mcp.cwd else Path(".")
        scripts = [_digest(root, (here / arg).as_posix()) for arg in mcp.args]
        entries.append(["mcp", mcp.name, mcp.command, mcp.args, sorted(mcp.env.items()), mcp.cwd, mcp.url,
                        sorted(mcp.headers.items()), scripts])
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


def _digest(root: Path, rel: str) -> str:
    """The content hash of a workspace file ``rel`` ('' when it is no file inside the workspace)."""
    if not rel or leads_outside(root, rel) is not None:
        return ""
    try:
        path = root / rel
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    except (OSError, ValueError):
        return ""


def trust_file() -> Path:
    """Where trust is kept: ``SOP_TRUST_FILE``, else the user's configuration folder."""
    named = os.environ.get(TRUST_FILE_ENV)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "sop-playground" / "trusted.json"


def _recorded() -> dict[str, str]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    table = data.get("workspaces") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def is_trusted(root: Path, cfg: StoreConfig) -> bool:
    """Whether the workspace at ``root`` (or the one a staged view of it mirrors) may run its Python tools and
    MCP servers: it declares none, it is bundled (or an unchanged copy of a bundled one), or it was trusted
    with this fingerprint."""
    if not runnables(cfg):
        return True
    home = view_origin(root)
    if _bundled(home):
        return True
    mark = fingerprint(root, cfg)
    return _recorded().get(str(home)) == mark or mark in _bundled_marks()


def trust(root: Path, cfg: StoreConfig) -> Path:
    """Record that the workspace at ``root`` is trusted as it is now; the trust file written.

    Raises:
        OSError: the trust file cannot be written.
    """
    home, mark = view_origin(root), fingerprint(root, cfg)
    path = trust_file()
    with _LOCK:
        table = {k: v for k, v in _recorded().items() if Path(k).is_dir()}  # folders since removed are forgotten
        table[str(home)] = mark
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"workspaces": table}, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    return path


def not_run(cfg: StoreConfig) -> str:
    """What an untrusted workspace does not run, as a clause ("this workspace is not trusted, so ...")."""
    held = runnables(cfg)
    return (f"this workspace is not trusted, so its {', '.join(map(str, held))} "
            f"{'is' if len(held) == 1 else 'are'} not run")


def untrusted_problem(cfg: StoreConfig) -> Problem:
    """The one lint warning of an untrusted workspace: what is not run and how to trust it."""
    held = runnables(cfg)
    return Problem("store.yaml", held[0].line if held else 0, "warning", f"{not_run(cfg)}; {HOW_TO_TRUST}")


def held_reason(what: str) -> str:
    """Why the tool ``what`` is not run (the trace's words, and the error of a call)."""
    return f"{what} is not run: this workspace is not trusted; {HOW_TO_TRUST}"


def _bundled(home: Path) -> bool:
    return home == PROJECT_ROOT or home.parent == PROJECT_ROOT / "examples"


def keep_trust(root: Path, was_trusted: bool) -> None:
    """After the product itself wrote code into the workspace at ``root`` (an import's mock API), trust it as
    it is now if it was trusted before (or ran nothing); an untrusted workspace stays untrusted."""
    from core.workspace.store_yaml import load_store_config

    cfg, _ = load_store_config(root / "store.yaml")
    if was_trusted and not is_trusted(root, cfg):
        trust(root, cfg)


@functools.cache
def _bundled_marks() -> frozenset[str]:
    """The fingerprints of the bundled workspaces (a copy of one with the same fingerprint runs the same), read
    once per process."""
    from core.workspace.store_yaml import load_store_config

    marks: set[str] = set()
    examples = PROJECT_ROOT / "examples"
    for folder in [PROJECT_ROOT, *(sorted(examples.iterdir()) if examples.is_dir() else [])]:
        if (folder / "store.yaml").is_file():
            try:
                cfg, _ = load_store_config(folder / "store.yaml")
            except Exception:  # noqa: BLE001 - a broken bundled store.yaml just matches nothing
                continue
            if runnables(cfg):
                marks.add(fingerprint(folder, cfg))
    return frozenset(marks)
