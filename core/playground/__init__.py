"""Services behind the Streamlit playground (no Streamlit here): chat, SOP studio, inspector, store, tests."""

from core.playground.changes import Backup, CheckResult
from core.playground.chat import TurnView
from core.playground.newstore import STARTERS, NewStore
from core.playground.service import Playground
from core.playground.store import create_store
from core.playground.studio import SopCheck, SopFile
from core.playground.uploads import MappingProblem, UploadError, suggest_mapping
from core.playground.workspaces import BLANK, WorkspaceInfo, create_workspace, known_workspaces

__all__ = ["BLANK", "STARTERS", "Backup", "CheckResult", "MappingProblem", "NewStore", "Playground", "SopCheck",
           "SopFile", "TurnView", "UploadError", "WorkspaceInfo", "create_store", "create_workspace",
           "known_workspaces", "suggest_mapping"]
