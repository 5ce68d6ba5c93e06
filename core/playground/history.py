"""A workspace's history as the playground shows it: its published versions (publish, diff, roll back) and the
saved changes that can be undone (:mod:`core.playground.versions` and :mod:`core.playground.changes` do the
work on the files)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.playground import versions
from core.playground.changes import Backup, CheckResult, backups, change_diff, undo_last
from core.playground.versions import Version

if TYPE_CHECKING:
    from core.playground.service import Playground


class History:
    """Named versions and undo of one :class:`~core.playground.service.Playground`'s workspace."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    # ------------------------------------------------------------------ named versions
    def versions(self) -> list[Version]:
        """The workspace's published versions, oldest first."""
        return versions.versions(self.pg.root)

    def current_version(self) -> str:
        """Which version the workspace's files are now ("v3", "v3 + edits", "unpublished")."""
        return versions.current(self.pg.root)

    def publish_version(self, note: str) -> Version:
        """Publish the workspace as it is now as its next version, with a note; chats record it from then."""
        with self.pg.lock:
            published = versions.publish(self.pg.root, note)
            if self.pg.orch is not None:
                self.pg.orch.version = published.label
        return published

    def version_diff(self, old: int | None, new: int | None) -> list[tuple[str, str]]:
        """Each file changed from version ``old`` to ``new`` (None: the files as they are now), as a diff."""
        return versions.diff(self.pg.root, old, new)

    def roll_back(self, number: int) -> CheckResult:
        """Make the workspace's files those of version ``number``, checked like every save and undoable."""
        return self.pg.apply(versions.rollback_change(self.pg.root, number))

    # ------------------------------------------------------------------ undo
    def backups(self) -> list[Backup]:
        """Saved changes that can be undone, newest first."""
        return backups(self.pg.root)

    def change_diff(self, change: Backup) -> dict[str, str]:
        """What one saved change did, file by file, as unified diffs."""
        found = self.backups()
        newer = [b for b in found if b.stamp > change.stamp]  # newest first, as backups() lists them
        return change_diff(self.pg.root, change, newer)

    def undo(self) -> Backup | None:
        """Undo the newest saved change (SOP, GAR, inventory or KB) and reload."""
        with self.pg.lock:
            done = undo_last(self.pg.root)
            if done is not None:
                self.pg.reload()
        return done
