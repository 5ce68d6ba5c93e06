"""The SOP studio's "Import STAR flow" popover driven through AppTest: import, see the SOP, chat with it."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.playground.conftest import snapshot
from tests.star.support import FIXTURE, TASK
from tests.ui.conftest import studio_gen, texts

FIRST_QUESTION = "What is your name, please?"  # the chart's first ask


def _studio(at: AppTest) -> None:
    at.switch_page("pages/studio.py").run()
    assert not at.exception, at.exception


def _chat_reply(at: AppTest, message: str) -> str:
    at.switch_page("pages/chat.py").run()
    at.chat_input(key="chat_input").set_value(message).run()
    assert not at.exception, at.exception
    return str(at.chat_message[-1].markdown[0].value)


def _sop_list(at: AppTest) -> list[str]:
    gen = studio_gen(Path(at.session_state["workspace"]), at.session_state["studio_generation"])
    return list(at.radio(key=f"sop_choice_{gen}").options)


def test_import_star_folder_from_the_studio_then_chat_runs_it(at: AppTest, app_ws: Path) -> None:
    _studio(at)
    assert "library_renew.json" not in _sop_list(at)
    assert at.button(key="import_star").disabled  # nothing to import yet
    at.text_input(key="star_dir").set_value(str(TASK)).run()
    assert not at.button(key="import_star").disabled
    at.button(key="import_star").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("STAR task library_renew (library.renew) saved and in use" in s.value for s in at.success), texts(at)
    assert (app_ws / "sops" / "library_renew.json").is_file()
    at.run()  # the studio lists files at the top of the script: the next run shows the new one
    assert "library_renew.json" in _sop_list(at)
    assert "import STAR task library_renew" in texts(at)  # the history tab offers it for undo
    assert _chat_reply(at, "I want to renew a library book") == FIRST_QUESTION


def test_import_star_upload_from_the_studio(at: AppTest, app_ws: Path) -> None:
    _studio(at)
    flow = (TASK / "library_renew.json").read_bytes()
    api = (FIXTURE / "apis" / "library_renew.json").read_bytes()
    at.file_uploader(key="star_flow").set_value(("library_renew.json", flow, "application/json")).run()
    at.file_uploader(key="star_api").set_value(("library_renew.json", api, "application/json")).run()
    at.button(key="import_star").click().run()
    assert not at.exception, at.exception
    assert any("STAR task library_renew (library.renew) saved" in s.value for s in at.success), texts(at)
    at.run()
    assert "library_renew.json" in _sop_list(at)


def test_a_wrong_star_folder_shows_an_error_and_changes_nothing(at: AppTest, app_ws: Path, tmp_path: Path) -> None:
    _studio(at)
    before = snapshot(app_ws)
    sops_before = _sop_list(at)
    missing = tmp_path / "star" / "tasks" / "no_such_task"
    at.text_input(key="star_dir").set_value(str(missing)).run()
    at.button(key="import_star").click().run()
    assert not at.exception, at.exception
    assert any(f"{missing}: not a folder" in e.value for e in at.error), texts(at)
    assert not any("saved" in s.value for s in at.success), [s.value for s in at.success]
    assert snapshot(app_ws) == before
    at.run()
    assert _sop_list(at) == sops_before and "Nothing to undo yet." in texts(at)


def test_a_star_upload_without_api_schema_shows_an_error_and_changes_nothing(at: AppTest, app_ws: Path) -> None:
    _studio(at)
    before = snapshot(app_ws)
    flow = (TASK / "library_renew.json").read_bytes()
    at.file_uploader(key="star_flow").set_value(("library_renew.json", flow, "application/json")).run()
    at.button(key="import_star").click().run()
    assert not at.exception, at.exception
    assert any("upload the task's API schema" in e.value for e in at.error), texts(at)
    assert snapshot(app_ws) == before
