"""Services behind the Streamlit playground (no Streamlit here): chat, SOP studio, inspector, store, tests."""

from core.playground.changes import Backup, CheckResult
from core.playground.service import Playground, SopCheck, SopFile, TurnView
from core.playground.uploads import MappingProblem, UploadError, suggest_mapping
from core.playground.workspaces import BLANK, WorkspaceInfo, create_workspace, known_workspaces

__all__ = ["BLANK", "Backup", "CheckResult", "MappingProblem", "Playground", "SopCheck", "SopFile", "TurnView",
           "UploadError", "WorkspaceInfo", "create_workspace", "known_workspaces", "suggest_mapping"]
