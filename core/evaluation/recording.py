"""Conversation tests written from what the engine did (ARCHITECTURE.md §6 format).

Two jobs of the playground's "from chat to test":

* :func:`chat_spec` turns a chat into a test: the customer's messages in order, each
  with the results of the tools that reach outside the workspace (HTTP endpoints,
  Python functions) recorded as scripted outcomes, so the test does not depend on a
  server being up or a ticket number repeating. Tools inside the workspace (inventory,
  knowledge base, tables, arithmetic) run for real, so a changed inventory shows.
  :func:`fill_expectations` then writes each turn's ``expect`` from a run of it.
* :func:`accept` brings an existing test file up to date with what the engine does
  now, keeping the author's choice of keys, their comments and layout: only the
  values of the keys a turn already checks change.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from core.evaluation.testing import FileResult, WorkspaceCache, run_spec
from core.shared.errors import UserInputError
from core.tools.base import classify_error

# the keys a recorded turn checks; goal_status and memory are left to the author
RECORDED = ("active_goal", "status", "missing", "slots", "stack", "tools", "actions", "reply_contains", "ended")
_DROP = object()


def chat_spec(name: str, traces: Iterable[dict[str, Any]], *, external: Collection[str],
              customer_id: str = "", workspace: str = "") -> dict[str, Any]:
    """A conversation test (without expectations yet) from a chat's turn traces, oldest first."""
    spec: dict[str, Any] = {"name": name}
    if workspace:
        spec["workspace"] = workspace
    if customer_id:
        spec["customer_id"] = customer_id
    turns = []
    for tr in traces:
        turn: dict[str, Any] = {"user": str(tr.get("user", ""))}
        script: dict[str, list[dict[str, Any]]] = {}
        for call in tr.get("tool_calls") or []:
            if call.get("tool") in external and call.get("error_kind") != "denied":
                script.setdefault(str(call["tool"]), []).append(outcome(call))
        if script:
            turn["tools"] = {tool: (calls[0] if len(calls) == 1 else calls) for tool, calls in script.items()}
        turns.append(turn)
    spec["turns"] = turns
    return spec


def outcome(call: dict[str, Any]) -> dict[str, Any]:
    """A traced tool call as the scripted outcome that gives the same result again."""
    if call.get("ok", True):
        return {"result": call.get("result")}
    if call.get("error_kind") == "timeout":
        return {"timeout": True}
    error = str(call.get("error") or "failed")
    kind = str(call.get("error_kind") or "failure")
    return {"error": error} if classify_error(error) == kind else {"error": error, "kind": kind}


def fill_expectations(spec: dict[str, Any], run: FileResult) -> dict[str, Any]:
    """``spec`` with every turn's ``expect`` set to what that turn did in ``run``."""
    for turn, done in zip(spec["turns"], run.turns, strict=False):
        seen = done.seen
        expect = {k: seen[k] for k in RECORDED if k in seen}
        for key in ("missing", "slots"):
            if not expect.get(key):
                expect.pop(key, None)
        turn["expect"] = expect
    return spec


def recorded_test(name: str, traces: Iterable[dict[str, Any]], *, external: Collection[str], path: Path,
                  root: Path, cache: WorkspaceCache, customer_id: str = "") -> tuple[dict[str, Any], FileResult]:
    """A conversation test of the workspace at ``root`` from a chat's turn traces, to be written at ``path``:
    :func:`chat_spec`, run once as written, then :func:`fill_expectations` from that run.

    Raises:
        UserInputError: the chat could not be replayed as a test.
    """
    spec = chat_spec(name, traces, external=external, customer_id=customer_id,
                     workspace=os.path.relpath(root, path.parent))
    first = run_spec(spec, path, root, cache)
    if first.error:
        raise UserInputError(f"the chat could not be replayed as a test: {first.error}")
    return fill_expectations(spec, first), first


class UnreadableTest(UserInputError):
    """A test file that would not read back as the data it was written from."""


def dump(spec: dict[str, Any]) -> str:
    """A test spec as YAML text in the layout of hand-written ones: keys in the order given, short lists
    and maps inline, replies of several lines as literal blocks; a text that would not read back as itself
    unquoted ("Confirm? (yes or no)" in a list, "yes", "12") is quoted.

    Raises:
        UnreadableTest: the text would not read back, with the test runner's own loader, as ``spec``
            (naming the first value that differs); nothing should be written then.
    """
    out = io.StringIO()
    _rt().dump(_styled(spec, top=True), out)
    text = out.getvalue()
    check_reads_back(text, spec)
    return text


def check_reads_back(text: str, spec: Any) -> None:
    """Raise :class:`UnreadableTest` unless ``text`` loads (as the test runner loads it) to ``spec``."""
    try:
        back = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UnreadableTest(f"the test would not read back: {exc}") from exc
    where = _first_difference(spec, back)
    if where is not None:
        raise UnreadableTest(f"the test would not read back as written: {where}")


