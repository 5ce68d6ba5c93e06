"""A Google Sheet inventory (store.yaml ``inventory.sheet`` without ``source``).

The sheet is read through the Google Sheets API v4 (``GET /v4/spreadsheets/{id}/values/{range}``), with an API
key (``key=``) or a service account's bearer token (its JSON key signed into a JWT and exchanged at its
``token_uri``). Credentials come only from the environment. Each copy read is kept in the workspace's
``.state/sheets/``: the workspace reads that copy while it is younger than ``refresh_minutes`` and asks the API
again after that. A read that fails (no key, an HTTP error, no answer before the deadline) keeps the copy and
reports a warning naming the sheet and what went wrong; with no copy at all the inventory search is off (a
warning, and one sentence to a customer who needs it) until the sheet can be read, and the rest of the
workspace works. The API calls are :mod:`core.tools.sheets_api`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from core.shared.errors import Location, SourceUnavailableError, WorkspaceError
from core.shared.problems import Problem
from core.tools.sheets_api import API_KEY_ENV, CREDENTIALS_ENV, Credentials, SheetError, SheetRef, SheetsClient
from core.workspace.config import InventoryDecl
from core.workspace.paths import view_home

KEY_HINT = (f"set {API_KEY_ENV} to a Google API key (for a sheet anyone with the link may view) or "
            f"{CREDENTIALS_ENV} to a service account's JSON key file (share the sheet with its client_email), "
            "then start the playground again")
CACHE_DIR = Path(".state") / "sheets"
MAX_ROWS = 200_000


@dataclass(frozen=True)
class SheetCopy:
    """What ``.state/sheets/<id>_<tab>.json`` holds: the last copy read (None: none yet), when it was read,
    and the last attempt to read it again with what went wrong ("" when it worked)."""

    values: list[list[str]] | None
    fetched_at: float = 0.0
    checked_at: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class SheetStatus:
    """A Google Sheet inventory as the Store page shows it."""

    label: str
    url: str
    worksheet: str
    refresh_minutes: float
    fetched_at: float | None  # when the copy in use was read (epoch seconds); None: no copy
    rows: int
    credentials: str  # the environment variable the key came from; "" when none is set
    missing_key: str  # what to set when no key is (else "")
    error: str  # what went wrong the last time it was read ("" when it worked)


class SheetFeed:
    """One Google Sheet and its copy in ``.state/sheets/``: read from the copy while it is fresh, from the API
    after ``refresh_s`` seconds (or when forced), the copy kept when that fails. Thread-safe."""

    def __init__(self, ref: SheetRef, state_dir: Path, refresh_s: float, *, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.ref = ref
        digest = hashlib.sha1(ref.worksheet.encode()).hexdigest()[:10]
        self.path = state_dir / "sheets" / f"{ref.spreadsheet}_{digest}.json"
        self.refresh_s = max(0.0, refresh_s)
        self.env = env
        self.clock = clock
        self._lock = threading.Lock()
        self._copy = self._load()
        self._client: SheetsClient | None = None

    @classmethod
    def for_inventory(cls, decl: InventoryDecl, root: Path, *, env: Mapping[str, str] | None = None,
                      clock: Callable[[], float] = time.time) -> SheetFeed:
        """The feed of a workspace's Google Sheet inventory; its copy lives in the workspace's ``.state/`` (the
        workspace's own when ``root`` is a staged view of it)."""
        return cls(SheetRef(decl.google_sheet, decl.worksheet), view_home(root) / ".state",
                   decl.refresh_minutes * 60, env=env, clock=clock)

    @property
    def label(self) -> str:
        """How problems name the sheet."""
        return self.ref.label

    def due(self) -> bool:
        """Whether the next :meth:`read` asks the API: no copy yet, or the interval passed since the last try."""
        copy = self._copy
        return copy.values is None or self.clock() - max(copy.fetched_at, copy.checked_at) >= self.refresh_s

    def read(self, force: bool = False) -> tuple[list[list[str]], list[Problem]]:
        """The sheet's rows: the copy while it is fresh, else (or when ``force``) a new copy from the API.

        Returns:
            The rows, and a warning when they are an older copy because reading the sheet failed.

        Raises:
            SourceUnavailableError: the sheet cannot be read and there is no copy of it yet.
        """
        with self._lock:
            self._copy = self._load()  # another process may have read it meanwhile
            if not force and not self.due():
                return self._copy.values or [], self._standing()
            try:
                values = self._fetch()
            except SheetError as exc:
                self._save(SheetCopy(self._copy.values, self._copy.fetched_at, self.clock(), str(exc)))
                if self._copy.values is None:
                    raise SourceUnavailableError(f"cannot read the sheet: {exc}", Location(self.label)) from exc
                return self._copy.values, self._standing()
            now = self.clock()
            self._save(SheetCopy(values, now, now, ""))
            return values, []

    def _fetch(self) -> list[list[str]]:
        credentials = Credentials.from_env(self.env)
        if credentials is None:
            raise SheetError(f"no key for the Google Sheets API: {KEY_HINT}")
        if self._client is None or self._client.credentials != credentials:
            self._client = SheetsClient(credentials, env=self.env)
        return self._client.values(self.ref)

    def _standing(self) -> list[Problem]:
        """The warning that the rows are an older copy, while the last failure stands."""
        copy = self._copy
        if not copy.error or copy.values is None:
            return []
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(copy.fetched_at))
        return [Problem(self.label, 0, "warning", f"cannot read the sheet again ({copy.error}); using the copy "
                                                  f"read at {when}")]

    def status(self) -> SheetStatus:
        """Where the sheet stands: its copy, the credentials in use, the last failure."""
        copy = self._copy = self._load()
        try:
            credentials = Credentials.from_env(self.env)
        except SheetError as exc:
            origin, missing, error = CREDENTIALS_ENV, "", str(exc)
        else:
            origin = credentials.origin if credentials else ""
            missing, error = ("" if credentials else KEY_HINT), copy.error
        return SheetStatus(self.label, self.ref.url, self.ref.worksheet, self.refresh_s / 60,
                           copy.fetched_at if copy.values is not None else None,
                           sum(1 for row in (copy.values or [])[1:] if any(c.strip() for c in row)), origin,
                           missing, error)

    def _load(self) -> SheetCopy:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            values = data.get("values")
            rows = [[str(c) for c in row] for row in values] if isinstance(values, list) else None
            return SheetCopy(rows, float(data.get("fetched_at") or 0), float(data.get("checked_at") or 0),
                             str(data.get("error") or ""))
        except (OSError, ValueError, TypeError, AttributeError):
            return SheetCopy(None)  # none yet, or unreadable: read the sheet again

    def _save(self, copy: SheetCopy) -> None:
        """Write the copy atomically (a reader in another process sees the old file or the new one)."""
        self._copy = copy
        data = {"spreadsheet": self.ref.spreadsheet, "worksheet": self.ref.worksheet, "range": self.ref.a1_range,
                "fetched_at": copy.fetched_at, "checked_at": copy.checked_at, "error": copy.error,
                "values": copy.values}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)


