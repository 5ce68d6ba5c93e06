"""Reading a conversation test file (ARCHITECTURE.md §6): its YAML, its keys and the types of their values.

Every problem is reported with the line and column it is at, so a file that cannot be run says why instead of
being skipped or half run.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from core.shared.errors import UserInputError

NULL = "tag:yaml.org,2002:null"
BOOL = "tag:yaml.org,2002:bool"
OUTCOME_KEYS = ("result", "error", "kind", "timeout")
MEMORY_KEYS = ("action", "observation", "feedback")

Check = Callable[[Node, str, list[str]], None]


class TestFileError(UserInputError):
    """A conversation test file that cannot be run: each problem as ``line L, column C: reason``."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def load_spec(path: Path) -> dict[str, Any]:
    """The test file as data, once its YAML reads and its keys and values have the documented shapes.

    Raises:
        TestFileError: listing every problem found, each with its line and column.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TestFileError([f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        spec = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        reason = f"{exc.problem}" + (f" ({exc.context})" if exc.context else "")
        raise TestFileError([_at(exc.problem_mark, reason) if exc.problem_mark else reason]) from None
    except yaml.YAMLError as exc:
        raise TestFileError([str(exc)]) from None
    problems: list[str] = []
    if root is None:
        problems.append("the file is empty: a test needs 'turns:'")
    else:
        _file(root, problems)
    if problems:
        raise TestFileError(problems)
    assert isinstance(spec, dict)
    return spec


def _at(mark: Any, reason: str) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: {reason}"


def _file(node: Node, out: list[str]) -> None:
    fields: dict[str, Check] = {"name": _text, "workspace": _text, "customer_id": _text, "tools": _tools,
                                "turns": _turns}
    _mapping(node, "the test file", fields, out, required=("turns",),
             may_be_empty=("name", "workspace", "customer_id", "tools"))


def _mapping(node: Node, what: str, fields: dict[str, Check], out: list[str], required: tuple[str, ...] = (),
             may_be_empty: Collection[str] = ()) -> None:
    if not isinstance(node, MappingNode):
        out.append(_at(node.start_mark, f"{what} must be a mapping of {', '.join(fields)}"))
        return
    seen: set[str] = set()
    for key, value in node.value:
        name = str(key.value) if isinstance(key, ScalarNode) else ""
        if name in seen:
            out.append(_at(key.start_mark, f"{name!r} is given twice in {what}"))
        seen.add(name)
        if name in may_be_empty and isinstance(value, ScalarNode) and value.tag == NULL:
            continue  # left empty: the default (the file's name, the default workspace, session s1, ...)
        if name not in fields:
            near = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.6)
            hint = f"did you mean {near[0]!r}?" if near else f"expected one of {', '.join(fields)}"
            out.append(_at(key.start_mark, f"unknown key {name!r} in {what} ({hint})"))
            continue
        fields[name](value, name, out)
    for name in required:
        if name not in seen:
            out.append(_at(node.start_mark, f"{what} has no {name!r}"))


def _text(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, ScalarNode) or node.tag == NULL:
        out.append(_at(node.start_mark, f"{name!r} must be a single value"))


def _text_or_null(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, ScalarNode):
        out.append(_at(node.start_mark, f"{name!r} must be a single value or null"))


def _flag(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, ScalarNode) or node.tag != BOOL:
        out.append(_at(node.start_mark, f"{name!r} must be true or false"))


def _texts(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, SequenceNode):
        out.append(_at(node.start_mark, f"{name!r} must be a list, e.g. [{_example(node)}]"))
        return
    for item in node.value:
        if not isinstance(item, ScalarNode):
            out.append(_at(item.start_mark, f"each entry of {name!r} must be a single value"))


def _example(node: Node) -> str:
    return str(node.value) if isinstance(node, ScalarNode) and node.tag != NULL else "..."


def _any_mapping(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, MappingNode):
        out.append(_at(node.start_mark, f"{name!r} must be a mapping"))


def _tools(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, MappingNode):
        out.append(_at(node.start_mark, f"{name!r} must map each tool name to its outcome"))
        return
    for key, value in node.value:
        tool = str(key.value) if isinstance(key, ScalarNode) else "?"
        for outcome in value.value if isinstance(value, SequenceNode) else [value]:
            _outcome(outcome, tool, out)


def _outcome(node: Node, tool: str, out: list[str]) -> None:
    what = f"the outcome of {tool!r}"
    fields: dict[str, Check] = {"result": lambda *_: None, "error": _text, "kind": _text, "timeout": _flag}
    if isinstance(node, MappingNode) and not any(
            isinstance(k, ScalarNode) and k.value in ("result", "error", "timeout") for k, _ in node.value):
        out.append(_at(node.start_mark, f"{what} needs one of result, error or timeout"))
    _mapping(node, what, fields, out)


def _turns(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, SequenceNode):
        out.append(_at(node.start_mark, "'turns' must be a list of turns, each with 'user:'"))
        return
    fields: dict[str, Check] = {"user": _text, "session": _text, "tools": _tools, "expect": _expect}
    for i, turn in enumerate(node.value, start=1):
        _mapping(turn, f"turn {i}", fields, out, required=("user",), may_be_empty=("session", "tools", "expect"))


def _expect(node: Node, name: str, out: list[str]) -> None:
    fields: dict[str, Check] = {
        "active_goal": _text_or_null, "status": _text_or_null, "missing": _texts, "slots": _any_mapping,
        "stack": _texts, "tools": _texts, "actions": _texts, "goal_status": _any_mapping,
        "reply_contains": _texts, "reply_not_contains": _texts, "ended": _flag, "memory": _memory,
    }
    _mapping(node, "'expect'", fields, out)


def _memory(node: Node, name: str, out: list[str]) -> None:
    if not isinstance(node, SequenceNode):
        out.append(_at(node.start_mark, "'memory' must be a list of entries (action, observation, feedback)"))
        return
    fields: dict[str, Check] = {k: lambda *_: None for k in MEMORY_KEYS}
    for i, entry in enumerate(node.value, start=1):
        _mapping(entry, f"memory entry {i}", fields, out)
