"""Store addresses as users write them, and the async driver URLs SQLAlchemy needs.

``sqlite:///ledgerlet.db``, a bare path ending in ``.db``, ``.sqlite`` or ``.sqlite3``
(``./run.db``), ``postgresql://user@host:5432/db`` (``postgres://`` too). The library
also opens ``sqlite:///:memory:``; the command line refuses it (:func:`check_address`),
as every address that would lose a run.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Final

from sqlalchemy.engine import make_url

DEFAULT_DSN = "sqlite:///ledgerlet.db"

#: what a bare path (no scheme) must end in to be taken for a SQLite file
SQLITE_SUFFIXES: Final = (".db", ".sqlite", ".sqlite3")
_SQLITE_SCHEMES: Final = ("sqlite", "sqlite+aiosqlite")
_PG_SCHEMES: Final = ("postgresql", "postgres", "postgresql+asyncpg")
_FORMS: Final = "use sqlite:///PATH or postgresql://USER@HOST:PORT/DB"


class BadAddress(ValueError):
    """A store address that names no store, or one a command cannot use."""


def async_url(dsn: str) -> str:
    if "://" not in dsn:
        return f"sqlite+aiosqlite:///{dsn}"
    scheme, rest = dsn.split("://", 1)
    scheme = scheme.lower()
    if scheme in _SQLITE_SCHEMES:
        return f"sqlite+aiosqlite://{rest}"
    if scheme in _PG_SCHEMES:
        return f"postgresql+asyncpg://{rest}"
    raise BadAddress(f"unsupported store {describe(dsn)!r}: {_FORMS}")


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


def check_address(dsn: str, *, existing: bool = False) -> None:
    """Refuse (:class:`BadAddress`) an address that would lose what is stored there or
    read a store that is not there: an empty one, an unknown scheme, a SQLite address
    naming no file (``sqlite:///``, which SQLAlchemy opens in memory) or a file that is no
    regular file, memory (``:memory:``: gone when the command ends), a text that is no
    address at all (``not a dsn`` became a SQLite file of that name), a PostgreSQL
    address without a database (the server would pick one). ``existing``: the command
    only reads, so a SQLite file that is not there is an error, never a new empty store."""
    shown = describe(dsn)
    if not dsn.strip():
        raise BadAddress(f"the store address is empty: {_FORMS}")
    if "://" not in dsn and not dsn.endswith(SQLITE_SUFFIXES):
        raise BadAddress(
            f"{shown!r} is not a store address: {_FORMS} (a bare path is taken for a SQLite file "
            f"only when it ends in {', '.join(SQLITE_SUFFIXES)})"
        )
    url = async_url(dsn)  # (raises for an unknown scheme)
    if url.startswith("postgresql+asyncpg://"):
        try:
            database = make_url(url).database
        except Exception as exc:  # (a port that is no number, ...)
            raise BadAddress(f"{shown!r} is not a PostgreSQL address: {exc}") from None
        if not database:
            raise BadAddress(f"{shown!r} names no database ({_FORMS}): the server would pick one")
        return
    if not url.startswith("sqlite+aiosqlite:///"):
        raise BadAddress(f"{shown!r} names no file: {_FORMS} (three slashes, then the path)")
    path = sqlite_path(dsn)
    if url.split("?", 1)[0].endswith(":memory:"):
        raise BadAddress(f"{shown!r} is a store in memory: what is stored is lost when the command ends")
    if path is None:
        raise BadAddress(f"{shown!r} names no file: {_FORMS}")
    _check_sqlite_file(path, shown, existing=existing)


def _check_sqlite_file(path: str, shown: str, *, existing: bool) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if existing:
            raise BadAddress(f"no store at {path} (read commands never create one)") from None
        parent = os.path.dirname(path) or "."
        if not os.path.isdir(parent):
            raise BadAddress(f"{shown!r}: no directory {parent} to create the store in") from None
        return
    except OSError as exc:
        raise BadAddress(f"{shown!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise BadAddress(f"{shown!r}: {path} is {what}, not a SQLite store")
