"""The results of an imported STAR API, and the mock that answers for it in a workspace.

Whatever produced it (the mock here, a real endpoint behind it, or a dialogue being replayed),
a result reaches the SOP in one shape: the API's item (its fields by name) plus two flags the
imported flowchart branches on: ``found`` (an item came back) and ``success`` (the item does not
report a failure: "Unavailable", "Reservation Failed", "We cannot authenticate the user", …).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from core.importers.star_format import ApiField, StarApi, read_json

FAILURE = re.compile(r"\b(unavailable|unsuccessful|fail|fails|failed|failure|error|errors|cannot|can'?t|could ?n[o']t|"
                     r"invalid|denied|declined|rejected|refused|unable|not (found|possible|available|allowed))\b", re.I)
HIDDEN = {"APIName"}


def normalise(item: Any) -> dict[str, Any]:
    """An API item as the SOP sees it: its fields plus ``found`` and ``success``."""
    if not isinstance(item, dict) or not item:
        return {"found": False, "success": False}
    fields = {str(k): v for k, v in item.items() if k not in HIDDEN}
    failed = any(isinstance(v, str) and FAILURE.search(v) for v in fields.values())
    return {**fields, "found": True, "success": not failed}


class MockApi:
    """A deterministic stand-in for a STAR API: one plausible item per distinct request.

    Output fields the request gives are echoed; the others come from the mock-DB spec (a
    category or a number in range, chosen from a hash of the request, so the same question
    gets the same answer). A status the API reports itself (an output that is not a DB field,
    such as a booking status) takes its first category, the success case.
    """

    def __init__(self, spec_file: str | Path) -> None:
        path = Path(spec_file)
        self.api = StarApi.from_json(read_json(path), str(path))

    def __call__(self, **args: Any) -> dict[str, Any]:
        return self.query(args)

    def query(self, args: dict[str, Any]) -> dict[str, Any]:
        """The item for a request (arguments keyed by the API's input names)."""
        key = json.dumps({k: v for k, v in args.items() if v is not None}, sort_keys=True, default=str)
        db = {f.name: f for f in self.api.db_fields}
        item: dict[str, Any] = {"APIName": self.api.name}
        for out in self.api.outputs:
            if args.get(out.name) not in (None, ""):
                item[out.name] = args[out.name]
            elif out.name in db:
                item[out.name] = _pick(db[out.name], f"{key}|{out.name}")
            else:
                item[out.name] = out.categories[0] if out.categories else _pick(out, f"{key}|{out.name}")
        return normalise(item)


def _pick(spec: ApiField, seed: str) -> Any:
    n = int(hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12], 16)
    if spec.categories:
        return spec.categories[n % len(spec.categories)]
    if spec.type.lower() == "boolean":
        return bool(n % 2)
    if spec.type.lower() in ("integer", "int", "number"):
        low = spec.minimum if spec.minimum is not None else 0
        high = spec.maximum if spec.maximum is not None else low + 100
        return low + n % (high - low + 1)
    return f"{spec.label} {n % 1000}"
