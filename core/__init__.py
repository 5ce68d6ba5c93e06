"""SOP Agent Playground engine: run customer-care SOPs as a conversational agent."""

from core.build import Workspace, build_orchestrator, load_workspace

__all__ = ["Workspace", "build_orchestrator", "load_workspace"]
