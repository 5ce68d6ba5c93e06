"""The errors a workspace's own Python tools raise: ``from core.errors import ToolError``.

This is the public import for tools.py files (``raise ToolError("there is no order A-19", "invalid_input")``);
the engine's own code takes the same classes from :mod:`core.shared.errors`.
"""

from core.shared.errors import EngineError, SopError, ToolError, UserInputError

__all__ = ["EngineError", "SopError", "ToolError", "UserInputError"]
