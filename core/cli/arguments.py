"""What the parsed arguments mean: the types the parser checks numbers with and the workspace folder a command
works on."""

from __future__ import annotations

import argparse
from pathlib import Path


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
