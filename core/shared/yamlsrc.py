"""YAML loading that remembers the line of every key, for messages that say where."""

from __future__ import annotations

from typing import Any

import yaml

Path_ = tuple[str | int, ...]


def load_with_lines(text: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML; return the data and a map from key path to 1-based line.

    Raises:
        yaml.YAMLError: on a syntax error (its ``problem_mark`` says where).
    """
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: dict[Path_, int] = {}
    if node is not None:
        _walk(node, (), lines)
    data = yaml.safe_load(text)
    return data, lines


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = path + (str(key.value),)
            _walk(value, sub, lines)
            lines[sub] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, path + (i,), lines)


def line_of(lines: dict[Path_, int], path: Path_) -> int:
    """The line of a path, or of its nearest ancestor that has one."""
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)
