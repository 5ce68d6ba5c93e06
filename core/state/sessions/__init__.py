"""Session-state storage: the :class:`StateStore` contract and :func:`open_state_store`."""

from __future__ import annotations

from core.shared.errors import UserInputError
from core.state.sessions.base import StateStore, redact
from core.state.sessions.sqlite import MEMORY, SqliteStateStore

__all__ = ["SqliteStateStore", "StateStore", "open_state_store"]

_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_PREFIXES = ("postgresql://", "postgres://")


def open_state_store(url: str) -> StateStore:
    """Open the state store a URL names.

    Args:
        url: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
            ``sqlite:///:memory:`` (missing parent directories are created), or
            ``postgresql://user:password@host:5432/database`` (schema created or migrated on open).

    Returns:
        An open store; the caller closes it.

    Raises:
        UserInputError: The URL's scheme is not supported or it names no path.
        EngineError: The PostgreSQL server cannot be reached.
    """
    if url.startswith(_POSTGRES_PREFIXES):
        from core.state.sessions.postgres import PostgresStateStore  # psycopg loads only when PostgreSQL is chosen

        return PostgresStateStore(url)
    if not url.startswith(_SQLITE_PREFIX):
        raise UserInputError(
            f"unsupported state store URL {redact(url)!r}: expected 'sqlite:///path/to/file.db', "
            f"'sqlite:///:memory:' or 'postgresql://user:password@host:5432/database'"
        )
    path = url[len(_SQLITE_PREFIX):]
    if not path:
        raise UserInputError(f"state store URL {url!r} names no database file")
    return SqliteStateStore(MEMORY if path == MEMORY else path)
