"""Choosing the preference store: Zep Cloud when ``ZEP_API_KEY`` is set, else local SQLite."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from core.shared.errors import UserInputError
from core.state.memory.base import PreferenceMemory
from core.state.memory.local import LocalPreferenceMemory

LOCAL_FILE = "preferences.sqlite"
ZEP_CACHE_FILE = "zep_cache.sqlite"


def open_preference_memory(state_dir: str | Path, *, environ: Mapping[str, str] | None = None,
                           state_store: object = None) -> PreferenceMemory:
    """The preference store for a workspace (ARCHITECTURE §5).

    With ``ZEP_API_KEY`` set, preferences live in Zep Cloud (``ZEP_BASE_URL`` overrides the
    endpoint) and ``state_dir`` only holds Zep's local cache and outbox; without it, they live in
    the PostgreSQL database of the state store when it is one (``state_store``, or ``SOP_STATE_URL``),
    else in ``state_dir/preferences.sqlite``. The Zep SDK is not even imported when no key is set.

    Args:
        state_dir: The workspace's ``.state`` folder.
        environ: The environment to read (default ``os.environ``).

    Raises:
        UserInputError: ``ZEP_BASE_URL`` is not an http(s) URL.
    """
    env = os.environ if environ is None else environ
    key = env.get("ZEP_API_KEY", "").strip()
    state = Path(state_dir)
    if not key:
        from core.state.sessions.postgres import PostgresStateStore

        url = env.get("SOP_STATE_URL", "").strip()
        if isinstance(state_store, PostgresStateStore) or url.startswith(("postgresql://", "postgres://")):
            from core.state.memory.postgres import PostgresPreferenceMemory

            if isinstance(state_store, PostgresStateStore):
                return PostgresPreferenceMemory(state_store.url, pool=state_store.pool)
            return PostgresPreferenceMemory(url)
        return LocalPreferenceMemory(state / LOCAL_FILE)
    base_url = env.get("ZEP_BASE_URL", "").strip() or None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise UserInputError(f"ZEP_BASE_URL must be an http(s) URL such as https://api.getzep.com/api/v4, "
                             f"got {base_url!r}")
    from core.state.memory.zep import ZepPreferenceMemory  # the SDK loads only when Zep is chosen

    return ZepPreferenceMemory(key, base_url=base_url, cache_path=state / ZEP_CACHE_FILE)
