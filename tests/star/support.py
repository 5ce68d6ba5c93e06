"""Paths of the STAR tests' own fixture: one small task in STAR's layout, written for these tests."""

from __future__ import annotations

import os
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixture"
TASK = FIXTURE / "tasks" / "library_renew"
REAL_STAR = Path(os.environ.get("STAR_DIR") or Path(__file__).resolve().parents[3] / "shared" / "eval" / "star")
"""The real STAR development slice, when it is there (tests that need it are skipped otherwise)."""
