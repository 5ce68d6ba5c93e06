"""Workspace files: store.yaml, gar.csv, inventory, kb/, sops/ (ARCHITECTURE.md §4), loaded together with
their problems."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.shared.errors import Location, WorkspaceError
from core.shared.problems import Problem, errors
from core.workspace.changes import RolledBack, recover_changes
from core.workspace.config import StoreConfig
from core.workspace.gar_file import GarRow, check_gar_params, load_gar
from core.workspace.paths import leads_outside, state_folder
from core.workspace.store_yaml import load_store_config

log = logging.getLogger(__name__)


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
    recovered: list[str] = field(default_factory=list)  # what opening it rolled back, a sentence each

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
        """Where default SQLite files live (git-ignored), checked to stay inside the workspace.

        Raises:
            WorkspaceError: when ``.state`` or something in it is a link leading outside the workspace.
        """
        return state_folder(self.root)


def load_workspace_files(root: str | Path) -> WorkspaceFiles:
    """Load store.yaml and gar.csv of a workspace.

    Raises:
        WorkspaceError: when the folder does not exist.
    """
    path = Path(root).absolute()  # a relative root ("../shop") names the same files from any folder
    if not path.is_dir():
        raise WorkspaceError("workspace folder does not exist", Location(str(root)))
    rolled = _recovered(path)  # a change a killed process left half-written: the files as before it
    own = {name: _escape(path, name) for name in ("store.yaml", "gar.csv")}
    if own["store.yaml"]:
        cfg, p1 = StoreConfig(name=path.name), own["store.yaml"]
    else:
        cfg, p1 = load_store_config(path / "store.yaml")
    gar: list[GarRow] = []
    p2: list[Problem] = own["gar.csv"]  # a gar.csv leading outside is not read
    if not p2 and ((path / "gar.csv").exists() or any((path / "sops").glob("*.sop"))):
        gar, p2 = load_gar(path / "gar.csv")  # JSON SOPs alone carry their own tools and messages: no GAR needed
    files = WorkspaceFiles(path, cfg, gar, [], [r.sentence() for r in rolled])
    files.problems = [Problem(r.files[0] if r.files else ".state", 0, "warning", r.sentence()) for r in rolled] \
        + p1 + p2 + check_gar_params(gar, cfg.tools) + files.escapes()
    return files


def _recovered(root: Path) -> list[RolledBack]:
    """Roll back the changes to the workspace's files that a stopped process left half-written (every way of
    opening a workspace passes here), each said in the log in one sentence."""
    try:
        rolled = recover_changes(root)
    except (OSError, WorkspaceError) as exc:  # .state unusable (a link leading out): lint says so elsewhere
        log.warning("%s: a change cut off midway could not be rolled back: %s", root, exc)
        return []
    for r in rolled:
        log.warning("%s: %s", root, r.sentence())
    return rolled


def _escape(root: Path, name: str) -> list[Problem]:
    """An error when the workspace's own ``name`` (store.yaml, gar.csv) leads outside it; it is not read."""
    outside = leads_outside(root, name)
    if outside is None:
        return []
    return [Problem(name, 0, "error", f"{name} leads outside the workspace (to {outside}); it is not read: a "
                                      "workspace may only use files inside its own folder")]


def raise_on_errors(problems: list[Problem]) -> None:
    """Raise the first error as a WorkspaceError (with all errors in the message)."""
    errs = errors(problems)
    if errs:
        first = errs[0]
        more = f" (+{len(errs) - 1} more; run `python -m core lint`)" if len(errs) > 1 else ""
        raise WorkspaceError(first.message + more, Location(first.file, first.line, first.column))
