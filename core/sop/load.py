"""Load and compile every SOP of a workspace."""

from __future__ import annotations

import logging
from pathlib import Path

from core.errors import WorkspaceError
from core.problems import Problem
from core.sop.graph import Sop
from core.sop.parse_json import parse_json_sop
from core.sop.parse_text import GarResolver, parse_text_sop
from core.workspace import read_text_file

log = logging.getLogger(__name__)


def compile_sop(source: str, file: str, fmt: str, resolver: GarResolver) -> tuple[Sop | None, list[Problem]]:
    """Compile one SOP from its source text; ``fmt`` is "text" or "json"."""
    default_id = Path(file).stem
    if not source.strip():
        return None, [Problem(file, 1, "error", "the SOP is empty")]
    try:
        if fmt == "json":
            return parse_json_sop(source, file, default_id)
        return parse_text_sop(source, file, resolver, default_id)
    except RecursionError:  # a safety net: nesting is bounded before this could happen
        return None, [Problem(file, 1, "error", "the SOP nests too deeply to compile")]
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the workspace from loading
        log.exception("compiling %s failed", file)
        return None, [Problem(file, 1, "error", f"the SOP cannot be compiled ({type(exc).__name__}: {exc}); "
                                                 "please report this file")]


def load_sops(files: list[Path], resolver: GarResolver) -> tuple[list[Sop], list[Problem]]:
    """Compile every SOP file; SOPs with errors are left out, problems say why."""
    sops: list[Sop] = []
    problems: list[Problem] = []
    ids: dict[str, str] = {}
    for path in files:
        rel = f"sops/{path.name}"
        try:
            source = read_text_file(path)
        except WorkspaceError as exc:
            problems.append(Problem(rel, exc.location.line if exc.location else 0, "error", exc.message))
            continue
        sop, found = compile_sop(source, rel, "json" if path.suffix == ".json" else "text", resolver)
        problems += found
        if sop is None or any(p.severity == "error" for p in found):
            continue
        if sop.id in ids:
            problems.append(Problem(rel, 1, "error", f"SOP id {sop.id!r} is already used by {ids[sop.id]}"))
            continue
        ids[sop.id] = rel
        sops.append(sop)
    return sops, problems
