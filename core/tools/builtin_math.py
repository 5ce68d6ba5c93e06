"""The built-in ``math.evaluate`` tool."""

from __future__ import annotations

from typing import Any

from core.tools.base import ToolSpec
from core.tools.mathexpr import evaluate
from core.workspace.params import Param


class MathTool:
    """Safe arithmetic (AST walk; no names, attributes or calls)."""

    spec = ToolSpec("math.evaluate", "Evaluate an arithmetic expression safely", [Param("expression")])

    def run(self, args: dict[str, Any]) -> Any:
        return {"expression": str(args["expression"]), "value": evaluate(str(args["expression"]))}
