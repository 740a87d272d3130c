"""Store addresses as users write them, and the async driver URLs SQLAlchemy needs.

``sqlite:///ledgerlet.db``, ``sqlite:///:memory:``, a bare path ``./run.db``,
``postgresql://user@host:5432/db`` (``postgres://`` too).
"""

from __future__ import annotations

import re

DEFAULT_DSN = "sqlite:///ledgerlet.db"


def async_url(dsn: str) -> str:
    if "://" not in dsn:
        return f"sqlite+aiosqlite:///{dsn}"
    scheme, rest = dsn.split("://", 1)
    scheme = scheme.lower()
    if scheme in ("sqlite", "sqlite+aiosqlite"):
        return f"sqlite+aiosqlite://{rest}"
    if scheme in ("postgresql", "postgres", "postgresql+asyncpg"):
        return f"postgresql+asyncpg://{rest}"
    raise ValueError(f"unsupported store {dsn!r}: use sqlite:///PATH or postgresql://USER@HOST/DB")


def sqlite_path(dsn: str) -> str | None:
    """The file a SQLite DSN names (None for PostgreSQL and for ``:memory:``)."""
    url = async_url(dsn)
    if not url.startswith("sqlite+aiosqlite:///"):
        return None
    path = url[len("sqlite+aiosqlite:///") :].split("?", 1)[0]
    return None if path in ("", ":memory:") else path


def describe(dsn: str) -> str:
    """The DSN without a password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", dsn)


def is_postgres(dsn: str) -> bool:
    return async_url(dsn).startswith("postgresql+asyncpg://")
