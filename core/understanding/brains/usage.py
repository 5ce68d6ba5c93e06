"""LLM calls and prompt tokens over many turns, next to the full-SOP-prompt baseline (for evaluations).

Read from committed turn traces: ``trace["llm"]`` holds one record per request to the model (a
validation retry is a request of its own), and ``trace["perception"]["brain"]["baseline_tokens"]``
the estimated size of the full-SOP prompt the seeds' design would send for that turn (one request
per customer message, as the engine note's agent does; the paper's design makes three per step).
Both sides are counted with the same offline estimator (``core.understanding.brains.prompts.estimate_tokens``);
tokens the server reported are summed separately where it reported them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ESTIMATOR = "offline estimate: ceil(chars/4) + 4 per message, plus the JSON schema sent"


@dataclass
class LLMUsage:
    """Totals over the turns an LLM brain handled."""

    turns: int = 0
    calls: int = 0
    turns_with_calls: int = 0
    max_calls_in_turn: int = 0
    prompt_tokens: int = 0  # estimated, of the lean prompts sent
    baseline_tokens: int = 0  # estimated, one full-SOP prompt per turn
    server_prompt_tokens: int = 0
    server_calls: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    purposes: Counter[str] = field(default_factory=Counter)

    def add_turn(self, trace: dict[str, Any]) -> None:
        """Count one committed turn (turns of the rule brain, with no brain record, are skipped)."""
        brain = (trace.get("perception") or {}).get("brain") or {}
        if "baseline_tokens" not in brain:
            return
        calls = [c for c in trace.get("llm") or [] if "outcome" in c]
        self.turns += 1
        self.baseline_tokens += int(brain["baseline_tokens"])
        self.calls += len(calls)
        self.turns_with_calls += bool(calls)
        self.max_calls_in_turn = max(self.max_calls_in_turn, len(calls))
        for c in calls:
            self.prompt_tokens += int(c.get("prompt_tokens_est") or 0)
            self.outcomes[str(c["outcome"])] += 1
            self.purposes[str(c.get("purpose", "?"))] += 1
            if c.get("prompt_tokens_source") == "server":
                self.server_calls += 1
                self.server_prompt_tokens += int(c.get("prompt_tokens") or 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: per-turn and per-call figures, the saving against the baseline, outcomes."""
        turns = max(self.turns, 1)
        saving = 1 - self.prompt_tokens / self.baseline_tokens if self.baseline_tokens else None
        return {
            "turns": self.turns, "calls": self.calls,
            "calls_per_turn": round(self.calls / turns, 3),
            "turns_with_calls": self.turns_with_calls, "max_calls_in_turn": self.max_calls_in_turn,
            "prompt_tokens_per_turn": round(self.prompt_tokens / turns, 1),
            "baseline_prompt_tokens_per_turn": round(self.baseline_tokens / turns, 1),
            "prompt_token_saving": round(saving, 4) if saving is not None else None,
            "prompt_tokens_per_call": round(self.prompt_tokens / self.calls, 1) if self.calls else None,
            "server_prompt_tokens_per_call": (round(self.server_prompt_tokens / self.server_calls, 1)
                                              if self.server_calls else None),
            "calls_by_purpose": dict(sorted(self.purposes.items())),
            "outcomes": dict(sorted(self.outcomes.items())),
            "token_counting": ESTIMATOR,
        }

    def lines(self) -> list[str]:
        """Plain-text lines for a report (none when no LLM brain ran)."""
        if not self.turns:
            return []
        d = self.to_dict()
        out = ["", f"LLM: {d['calls']} calls in {d['turns']} turns = {d['calls_per_turn']:.3f} per turn "
                   f"({d['turns_with_calls']} turns made any; at most {d['max_calls_in_turn']} in one turn)",
               f"prompt tokens per turn: {d['prompt_tokens_per_turn']:.1f} vs "
               f"{d['baseline_prompt_tokens_per_turn']:.1f} for one full-SOP prompt per turn "
               f"({_pct(d['prompt_token_saving'])} fewer)"]
        if d["prompt_tokens_per_call"] is not None:
            out.append(f"prompt tokens per call: {d['prompt_tokens_per_call']:.1f}"
                       + (f" (server-reported: {d['server_prompt_tokens_per_call']:.1f})"
                          if d["server_prompt_tokens_per_call"] is not None else ""))
        out.append("calls by purpose: " + ", ".join(f"{k} {v}" for k, v in d["calls_by_purpose"].items())
                   + "; outcomes: " + ", ".join(f"{k} {v}" for k, v in d["outcomes"].items()))
        out.append(f"tokens: {ESTIMATOR}")
        return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"