def _first_difference(want: Any, got: Any, at: str = "") -> str | None:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            if key not in got or key not in want:
                return f"{at}{key}: {'missing' if key not in got else 'unexpected'}"
            found = _first_difference(want[key], got[key], f"{at}{key}.")
            if found is not None:
                return found
        return None
    if isinstance(want, list | tuple) and isinstance(got, list):
        if len(want) != len(got):
            return f"{at.rstrip('.')}: {len(want)} items written, {len(got)} read"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            found = _first_difference(w, g, f"{at}{i}.")
            if found is not None:
                return found
        return None
    if want != got or isinstance(want, bool) != isinstance(got, bool) or isinstance(want, str) != isinstance(got, str):
        return f"{at.rstrip('.')}: {want!r} written, {got!r} read"
    return None


def _styled(value: Any, *, top: bool = False) -> Any:
    if isinstance(value, str):
        return LiteralScalarString(value) if "\n" in value else _quoted(value)
    if isinstance(value, dict):
        mapping = CommentedMap((k, _styled(v)) for k, v in value.items())
        if not top and value and all(_plain(v) for v in value.values()) and len(value) <= 6:
            mapping.fa.set_flow_style()
        return mapping
    if isinstance(value, list):
        seq = CommentedSeq(_styled(v) for v in value)
        if all(_plain(v) and "\n" not in str(v) for v in value):
            seq.fa.set_flow_style()
        return seq
    return value


def _quoted(value: Any) -> Any:
    """A text value quoted when it would not read back as itself unquoted."""
    return DoubleQuotedScalarString(value) if isinstance(value, str) and not _plain_reads_back(value) else value


def _plain_reads_back(text: str) -> bool:
    """Whether a text written unquoted reads back as itself, as a map value and inside an inline list."""
    try:
        return yaml.safe_load(f"k: {text}") == {"k": text} and yaml.safe_load(f"k: [{text}]") == {"k": [text]}
    except yaml.YAMLError:
        return False


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def file_stem(name: str) -> str:
    """A file name for a test called ``name``: lower-case words joined by underscores."""
    stem = re.sub(r"[^\w]+", "_", name.strip().lower(), flags=re.UNICODE).strip("_")
    return stem[:60] or "chat"


def _rt() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 100_000
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return rt


def accept(text: str, run: FileResult) -> str:
    """The test file ``text`` with each checked value replaced by what ``run`` observed.

    A turn keeps the keys it had: ``reply_contains`` keeps the phrases the new reply still
    has (the whole new reply when none is left), ``reply_not_contains`` drops the phrases
    the reply now has, ``slots``/``goal_status`` keep their names with the new values,
    ``missing`` keeps the slots still missing; the other keys take the observed value.
    ``memory`` is left as written.
    """
    rt = _rt()
    data = rt.load(text)
    turns = data.get("turns") if isinstance(data, dict) else None
    for turn, done in zip(turns or [], run.turns, strict=False):
        expect = turn.get("expect") if isinstance(turn, dict) else None
        if not isinstance(expect, dict):
            continue
        for key in list(expect):
            if key == "memory" or key not in done.seen and key not in ("reply_not_contains",):
                continue
            new = _accepted(key, expect[key], done.seen, done.reply)
            if new is _DROP:
                del expect[key]
            else:
                expect[key] = _same_style(expect[key], new)
    out = io.StringIO()
    rt.dump(data, out)
    check_reads_back(out.getvalue(), data)
    return out.getvalue()


def _accepted(key: str, old: Any, seen: dict[str, Any], reply: str) -> Any:
    low = reply.lower()
    if key == "reply_contains":
        kept = [s for s in old or [] if str(s).lower() in low]
        return kept if kept else ([reply] if reply.strip() else _DROP)
    if key == "reply_not_contains":
        kept = [s for s in old or [] if str(s).lower() not in low]
        return kept or _DROP
    if key == "slots":
        kept = {k: seen["slots"][k] for k in old or {} if k in seen["slots"]}
        return kept or _DROP
    if key == "goal_status":
        kept = {k: seen["goal_status"][k] for k in old or {} if k in seen["goal_status"]}
        return kept or _DROP
    if key == "missing":
        kept = [m for m in old or [] if m in seen["missing"]]
        return kept or seen["missing"] or _DROP
    return seen[key]


def _same_style(old: Any, new: Any) -> Any:
    """``new`` written the way ``old`` was (a flow list stays ``[a, b]``)."""
    if isinstance(new, list):
        seq = CommentedSeq(_quoted(v) for v in new)
        if isinstance(old, CommentedSeq) and old.fa.flow_style():
            seq.fa.set_flow_style()
        return seq
    if isinstance(new, dict):
        mapping = CommentedMap((k, _quoted(v)) for k, v in new.items())
        if isinstance(old, CommentedMap) and old.fa.flow_style():
            mapping.fa.set_flow_style()
        return mapping
    return _quoted(new)
