"""The ``train`` command: ``python -m core train reader <sgd folder>`` fine-tunes the learned reader
(:mod:`core.evaluation.sgd_train`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.shared.errors import UserInputError


def cmd_train(args: argparse.Namespace) -> int:
    """Train (or, with --export-only, export and measure again) the learned reader."""
    from core.evaluation.sgd_train import run

    folder = Path(args.folder)
    if not (folder / "train").is_dir() or not (folder / "dev").is_dir():
        raise UserInputError(f"{folder} is not the SGD folder (it needs train/, dev/ and sgd_x/)")
    record = run(folder, steps=args.steps, limit=args.limit, export_only=args.export_only,
                 max_minutes=args.max_minutes)
    if args.json:
        print(json.dumps(record, ensure_ascii=False, indent=2))
    else:
        dev = record.get("dev", {})
        print(f"trained {record.get('steps')} steps in {record.get('train_minutes')} min; "
              f"weights {record.get('export', {}).get('megabytes')} MB; threshold {record.get('threshold')}")
        for name, figures in dev.get("schemas", {}).items():
            print(f"  dev {name}: {figures}")
    return 0
