"""Reading this process's resident memory, and giving back what was freed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.shared.resident import resident_mb

ROOT = Path(__file__).resolve().parents[1]


GIVE_BACK = """
import json
from core.shared.resident import give_back, resident_mb

before = resident_mb()
blocks = [bytearray(4096) for _ in range(40_000)]  # ~160 MB in small blocks: the C heap, not mmap
pinned = bytearray(4096)  # above them: the heap cannot shrink from its top by itself
grown = resident_mb()
del blocks
freed = give_back()
print(json.dumps({"before": before, "grown": grown, "freed": freed, "after": resident_mb(), "pinned": len(pinned)}))
"""


def test_garbage_freed_is_given_back_to_the_system() -> None:
    # in a fresh process: a long test session's heap has room of its own, so its growth says nothing
    done = subprocess.run([sys.executable, "-c", GIVE_BACK], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          check=True)
    got = json.loads(done.stdout)
    assert got["grown"] - got["before"] > 100 and got["freed"] > 50 and got["after"] < got["grown"] - 50, got


def test_a_process_that_is_not_there_holds_nothing() -> None:
    assert resident_mb() > 0 and resident_mb(2**22 + 12345) == 0.0
