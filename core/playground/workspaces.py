"""Finding workspaces and creating new ones from a template."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.playground.uploads import replace_top_level_block
from core.shared.errors import UserInputError
from core.workspace.files import store_paths
from core.workspace.paths import leads_outside
from core.workspace.store_yaml import load_store_config

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTENT = ("store.yaml", "gar.csv", "sops", "kb", "data", "conversations")
BLANK = "blank"

WELCOME = """# Welcome

This is the first knowledge-base article of {name}. Replace it with your own documents
on the Store page.

## Opening hours

We are open every day from 9:00 to 18:00.
"""
"""The blank template's one knowledge-base article (``{name}``: the store's name)."""



@dataclass(frozen=True)
class WorkspaceInfo:
    """A workspace the playground can open."""

    name: str
    path: Path
    kind: str  # "demo", "example" or "yours"

    @property
    def label(self) -> str:
        """How the workspace is listed."""
        return f"{self.name} ({self.kind}: {self.path.name})"


def user_workspaces_dir() -> Path:
    """Where new workspaces are created: ``SOP_WORKSPACES_DIR`` or ``workspaces/`` in the project."""
    return Path(os.environ.get("SOP_WORKSPACES_DIR") or REPO_ROOT / "workspaces").resolve()


def _store_name(path: Path) -> str:
    cfg, _ = load_store_config(path / "store.yaml")
    return cfg.name or path.name


def known_workspaces(extra: list[Path] | None = None) -> list[WorkspaceInfo]:
    """The demo workspace, the examples, the user's workspaces, and any ``extra`` folders."""
    found: list[WorkspaceInfo] = []
    seen: set[Path] = set()

    def add(path: Path, kind: str) -> None:
        path = path.resolve()
        if path not in seen and (path / "store.yaml").is_file():
            seen.add(path)
            found.append(WorkspaceInfo(_store_name(path), path, kind))

    for p in extra or []:
        add(p, "yours" if p.resolve().parent == user_workspaces_dir() else "opened")
    add(REPO_ROOT, "demo")
    for base, kind in ((REPO_ROOT / "examples", "example"), (user_workspaces_dir(), "yours")):
        for d in sorted(base.iterdir()) if base.is_dir() else []:
            add(d, kind)
    return found


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def create_workspace(name: str, template: Path | str) -> Path:
    """Create a workspace named ``name`` from a template workspace folder (or ``"blank"``).

    Only workspace content is copied (store.yaml, gar.csv, sops, kb, data, conversations,
    the inventory file and declared tools' files), never sessions. The new folder appears
    whole or not at all.

    Raises:
        UserInputError: an empty name, a name already used, or a template that is not a workspace.
    """
    slug = _slug(name)
    if not slug:
        raise UserInputError("give the new workspace a name (letters or digits)")
    dest = user_workspaces_dir() / slug
    if dest.exists():
        raise UserInputError(f"a workspace folder named {slug!r} already exists in {dest.parent}")
    if str(template) == BLANK:  # a new store with one starter SOP that answers from its one article
        from core.playground.newstore import NewStore, create_store

        return create_store(NewStore(name.strip(), starters=["answer_question"],
                                     kb=[("welcome.md", WELCOME.replace("{name}", name.strip()).encode())]),
                            {"name": name.strip(), "currency": "USD",
                             "description": "A new store. Upload an inventory and knowledge-base files on the Store "
                                            "page."})
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{slug}-", dir=dest.parent) as tmp:
        build = Path(tmp) / slug
        build.mkdir()
        copy_workspace(Path(template), build)
        store = build / "store.yaml"
        store.write_text(replace_top_level_block(store.read_text(encoding="utf-8"), "name", name.strip()),
                         encoding="utf-8")
        build.rename(dest)
    return dest


def copy_workspace(src: Path, dst: Path) -> None:
    """Copy a workspace's own files (store.yaml, GAR, SOPs, KB, data, tests, the inventory and Python tools it
    names) into ``dst``, nothing else that shares its folder (a project environment, caches, code).

    Every file copied must be inside ``src`` once ``..``, absolute paths and symbolic links are followed: a
    template naming a file elsewhere, or holding a link to one, is refused and nothing is copied from outside.

    Raises:
        UserInputError: when ``src`` holds no store.yaml, or names or links to a file outside itself.
    """
    if not (src / "store.yaml").is_file():
        raise UserInputError(f"template {src} is not a workspace (no store.yaml)")
    home = src.resolve()
    cfg, _ = load_store_config(src / "store.yaml")
    parts: dict[str, str] = {rel: "" for rel in CONTENT}  # path -> the store.yaml key naming it
    for key, rel in store_paths(cfg):
        parts.setdefault(rel, key)
    for rel, key in sorted(parts.items()):
        if os.path.normpath(rel or ".") == ".":
            continue  # names no file (store.yaml's lint says so)
        outside = leads_outside(src, rel)
        if outside is not None:
            what = f"its store.yaml key {key} names {rel!r}" if key else f"its {rel} is a link"
            raise UserInputError(f"template {src}: {what}, which leads outside the template (to {outside}); "
                                 "nothing was created")
        s = src / rel
        to = dst / _inside_rel(rel, s, home)
        if s.is_dir():
            shutil.copytree(s, to, ignore=_refuse_links_out(src, home), copy_function=_checked_copy(src, home))
        elif s.is_file():
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, to)


def _inside_rel(rel: str, path: Path, home: Path) -> Path:
    """Where ``rel`` goes in the copy: as written when it is a plain relative path, else where it really is
    in the template (an absolute path, or one through ``..``, must not lead the copy out of its folder)."""
    plain = Path(os.path.normpath(rel))
    if plain.is_absolute() or plain.parts[:1] == ("..",):
        return path.resolve().relative_to(home)
    return plain


def _refuse_links_out(src: Path, home: Path) -> Callable[[str, list[str]], set[str]]:
    """A ``copytree`` ignore function that refuses a folder leading outside the template (a symbolic link to a
    folder elsewhere, or back to one being copied) and leaves out caches and session state."""
    seen: set[Path] = set()

    def ignore(folder: str, names: list[str]) -> set[str]:
        real = Path(folder).resolve()
        if not real.is_relative_to(home):
            raise UserInputError(f"template {src}: {_shown(folder, src)} is a link that leads outside the template "
                                 f"(to {real}); nothing was created")
        if real in seen:
            raise UserInputError(f"template {src}: {_shown(folder, src)} is a link back to a folder it is in; "
                                 "nothing was created")
        seen.add(real)
        return {n for n in names if n in ("__pycache__", ".state")}

    return ignore


def _checked_copy(src: Path, home: Path) -> Callable[[str, str], object]:
    """A ``copytree`` copy function that refuses a file leading outside the template (a symbolic link)."""

    def copy(s: str, d: str) -> object:
        real = Path(s).resolve()
        if not real.is_relative_to(home):
            raise UserInputError(f"template {src}: {_shown(s, src)} is a link that leads outside the template "
                                 f"(to {real}); nothing was created")
        return shutil.copy2(s, d)

    return copy


def _shown(path: str, src: Path) -> str:
    """A path of the template as its author knows it (relative to the template's folder)."""
    try:
        return Path(path).relative_to(src).as_posix()
    except ValueError:
        return path
