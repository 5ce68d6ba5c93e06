"""The engines one API worker serves (:mod:`core.server.api`): one per workspace, built once on the shared
state store; the names workspaces are served under and the turns a worker computes at once."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.shared.concurrency import TurnGate
from core.shared.errors import SopError, UserInputError

log = logging.getLogger(__name__)

ENV_WORKSPACES = "SOP_API_WORKSPACES"  # os.pathsep-separated folders, the default first (set by `serve`)
ENV_COMPUTE = "SOP_API_COMPUTE"  # turns a worker computes at once (set by `serve --compute`)
# Vectors a worker keeps in memory per workspace (about 1.8 kB each): a message is rarely sent twice, so more
# would only grow a long-running worker (20,000 hold 36 MB); the workspace's disk cache keeps every one.
WORKER_VECTORS = 4096


def compute_slots(value: str | None = None) -> int:
    """Turns one worker computes at once: ``value``, else ``SOP_API_COMPUTE``, else 1 (a turn is CPU work
    and a worker runs Python on one core at a time; turns waiting on a tool, a model or the memory service
    give their slot up, see :mod:`core.shared.concurrency`)."""
    raw = (value if value is not None else os.environ.get(ENV_COMPUTE, "")).strip() or "1"
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if slots < 1:
        raise UserInputError(f"{ENV_COMPUTE} takes a whole number of turns, at least 1; got {raw!r}")
    return slots


def workspace_name(root: Path) -> str:
    """The name a workspace is served under: its folder's name."""
    return root.resolve().name


@dataclass
class Served:
    """The engines of one worker process: one per workspace, built once."""

    roots: dict[str, Path]
    default: str
    engines: dict[str, Any] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    sops: dict[str, list[str]] = field(default_factory=dict)
    error: str = ""
    ready: threading.Event = field(default_factory=threading.Event)
    build: Callable[[Path, Any], Any] | None = None  # (root, loaded workspace) -> engine; default build_orchestrator
    gate: TurnGate = field(default_factory=lambda: TurnGate(1))  # turns computing at once in this worker

    def load(self) -> None:
        """Build every engine (the embedding model is shared); a failure is kept for ``/ready``."""
        from core.engine.build import build_orchestrator, load_workspace
        from core.retrieval.embedding import CachedEmbedder, shared_model
        from core.shared.resident import give_back
        from core.workspace.paths import state_folder

        try:
            for name, root in self.roots.items():
                ws = load_workspace(root, CachedEmbedder(shared_model(), state_folder(root) / "embeddings",
                                                         max_memory=WORKER_VECTORS))
                self.engines[name] = (self.build or (lambda r, w: build_orchestrator(r, loaded=w)))(root, ws)
                self.titles[name] = ws.files.config.name
                self.sops[name] = [s.id for s in ws.sops]
            give_back()  # what parsing, embedding and indexing freed goes back to the system, not the worker
            self.ready.set()
        except (SopError, OSError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.error("the API cannot serve: %s", self.error)

    def close(self) -> None:
        stores = []
        for orch in self.engines.values():
            orch.close()
            stores += [orch.store, orch.memory]
        for s in dict.fromkeys(stores):  # a store shared by several engines is closed once
            try:
                s.close()
            except Exception as exc:  # noqa: BLE001 - shutting down: logged, the rest still closed
                log.warning("closing %r: %s", s, exc)
