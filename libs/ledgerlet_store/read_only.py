"""Reading a SQLite store that cannot be written (a read-only filesystem, a file its
reader may not write): opened read-only and never migrated, so a post-mortem can read a
store copied off a read-only mount or a backup. Opening it the usual way fails before
anything is read: migrating takes the write lock (``BEGIN IMMEDIATE``), and a store in
WAL mode wants its shared-memory file beside it."""

from __future__ import annotations

import os
from urllib.parse import quote

from ledgerlet_store.dsn import sqlite_path


def read_only_url(dsn: str) -> str | None:
    """The URL that opens ``dsn`` read-only when it is a SQLite file that cannot be
    written (None: it can be, or it is no SQLite file). On a read-only filesystem it is
    opened ``immutable`` as well: nothing can change it, and no lock file can be made."""
    path = sqlite_path(dsn)
    if path is None or not os.path.isfile(path):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    frozen = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    if not frozen and os.access(path, os.W_OK) and os.access(folder, os.W_OK):
        return None
    where = quote(os.path.abspath(path))
    return f"sqlite+aiosqlite:///file:{where}?mode=ro{'&immutable=1' if frozen else ''}&uri=true"
