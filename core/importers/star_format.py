"""The file formats of the STAR dataset (Mosig et al. 2020): task flowcharts, API schemas, dialogues.

A STAR folder is laid out as::

    tasks/<task>/<task>.json   {"task", "replies": {node: text}, "graph": {node: next node}}
    apis/<task>.json           {"input": [field], "output": [field], "required": [...], "db", "function"}
    apis/dbs/<db>.json         [field]: field specs of the task's mock database (specs, not rows)
    dialogues/<id>.json        {"DialogueID", "Scenario", "CompletionLevel", "Events": [...]}

Nothing here names a task: every task folder of that shape loads the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.shared.errors import Location, UserInputError


@dataclass(frozen=True)
class ApiField:
    """One field of an API schema or mock-DB spec."""

    name: str
    type: str = "ShortString"
    readable: str = ""
    categories: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    @classmethod
    def parse(cls, raw: Any, where: str) -> ApiField:
        """A field from its JSON form.

        Raises:
            UserInputError: when the entry is not an object with a ``Name``.
        """
        if not isinstance(raw, dict) or not str(raw.get("Name") or "").strip():
            raise UserInputError("every field needs a 'Name'", Location(where))
        cats = raw.get("Categories") or []
        return cls(name=str(raw["Name"]).strip(), type=str(raw.get("Type") or "ShortString"),
                   readable=str(raw.get("ReadableName") or "").strip(),
                   categories=tuple(str(c) for c in cats) if isinstance(cats, list) else (),
                   minimum=_int_or_none(raw.get("Min")), maximum=_int_or_none(raw.get("Max")))

    @property
    def label(self) -> str:
        """The human name: the readable name, else the name with its camel case split."""
        return self.readable or split_camel(self.name)

    def to_json(self) -> dict[str, Any]:
        """The field in STAR's JSON form."""
        out: dict[str, Any] = {"Name": self.name, "Type": self.type}
        if self.readable:
            out["ReadableName"] = self.readable
        if self.categories:
            out["Categories"] = list(self.categories)
        if self.minimum is not None:
            out["Min"] = self.minimum
        if self.maximum is not None:
            out["Max"] = self.maximum
        return out


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def split_camel(name: str) -> str:
    """``DateOfBirth`` -> ``Date Of Birth``, ``PIN`` stays, ``SecurityAnswer1`` -> ``Security Answer 1``."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z0-9])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Za-z])", " ", name)
    return spaced.replace("_", " ").strip()


@dataclass
class StarApi:
    """A STAR API schema: its inputs (the slots a query may constrain), outputs and mock DB."""

    name: str
    inputs: list[ApiField]
    outputs: list[ApiField]
    required: list[str]
    db: str
    db_fields: list[ApiField] = field(default_factory=list)
    function: str = ""

    def input(self, name: str) -> ApiField | None:
        """An input field by name."""
        return next((f for f in self.inputs if f.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The schema and its DB spec as one JSON object (what an imported mock API reads)."""
        return {"name": self.name, "function": self.function, "db": self.db, "required": list(self.required),
                "input": [f.to_json() for f in self.inputs], "output": [f.to_json() for f in self.outputs],
                "db_fields": [f.to_json() for f in self.db_fields]}

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str) -> StarApi:
        """Read back :meth:`to_json` output (a plain STAR schema too: its name is then its file's)."""
        return cls(name=str(data.get("name") or Path(where).name.removesuffix(".json")),
                   function=str(data.get("function") or ""), db=str(data.get("db") or ""),
                   required=[str(r) for r in data.get("required") or []],
                   inputs=[ApiField.parse(f, where) for f in data.get("input") or []],
                   outputs=[ApiField.parse(f, where) for f in data.get("output") or []],
                   db_fields=[ApiField.parse(f, where) for f in data.get("db_fields") or []])


@dataclass
class StarTask:
    """One STAR task: the flowchart's replies and graph, and the API its queries call."""

    name: str
    replies: dict[str, str]
    graph: dict[str, str]
    api: StarApi | None
    folder: Path
    alias: str = ""  # the chart's own name for the task when it differs from the folder's


