"""Unsaved edits of workspace files, kept beside the workspace until they are saved or discarded.

An edit in the studio is written here as it is typed (``.state/drafts/<path>``), so
switching tabs or pages, reloading the browser or restarting the app loses nothing;
the editor reopens the draft and says it is not saved yet. Saving the file or
discarding the draft removes it. Drafts are never read by the engine.
"""

from __future__ import annotations

from pathlib import Path

from core.playground.changes import atomic_write, check_relpath

DRAFT_DIR = "drafts"


class Drafts:
    """The drafts of one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / ".state" / DRAFT_DIR

    def _path(self, rel: str) -> Path:
        return self.dir / check_relpath(rel)

    def get(self, rel: str) -> str | None:
        """The draft of ``rel``, or None when there is none."""
        path = self._path(rel)
        try:
            return path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            return None

    def keep(self, rel: str, text: str, on_disk: str) -> None:
        """Keep ``text`` as the draft of ``rel``; none is kept when it equals what is on disk."""
        if text == on_disk:
            self.drop(rel)
        elif text != self.get(rel):
            atomic_write(self._path(rel), text.encode("utf-8"))

    def drop(self, rel: str) -> None:
        """Forget the draft of ``rel`` (after a save, or when the author discards it)."""
        self._path(rel).unlink(missing_ok=True)

    def names(self) -> list[str]:
        """Workspace paths that have a draft, sorted."""
        if not self.dir.is_dir():
            return []
        return sorted(p.relative_to(self.dir).as_posix() for p in self.dir.rglob("*")
                      if p.is_file() and not p.name.startswith("."))
