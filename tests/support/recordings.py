"""A run recorded once in a test process and copied for each test that wants a store
holding it: a SQLite file copied, a PostgreSQL database made from another as its template.
Recorded afresh, the same events every time, it cost each test half a second or more (and
PostgreSQL a database's worth of commits)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Hashable, Iterator
from pathlib import Path

from tests.conftest import _pg_exec, fresh_pg_database

#: what records the run into the store at an address
Make = Callable[[str], Awaitable[None]]

_FIRST: dict[Hashable, Path] = {}
_FOLDER: list[str] = []


async def record_once(dsn: str, key: Hashable, make: Make) -> None:
    """``make(dsn)``; where ``dsn`` is a SQLite file not there yet, a copy of this process's
    first store made with the same ``key`` (made once, as ``make`` makes it)."""
    new_file = _new_sqlite_file(dsn)
    if new_file is not None and key in _FIRST:
        shutil.copyfile(_FIRST[key], new_file)
        return
    await make(dsn)
    if new_file is not None and not _beside(new_file):
        kept = Path(_folder()) / f"{len(_FIRST)}.db"
        shutil.copyfile(new_file, kept)
        _FIRST[key] = kept


@contextlib.contextmanager
def pg_template(make: Make) -> Iterator[str]:
    """A PostgreSQL database ``make`` recorded into, for ``pg_copy``; dropped afterwards."""
    with fresh_pg_database() as dsn:
        asyncio.run(make(dsn))
        yield dsn


def pg_copy(dsn: str, template: str) -> None:
    """The (unused) database at ``dsn`` made again as a copy of ``template``'s."""
    name, source = dsn.rpartition("/")[2], template.rpartition("/")[2]
    asyncio.run(_pg_exec(f'DROP DATABASE "{name}"'))
    asyncio.run(_pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{source}"'))


def _new_sqlite_file(dsn: str) -> Path | None:
    """The file of a SQLite address whose file does not exist yet, else None."""
    if not dsn.startswith("sqlite:///"):
        return None
    path = Path(dsn.removeprefix("sqlite:///"))
    return None if path.exists() else path


def _beside(path: Path) -> list[Path]:
    """What SQLite left beside a closed store's file (a write-ahead log or a journal): a
    file with such a companion is not copied alone."""
    return [p for p in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")) if p.exists()]


def _folder() -> str:
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="ledgerlet-recorded-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]
