"""The ``import`` command: flows drawn elsewhere (a STAR task) written into a workspace."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.shared.problems import errors


def cmd_import(args: argparse.Namespace) -> int:
    from core.engine.build import load_workspace
    from core.importers import import_star_task, write_import

    root = Path(args.into)
    result = import_star_task(Path(args.task), root, api_file=args.api)
    problems: list = []
    if not args.dry_run:
        write_import(result, root)
        problems = sorted(load_workspace(root).problems, key=lambda p: (p.file, p.line))
    if args.json:
        print(json.dumps({**result.to_dict(), "written": not args.dry_run,
                          "problems": [p.as_dict() for p in problems]}, ensure_ascii=False, indent=2))
    else:
        verb = "would write" if args.dry_run else "wrote"
        print(f"{result.task} -> SOP {result.sop_id} (agent {result.agent}, tool {result.tool}); {verb}:")
        print("\n".join(f"  {root / rel}" for rel in sorted(result.files)))
        print("\n".join(f"note: {n}" for n in result.notes))
        print("\n".join(str(p) for p in problems))
    return 1 if errors(problems) else 0
