"""Thai intent matching, measured on a labelled set (tests/thai/intents.yaml).

Each message is the first of a fresh session: is the SOP it asks for the one that starts (nothing for a
greeting or thanks), and is it the best-scoring SOP. Run from the repository root:

    .venv/bin/python -m tests.thai.measure            # figures per workspace and overall
    .venv/bin/python -m tests.thai.measure --misses   # and every message read wrongly
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
LABELS = HERE / "intents.yaml"


@dataclass
class Figures:
    """How one workspace's labelled messages were read."""

    workspace: str
    total: int = 0
    started_right: int = 0  # the labelled SOP started, or nothing for a greeting / thanks
    requests: int = 0
    top_right: int = 0  # requests whose best-scoring SOP is the labelled one
    social: int = 0
    social_started: int = 0  # greetings and thanks that started a goal (should be none)
    misses: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"workspace": self.workspace, "messages": self.total,
                "started_right": f"{self.started_right}/{self.total}",
                "top_intent_right": f"{self.top_right}/{self.requests}",
                "greetings_thanks_starting_a_goal": f"{self.social_started}/{self.social}"}


def labelled() -> dict[Path, list[dict[str, Any]]]:
    """The labelled messages per workspace (paths relative to this file)."""
    data = yaml.safe_load(LABELS.read_text(encoding="utf-8"))
    return {(HERE / ws).resolve(): rows for ws, rows in data.items()}


def measure(workspace: Path, rows: list[dict[str, Any]]) -> Figures:
    from core.engine.build import build_orchestrator
    from core.state.memory import LocalPreferenceMemory
    from core.state.sessions import open_state_store

    out = Figures(workspace.name if workspace.name != HERE.parents[1].name else "demo (repository root)")
    with tempfile.TemporaryDirectory() as tmp:
        orch = build_orchestrator(workspace, brain="rule", store=open_state_store(f"sqlite:///{tmp}/s.sqlite"),
                                  memory=LocalPreferenceMemory(Path(tmp) / "p.sqlite"))
        for i, row in enumerate(rows):
            session = f"m{i}"
            orch.handle_message(session, row["text"])
            state, trace = orch.load_state(session), orch.last_trace(session) or {}
            started = next(iter(g.type for g in (state.goals.values() if state else [])), None)
            intents = (trace.get("perception") or {}).get("intents") or []
            top = intents[0][0] if intents else None
            want = row.get("sop")
            out.total += 1
            out.started_right += started == want
            if want is None:
                out.social += 1
                out.social_started += started is not None
            else:
                out.requests += 1
                out.top_right += top == want
            if started != want:
                out.misses.append(f"{row['text']!r}: wanted {want}, started {started} (best {intents[:2]})")
    return out


def main(argv: list[str]) -> int:
    results = [measure(ws, rows) for ws, rows in labelled().items()]
    total = sum(r.total for r in results)
    right = sum(r.started_right for r in results)
    for r in results:
        print(r.as_dict())
        if "--misses" in argv:
            for miss in r.misses:
                print("   miss:", miss)
    print(f"overall: {right}/{total} messages start the right SOP (or none) = {right / total:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
