"""Importers: flows drawn elsewhere turned into workspace files of ours (``python -m core import …``)."""

from core.importers.star import ImportResult, import_star_task, write_import

__all__ = ["ImportResult", "import_star_task", "write_import"]
