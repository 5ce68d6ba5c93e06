"""Resident memory of this process: reading it, and giving back what loading left unused."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)


def resident_mb(pid: int | str = "self") -> float:
    """A process's resident memory (``VmRSS``) in MB; 0 where ``/proc`` has no such process."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def give_back() -> float:
    """Collect unreachable Python objects, then ask the C allocator to return its free pages to the system
    (glibc's ``malloc_trim``): loading a workspace parses, embeds and indexes, and the memory it freed stays
    with the process otherwise. The MB of resident memory given back (0 without glibc)."""
    before = resident_mb()
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    freed = max(0.0, before - resident_mb())
    log.debug("gave back %.1f MB of resident memory", freed)
    return freed
