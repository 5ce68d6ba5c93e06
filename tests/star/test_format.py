"""Reading STAR's files: task folders, API schemas, dialogues and query constraints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.importers.star_format import constraint_value, constraints, iter_dialogues, load_task, split_camel
from core.shared.errors import UserInputError
from tests.star.support import FIXTURE, TASK


def test_a_task_folder_loads_with_its_api_schema_and_db_spec() -> None:
    task = load_task(TASK)
    assert task.name == "library_renew"
    assert task.alias == "library_loan_renewal"  # the chart's own name differs from its folder's
    assert task.graph["ask_name"] == "library_ask_card"
    assert task.api is not None and task.api.name == "library_renew"
    assert task.api.required == ["Title", "RequestType"]
    assert [f.name for f in task.api.db_fields] == ["Title", "Weeks", "DueDate"]
    assert task.api.input("Title") is not None and task.api.input("Title").categories == ("The Hobbit", "Dune", "Emma")


def test_an_api_schema_beside_the_flowchart_is_found_too(tmp_path: Path) -> None:
    folder = tmp_path / "my_task"
    folder.mkdir()
    (folder / "my_task.json").write_text((TASK / "library_renew.json").read_text())
    (folder / "api.json").write_text((FIXTURE / "apis" / "library_renew.json").read_text())
    task = load_task(folder)
    assert task.api is not None and task.api.name == "my_task" and len(task.api.inputs) == 5


def test_missing_or_malformed_files_say_which_and_where(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no STAR flowchart here"):
        load_task(tmp_path)
    (tmp_path / "t.json").write_text('{"replies": {"a": "A"},\n "graph": [}')
    with pytest.raises(UserInputError) as err:
        load_task(tmp_path)
    assert err.value.location is not None and err.value.location.line == 2
    (tmp_path / "t.json").write_text(json.dumps({"replies": {}, "graph": {}}))
    with pytest.raises(UserInputError, match="needs 'replies'"):
        load_task(tmp_path)


def test_constraint_values_are_read_as_the_wizard_meant_them() -> None:
    assert constraint_value('"Dune"') == "Dune"
    assert constraint_value("44172290") == 44172290
    assert constraint_value("null") is None
    assert constraint_value('api.is_equal_to("Los Angeles")') == "Los Angeles"
    assert constraint_value('api.is_one_of(["Monday", "Friday"])') == ["Monday", "Friday"]
    assert constraint_value("api.is_greater_than(15)") == "api.is_greater_than(15)"
    event = {"Constraints": [{"Title": '"Dune"'}, {"LibraryCardNumber": "null"}, {"Title": '"Emma"'}]}
    assert constraints(event) == {"Title": "Emma"}  # nulls dropped, a later entry wins


def test_dialogues_load_in_id_order_with_their_scenario() -> None:
    dialogues = list(iter_dialogues(FIXTURE / "dialogues"))
    assert [d.id for d in dialogues] == ["1", "2"]
    first = dialogues[0]
    assert first.tasks == ["library_renew"] and first.happy and not first.multi_task and first.complete
    assert dialogues[1].happy is False


def test_camel_case_names_read_as_words() -> None:
    assert split_camel("DateOfBirth") == "Date Of Birth"
    assert split_camel("SecurityAnswer1") == "Security Answer 1"
    assert split_camel("PIN") == "PIN"
