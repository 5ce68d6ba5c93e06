"""What the parsed arguments mean: the types the parser checks numbers with and the workspace folder a command
works on."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TRUST_HELP = ("trust the workspace: its Python tools and MCP servers may run (recorded outside it, so later "
              "commands and the playground run them too, until what they run changes)")


def workspace_folder(args: argparse.Namespace) -> Path:
    """The workspace folder the command works on (``--workspace``, else the current folder)."""
    return Path(args.workspace)


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def percent(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage from 0 to 100, got {text}")
    return value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def trusted_folder(folder: Path) -> bool:
    """Whether a workspace folder may run its Python tools and MCP servers (True for a folder that is no
    workspace: the command says what is wrong with it)."""
    from core.workspace.store_yaml import load_store_config
    from core.workspace.trust import is_trusted

    store = folder / "store.yaml"
    if not store.is_file():
        return True
    cfg, _ = load_store_config(store)
    return is_trusted(folder.resolve(), cfg)


def trust_if_asked(folders: list[str | Path]) -> None:
    """Trust each workspace folder (``--trust``), saying so on stderr; a folder with no store.yaml is left to
    the command, which says what is wrong with it."""
    from core.workspace.store_yaml import load_store_config
    from core.workspace.trust import runnables, trust

    for folder in folders:
        store = Path(folder) / "store.yaml"
        if not store.is_file():
            continue
        cfg, _ = load_store_config(store)
        if not runnables(cfg):
            continue
        where = trust(Path(folder).resolve(), cfg)
        print(f"trusted {Path(folder).resolve()}: its {', '.join(map(str, runnables(cfg)))} may run "
              f"(recorded in {where})", file=sys.stderr)