def read_json(path: Path) -> Any:
    """A JSON file's content.

    Raises:
        UserInputError: when the file is missing or is not valid JSON (with line and column).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise UserInputError("file not found", Location(str(path))) from exc
    except UnicodeDecodeError as exc:
        raise UserInputError("not UTF-8 text", Location(str(path))) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"JSON syntax: {exc.msg}", Location(str(path), exc.lineno, exc.colno)) from exc


def task_file(task_dir: Path) -> Path:
    """The flowchart file of a task folder: ``<folder>/<folder>.json``, else the one JSON file there
    with ``replies`` and ``graph``.

    Raises:
        UserInputError: when the folder holds no flowchart.
    """
    if not task_dir.is_dir():
        raise UserInputError("not a folder", Location(str(task_dir)))
    named = task_dir / f"{task_dir.name}.json"
    if named.is_file():
        return named
    for path in sorted(task_dir.glob("*.json")):
        data = read_json(path)
        if isinstance(data, dict) and "replies" in data and "graph" in data:
            return path
    raise UserInputError("no STAR flowchart here (a JSON file with 'replies' and 'graph')", Location(str(task_dir)))


def api_candidates(task_dir: Path) -> list[Path]:
    """Where a task's API schema may be: beside the flowchart, or in the STAR layout's ``apis/``."""
    name = task_dir.name
    return [task_dir / "api.json", task_dir / f"{name}.api.json", task_dir.parent.parent / "apis" / f"{name}.json",
            task_dir.parent / "apis" / f"{name}.json"]


def load_task(task_dir: str | Path, api_file: str | Path | None = None) -> StarTask:
    """Load a STAR task folder and its API schema (found next to it when ``api_file`` is None).

    Raises:
        UserInputError: when a file is missing or malformed; the message names the file.
    """
    folder = Path(task_dir)
    path = task_file(folder)
    data = read_json(path)
    if not isinstance(data, dict):
        raise UserInputError("a STAR flowchart must be a JSON object", Location(str(path)))
    replies, graph = data.get("replies"), data.get("graph")
    if not isinstance(replies, dict) or not replies or not isinstance(graph, dict):
        raise UserInputError("a STAR flowchart needs 'replies' (node -> text) and 'graph' (node -> next node)",
                             Location(str(path)))
    api_path = Path(api_file) if api_file else next((p for p in api_candidates(folder) if p.is_file()), None)
    api = load_api(api_path) if api_path is not None else None
    alias = str(data.get("task") or "")
    return StarTask(name=folder.name, replies={str(k): str(v) for k, v in replies.items()},
                    graph={str(k): str(v) for k, v in graph.items()}, api=api, folder=folder,
                    alias=alias if alias != folder.name else "")


def load_api(path: Path) -> StarApi:
    """An API schema and, when present beside it in ``dbs/``, its mock-DB spec.

    Raises:
        UserInputError: when the schema is malformed.
    """
    data = read_json(path)
    where = str(path)
    if not isinstance(data, dict) or not isinstance(data.get("input"), list):
        raise UserInputError("a STAR API schema must be an object with an 'input' list", Location(where))
    db = str(data.get("db") or "")
    db_fields: list[ApiField] = []
    for spec in (path.parent / "dbs" / f"{db}.json", path.parent / "db.json"):
        if db and spec.is_file():
            raw = read_json(spec)
            db_fields = [ApiField.parse(f, str(spec)) for f in raw] if isinstance(raw, list) else []
            break
    return StarApi(name=path.name.removesuffix(".api.json").removesuffix(".json") if path.name != "api.json"
                   else path.parent.name,
                   inputs=[ApiField.parse(f, where) for f in data["input"]],
                   outputs=[ApiField.parse(f, where) for f in data.get("output") or []],
                   required=[str(r) for r in data.get("required") or []], db=db, db_fields=db_fields,
                   function=str(data.get("function") or ""))


# ---------------------------------------------------------------------------- dialogues


@dataclass
class Dialogue:
    """One STAR dialogue: the tasks the wizard could do and the events, in order."""

    id: str
    tasks: list[str]
    happy: bool
    multi_task: bool
    complete: bool
    events: list[dict[str, Any]]
    today: str = ""  # the weekday the wizard was told it is ("Today is Friday"), if any


def load_dialogue(path: Path) -> Dialogue:
    """One dialogue file.

    Raises:
        UserInputError: when the file is not a STAR dialogue.
    """
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("Events"), list):
        raise UserInputError("a STAR dialogue must be an object with 'Events'", Location(str(path)))
    scenario = data.get("Scenario") or {}
    tasks = [str(c.get("Task")) for c in scenario.get("WizardCapabilities") or [] if isinstance(c, dict)]
    today = re.search(r"\btoday is (\w+day)\b", str(scenario.get("WizardTask") or ""), re.I)
    return Dialogue(id=str(data.get("DialogueID") or path.stem), tasks=tasks, happy=bool(scenario.get("Happy")),
                    multi_task=bool(scenario.get("MultiTask")) or len(tasks) > 1,
                    complete=data.get("CompletionLevel", "Complete") == "Complete",
                    events=[e for e in data["Events"] if isinstance(e, dict)],
                    today=today.group(1).capitalize() if today else "")


def iter_dialogues(folder: Path) -> Iterator[Dialogue]:
    """Every dialogue in a folder, by file name."""
    for path in sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
        yield load_dialogue(path)


API_CALL = re.compile(r"^\s*api\.(\w+)\((.*)\)\s*$", re.S)


def constraint_value(raw: Any) -> Any:
    """A query constraint's value: JSON literals as they are, ``api.is_equal_to(x)`` as ``x``,
    ``api.is_one_of([...])`` as the list; any other ``api.*`` comparison stays as its text."""
    if not isinstance(raw, str):
        return raw
    m = API_CALL.match(raw)
    if m:
        name, inner = m.groups()
        if name in ("is_equal_to", "is_one_of"):
            try:
                return json.loads(inner)
            except json.JSONDecodeError:
                return inner.strip()
        return raw.strip()
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()


def constraints(event: dict[str, Any]) -> dict[str, Any]:
    """A query event's constraints as one dict (a later entry for a slot wins; nulls are left out)."""
    out: dict[str, Any] = {}
    for entry in event.get("Constraints") or []:
        if isinstance(entry, dict):
            for key, raw in entry.items():
                value = constraint_value(raw)
                if value is not None:
                    out[str(key)] = value
    return out