def sheet_table(values: list[list[str]], label: str) -> tuple[pd.DataFrame, list[int]]:
    """The sheet's rows as a table of strings (its first row names the columns; empty rows left out), with
    each table row's row number in the sheet.

    Raises:
        WorkspaceError: naming the sheet and row: no header row, a column with no name or a name twice, more
            rows than MAX_ROWS.
    """
    header = [c.strip() for c in (values[0] if values else [])]
    while header and not header[-1]:
        header.pop()
    if not header:
        raise WorkspaceError("the sheet is empty: its first row must name the columns", Location(label, 1))
    blank = [i for i, c in enumerate(header) if not c]
    if blank:
        raise WorkspaceError(f"column {_letters(blank[0])} has no name in the header row", Location(label, 1))
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise WorkspaceError(f"duplicate column name(s) in the header row: {', '.join(dupes)}", Location(label, 1))
    width = len(header)
    rows, lines = [], []
    for number, row in enumerate(values[1:], start=2):
        if any(c.strip() for c in row):
            rows.append((row + [""] * width)[:width])
            lines.append(number)
    if len(rows) > MAX_ROWS:
        raise WorkspaceError(f"the sheet has more than {MAX_ROWS:,} items; the limit is {MAX_ROWS:,}", Location(label))
    return pd.DataFrame(rows, columns=header, dtype=str), lines


def _letters(index: int) -> str:
    """A column's letters (0 -> A, 26 -> AA)."""
    out = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        out = chr(65 + rest) + out
    return out
