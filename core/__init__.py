"""SOP Agent Playground engine: run customer-care SOPs as a conversational agent.

The public Python API is ``load_workspace``, ``build_orchestrator`` and ``Workspace``. They are imported on first
use, so importing one part of the package (the language helpers, the session stores) does not load the engine.
The parts and their layers: docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.engine.build import Workspace, build_orchestrator, load_workspace

__all__ = ["Workspace", "build_orchestrator", "load_workspace"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from core.engine import build

        return getattr(build, name)
    raise AttributeError(f"module 'core' has no attribute {name!r}")
