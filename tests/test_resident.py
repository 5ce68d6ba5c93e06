"""Reading this process's resident memory, and giving back what was freed."""

from __future__ import annotations

from core.resident import give_back, resident_mb


def test_garbage_freed_is_given_back_to_the_system() -> None:
    before = resident_mb()
    blocks = [bytearray(4096) for _ in range(40_000)]  # ~160 MB in small blocks: the C heap, not mmap
    pinned = bytearray(4096)  # above them: the heap cannot shrink from its top by itself
    grown = resident_mb()
    del blocks
    freed = give_back()
    assert grown - before > 100 and freed > 50 and resident_mb() < grown - 50 and len(pinned) == 4096


def test_a_process_that_is_not_there_holds_nothing() -> None:
    assert resident_mb() > 0 and resident_mb(2**22 + 12345) == 0.0
