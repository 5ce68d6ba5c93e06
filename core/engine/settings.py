"""The engine's settings: their defaults, and the values a workspace's store.yaml ``settings`` gives them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class Settings:
    """Engine settings (store.yaml ``settings`` may override them)."""

    max_steps_per_turn: int = 8
    intent_threshold: float = 0.5
    tool_timeout_s: float = 5.0
    turn_wait_s: float = 20.0  # how long a message waits for the same session's previous turn
    turn_deadline_s: float = 10.0  # one deadline per turn, which every tool call and retry of the turn shares


def settings_from(values: Mapping[str, Any]) -> Settings:
    """The settings store.yaml's ``settings`` gives (the defaults for those it leaves out)."""
    return Settings(max_steps_per_turn=int(values.get("max_steps_per_turn", 8)),
                    intent_threshold=float(values.get("intent_threshold", 0.5)),
                    tool_timeout_s=float(values.get("tool_timeout_s", 5.0)),
                    turn_wait_s=float(values.get("turn_wait_s", Settings.turn_wait_s)),
                    turn_deadline_s=float(values.get("turn_deadline_s", Settings.turn_deadline_s)))
