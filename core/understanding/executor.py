"""What reading a message asks of the SOP's flow executor (the engine's :class:`core.engine.flow.SpecialistAgent`).

The reader decides what a message means; some of that depends on where the procedure stands (the slot kinds
its steps declare, whether a step may be skipped, what a search over the next days would find). It asks
through this protocol, so the reader never imports the engine that acts on what it read.
"""

from __future__ import annotations

from typing import Any, Protocol

from core.shared.models import Goal
from core.sop.graph import Sop
from core.workspace.slots import SlotType


class FlowExecutor(Protocol):
    """The questions the reader asks of one SOP's flow executor."""

    def types(self, sop: Sop) -> dict[str, SlotType]:
        """The kind of each slot the SOP fills."""
        ...

    def can_skip(self, goal: Goal, sop: Sop) -> bool:
        """Whether the SOP says what happens when the pending question gets no answer."""
        ...

    def changed_world(self, goal: Goal, sop: Sop) -> bool:
        """Whether a step of the goal already ran a tool that changes the world, and it succeeded."""
        ...

    def start_search(self, goal: Goal, sop: Sop, named: dict[str, Any],
                     given: dict[str, Any] | None = None) -> str | None:
        """Start a search over the next values of an ordered slot; None when the SOP has none to search."""
        ...

    def only_offers_left(self, goal: Goal, sop: Sop) -> bool:
        """Whether all the goal still has to do is offer more help."""
        ...
