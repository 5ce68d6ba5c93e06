"""The SOP studio's service: SOP files (read, live check, save, duplicate, delete), the GAR table, the unsaved
drafts of both (the editor's and the canvas'), and STAR tasks imported as SOPs.

Every save goes through :meth:`core.playground.service.Playground.apply`: backed up, undoable, refused when it
adds a lint error or (``tests="check"``) breaks a conversation test that passes now.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from core.engine.build import load_workspace
from core.importers.star import ImportResult
from core.playground.changes import ChangeSet, CheckResult, staged
from core.playground.conversations import Tests
from core.playground.grants import AgentGrant, granted, needed_grant
from core.playground.triggers import TriggerTrial, trial
from core.playground.uploads import UploadError, safe_filename
from core.shared.errors import UserInputError
from core.shared.problems import Problem, errors
from core.sop import Sop
from core.workspace.gar_file import GAR_COLUMNS
from core.workspace.paths import read_text_file, workspace_path

if TYPE_CHECKING:
    from core.playground.service import Playground

SOP_SUFFIXES = (".sop", ".json")

@dataclass
class SopCheck:
    """Live lint of an SOP being edited: problems for the whole workspace, the compiled SOP if it compiles."""

    problems: list[Problem]
    sop: Sop | None
    grant: AgentGrant | None = None  # what store.yaml lacks for the SOP's agent to run it (offered on save)

    @property
    def ok(self) -> bool:
        """No errors anywhere the edit touches."""
        return not errors(self.problems)


@dataclass(frozen=True)
class SopFile:
    """One SOP file of the workspace."""

    name: str
    format: str
    id: str
    title: str
    compiled: bool
    saved: bool = True  # False: a new SOP kept as a draft, not live until it is first saved



class Studio:
    """Editing one :class:`~core.playground.service.Playground`'s SOPs and GAR table."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    # ------------------------------------------------------------------ SOP files
    def sop_files(self) -> list[SopFile]:
        """The workspace's SOP files and whether each compiled."""
        by_file = {s.file: s for s in self.pg.workspace.sops}
        out = []
        for path in self.pg.workspace.files.sop_files():
            sop = by_file.get(f"sops/{path.name}")
            out.append(SopFile(path.name, "json" if path.suffix == ".json" else "text",
                               sop.id if sop else path.stem, sop.title if sop else "", sop is not None))
        on_disk = {f.name for f in out}
        for rel in self.pg.drafts.names():  # new SOPs not saved yet: listed, not live
            name = rel.removeprefix("sops/")
            if rel.startswith("sops/") and "/" not in name and Path(name).suffix in SOP_SUFFIXES \
                    and name not in on_disk:
                out.append(SopFile(name, "json" if name.endswith(".json") else "text", Path(name).stem, "", False,
                                   saved=False))
        return sorted(out, key=lambda f: f.name)

    def read_sop(self, name: str) -> str:
        """The saved source of an SOP file ('' for a new SOP not saved yet; one leading outside the workspace
        through a link is refused)."""
        rel = f"sops/{_sop_name(name)}"
        if not (self.pg.root / rel).exists() and self.pg.drafts.get(rel) is not None:
            return ""
        return read_text_file(workspace_path(self.pg.root, rel, "sops", file=rel))

    def start_sop(self, name: str, source: str) -> str:
        """Start a new SOP as a draft of ``sops/<name>``: listed and edited like any SOP, not live in the chat
        until it is first saved (checked like every save). Its file name, cleaned."""
        name = _sop_name(name)
        rel = f"sops/{name}"
        if (self.pg.root / rel).exists() or self.pg.drafts.get(rel) is not None:
            raise UserInputError(f"{rel} already exists; pick another name")
        self.pg.drafts.keep(rel, source, "")
        return name

    def check_sop(self, name: str, source: str, grant: AgentGrant | None = None) -> SopCheck:
        """Lint the workspace as if ``source`` were saved as ``sops/<name>`` (with ``grant`` made in store.yaml:
        the tools its agent is to be allowed); nothing is written. The check says what store.yaml still lacks
        for the SOP's agent (:func:`core.playground.grants.needed_grant`)."""
        rel = f"sops/{_sop_name(name)}"
        with staged(self.pg.root, self._change("check", rel, source, grant)) as stage:
            ws = load_workspace(stage, self.pg.embedder, kb_index="lazy")
        mine = [p for p in ws.problems if p.file == rel or p.file == "sops"]
        others = {(p.file, p.message) for p in self.pg.problems}
        mine += [p for p in errors(ws.problems) if p.file != rel and (p.file, p.message) not in others]
        sop = next((s for s in ws.sops if s.file == rel), None)
        return SopCheck(mine, sop, needed_grant(ws, sop) if sop is not None else None)

    def save_sop(self, name: str, source: str, *, create: bool = False, tests: Tests = "check",
                 grant: AgentGrant | None = None) -> CheckResult:
        """Save an SOP (backed up, undoable) when it adds no lint error and breaks no passing conversation
        test (see :meth:`core.playground.service.Playground.apply` for ``tests``); the next chat turn uses it.
        ``grant`` (confirmed by the author): store.yaml lets the SOP's agent call its tools, in the same save."""
        name = _sop_name(name)
        if create and (self.pg.root / "sops" / name).exists():
            raise UserInputError(f"sops/{name} already exists; pick another name")
        new = create or not (self.pg.root / "sops" / name).exists()
        label = f"{'create' if new else 'save'} sops/{name}" + (f" and agent {grant.agent}'s tools" if grant else "")
        return self.pg.apply(self._change(label, f"sops/{name}", source, grant), tests)

    def _change(self, label: str, rel: str, source: str, grant: AgentGrant | None) -> ChangeSet:
        change = ChangeSet(label).put(rel, source)
        if grant is not None:
            change.put("store.yaml", granted(read_text_file(self.pg.root / "store.yaml"), grant))
        return change

    def duplicate_sop(self, name: str, new_name: str, tests: Tests = "check") -> CheckResult:
        """Copy an SOP under a new file name and a new id (checked like a save, see
        :meth:`core.playground.service.Playground.apply`)."""
        new = _sop_name(new_name)
        source = self.read_sop(name)
        new_id = Path(new).stem
        old_id = next((s.id for s in self.pg.workspace.sops if s.file == f"sops/{_sop_name(name)}"), "")
        if "." in old_id:
            new_id = f"{old_id.split('.', 1)[0]}.{new_id}"
        if new.endswith(".json"):
            try:
                data = json.loads(source)
            except json.JSONDecodeError as exc:
                raise UserInputError(f"sops/{name} is not valid JSON; fix it before duplicating") from exc
            if isinstance(data, dict):
                data["id"] = new_id
                if "name" in data:
                    data["name"] = f"{data['name']} (copy)"
            source = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            source = re.sub(r"^(id:\s*).*$", lambda m: m.group(1) + new_id, source, count=1, flags=re.M)
        return self.save_sop(new, source, create=True, tests=tests)

    def delete_sop(self, name: str, tests: Tests = "check") -> CheckResult:
        """Delete an SOP (backed up, undoable), unless that breaks a passing conversation test."""
        name = _sop_name(name)
        if not (self.pg.root / "sops" / name).exists():
            raise UserInputError(f"sops/{name} does not exist")
        return self.pg.apply(ChangeSet(f"delete sops/{name}").delete(f"sops/{name}"), tests)

    def trial_triggers(self, sentence: str, rel: str = "", draft: str | None = None) -> TriggerTrial:
        """Which SOP ``sentence`` would start, with every SOP's score (``draft``: the unsaved source of ``rel``,
        read in its place; see :func:`core.playground.triggers.trial`)."""
        return trial(self.pg, sentence, rel, draft)

    # ------------------------------------------------------------------ the GAR table
    def gar_rows(self, *, draft: bool = False) -> list[dict[str, str]]:
        """gar.csv as rows of its five columns (for an editable table); ``draft``: the unsaved draft if any. A
        workspace of JSON SOPs alone may have no gar.csv: no rows (saving some creates it)."""
        path = self.pg.root / "gar.csv"
        text = (self.pg.drafts.get("gar.csv") if draft else None) or (read_text_file(path) if path.is_file() else "")
        return [{c: (rec.get(c) or "") for c in GAR_COLUMNS} for rec in csv.DictReader(io.StringIO(text))]

    @staticmethod
    def gar_text(rows: list[dict[str, Any]]) -> str:
        """GAR rows as the CSV text of gar.csv (empty rows left out)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(GAR_COLUMNS), lineterminator="\n")
        writer.writeheader()
        written = []
        for row in rows:
            cells = {c: _cell(row.get(c)) for c in GAR_COLUMNS}
            if any(cells.values()):
                writer.writerow(cells)
                written.append(cells)
        text = buf.getvalue()
        back = [{c: v.strip() for c, v in r.items()} for r in csv.DictReader(io.StringIO(text))]
        if back != written:  # read back as the GAR loader reads it
            bad = next(i for i, (a, b) in enumerate(zip(written + [{}] * len(back), back + [{}] * len(written),
                                                        strict=False)) if a != b)
            raise UserInputError(f"gar.csv: row {bad + 1} would not read back as written; check its cells")
        return text

    def save_gar(self, rows: list[dict[str, Any]], tests: Tests = "check") -> CheckResult:
        """Write the GAR table when it (and every SOP against it) lints without new errors and it breaks
        no passing conversation test."""
        return self.pg.apply(ChangeSet("save gar.csv").put("gar.csv", self.gar_text(rows)), tests)

    def suggest_gar_row(self, action: str) -> dict[str, str]:
        """A GAR row for a step no row matches yet, guessed from the workspace's own rows (no word list):
        the action type most rows starting with the same verb have, and for an ask worded like an existing
        one ("ask user for budget" → slot budget) the slot named by the words after the shared beginning."""
        rows = self.gar_rows()
        words = action.split()
        verb = words[0].lower() if words else ""
        same = [r for r in rows if r["action"].split()[:1] and r["action"].split()[0].lower() == verb]
        kinds = Counter(r["action_type"] for r in same if r["action_type"])
        kind = kinds.most_common(1)[0][0] if kinds else "message_to_user"
        params = ""
        if "ask_user_input" in kind:
            for r in same:
                slot = r["params"].split("|")[0].rstrip("?").strip()
                prefix = r["action"].lower()[: -len(slot)] if slot and r["action"].lower().endswith(
                    slot.replace("_", " ")) else ""
                rest = action[len(prefix):] if prefix and action.lower().startswith(prefix) else ""
                if rest.strip():
                    params = re.sub(r"\W+", "_", rest.strip().lower()).strip("_")
                    break
        return {"action": action.strip(), "action_type": kind, "user_interaction_metadata": "", "api": "",
                "params": params}

    def add_gar_row(self, row: dict[str, Any], tests: Tests = "check") -> CheckResult:
        """Append one row to the saved GAR; an unsaved GAR draft gets the row too and stays a draft."""
        if not str(row.get("action") or "").strip():
            raise UserInputError("the new GAR row needs an action")
        if any(r["action"].strip().lower() == str(row["action"]).strip().lower() for r in self.gar_rows()):
            raise UserInputError(f"gar.csv already has the action {row['action']!r}")
        draft = self.gar_rows(draft=True) if self.draft("gar.csv") is not None else None
        result = self.pg.apply(ChangeSet(f"add {row['action']!r} to gar.csv").put(
            "gar.csv", self.gar_text([*self.gar_rows(), row])), tests)
        if result.saved and draft is not None:
            self.keep_gar_draft([*draft, row])
        return result

    # ------------------------------------------------------------------ drafts (unsaved edits)
    def draft(self, rel: str) -> str | None:
        """The unsaved draft of a workspace file, if any."""
        return self.pg.drafts.get(rel)

    def keep_draft(self, rel: str, text: str) -> None:
        """Keep an edit of ``rel`` until it is saved or discarded (none when it matches the file)."""
        path = self.pg.root / rel
        self.pg.drafts.keep(rel, text, read_text_file(path) if path.is_file() else "")

    def keep_gar_draft(self, rows: list[dict[str, Any]]) -> None:
        """Keep edited GAR rows until saved or discarded (none when they are the saved table)."""
        self.pg.drafts.keep("gar.csv", self.gar_text(rows), self.gar_text(self.gar_rows()))

    def discard_draft(self, rel: str) -> None:
        """Throw an unsaved edit away."""
        self.pg.drafts.drop(rel)

    # ------------------------------------------------------------------ STAR import
    def import_star(self, task_dir: str | Path, api_file: str | Path | None = None) -> tuple[ImportResult, CheckResult]:
        """Import a STAR-format task (flowchart + API schema) as an SOP, GAR rows, a mock tool and agents.

        The files go through the same checked, backed-up save as an edit: nothing is written when the
        result would add a lint error.
        """
        from core.importers.star import import_star_task

        result = import_star_task(task_dir, self.pg.root, api_file=api_file)
        change = ChangeSet(f"import STAR task {result.task}")
        for rel, content in result.files.items():
            change.put(rel, content)
        return result, self.pg.apply(change, own_code=True)

    def import_star_upload(self, flowchart: tuple[str, bytes], api: tuple[str, bytes] | None
                           ) -> tuple[ImportResult, CheckResult]:
        """Import a STAR task from uploaded files: the flowchart ``<task>.json`` and its API schema."""
        name, data = flowchart
        task = Path(safe_filename(name)).stem
        if Path(name).suffix.lower() != ".json":
            raise UploadError(f"the flowchart must be the task's .json file, got {name!r}")
        if api is None:
            raise UploadError(f"{name}: upload the task's API schema (apis/{task}.json) with the flowchart")
        api_name = safe_filename(api[0])
        if Path(api_name).suffix.lower() != ".json":
            raise UploadError(f"the API schema must be a .json file, got {api[0]!r}")
        with tempfile.TemporaryDirectory(prefix="sop-star-") as tmp:
            root = Path(tmp) / "star"  # STAR's own layout, so nothing outside it is looked at
            folder = root / "tasks" / task
            folder.mkdir(parents=True)
            flow_path = folder / f"{task}.json"
            flow_path.write_bytes(data)
            api_path = root / "apis" / api_name  # named as uploaded: the API keeps its own name
            api_path.parent.mkdir()
            api_path.write_bytes(api[1])
            try:
                return self.import_star(folder, api_path)
            except UserInputError as exc:  # name the files as the user knows them, not the temporary copies
                raise UploadError(str(exc).replace(str(flow_path), name).replace(str(api_path), api[0])) from exc


def _sop_name(name: str) -> str:
    clean = safe_filename(name.strip())
    if Path(clean).suffix not in SOP_SUFFIXES:
        raise UserInputError(f"an SOP file name ends in .sop (text) or .json (node graph), got {name!r}")
    return clean


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()
