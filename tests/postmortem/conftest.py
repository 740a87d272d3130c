"""A store holding a recorded run of the fluentd DiskPressure post-mortem (seed 003's
incident), on SQLite and on PostgreSQL. The run is recorded once in each test process and
each test given a copy of it (a file copied, a database made from it as a template):
recorded afresh, the same events each time, it took half a second or more a test."""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES, _pg_exec, fresh_pg_database

RUN = "fluentd-incident"
EVICTED = "kube-system/fluentd-elasticsearch-wk8xc"

#: the first recording of each (example, run) on SQLite, which later ones copy
_SQLITE_RECORDINGS: dict[tuple[str, str], Path] = {}


async def record(dsn: str, example: str = "disk-pressure-fluentd.yaml", run: str = RUN) -> None:
    """Record ``example`` as ``run`` in the store at ``dsn``; a SQLite file not there yet
    is a copy of this process's first recording of the same."""
    new_file = _new_sqlite_file(dsn)
    first = _SQLITE_RECORDINGS.get((example, run))
    if new_file is not None and first is not None:
        shutil.copyfile(first, new_file)
        return
    await _record(dsn, example, run)
    if new_file is not None and not _beside(new_file):
        kept = Path(_recordings_folder()) / f"{len(_SQLITE_RECORDINGS)}.db"
        shutil.copyfile(new_file, kept)
        _SQLITE_RECORDINGS[(example, run)] = kept


async def _record(dsn: str, example: str, run: str) -> None:
    path = EXAMPLES / example
    scenario = load_scenario(path.read_text(encoding="utf-8"), f"examples/{example}")
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=run)


def _new_sqlite_file(dsn: str) -> Path | None:
    """The file of a SQLite address whose file does not exist yet, else None."""
    if not dsn.startswith("sqlite:///"):
        return None
    path = Path(dsn.removeprefix("sqlite:///"))
    return None if path.exists() else path


def _beside(path: Path) -> list[Path]:
    """What SQLite left beside a closed store's file (its write-ahead log): such a file is
    not copied alone."""
    return [p for p in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")) if p.exists()]


_FOLDER: list[str] = []


def _recordings_folder() -> str:
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="ledgerlet-recorded-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


@pytest.fixture(scope="session")
def pg_recorded(pg_server: str) -> Iterator[str]:
    """A PostgreSQL database holding the incident, for this test process's copies."""
    with fresh_pg_database() as dsn:
        asyncio.run(_record(dsn, "disk-pressure-fluentd.yaml", RUN))
        yield dsn


@pytest.fixture
def recorded(store_dsn: str, request: pytest.FixtureRequest) -> str:
    """The DSN of a store with the incident recorded as run ``RUN``: a copy of this
    process's recording (the fresh PostgreSQL database made again from it)."""
    if store_dsn.startswith("sqlite"):
        asyncio.run(record(store_dsn))
        return store_dsn
    template = request.getfixturevalue("pg_recorded").rpartition("/")[2]
    name = store_dsn.rpartition("/")[2]
    asyncio.run(_pg_exec(f'DROP DATABASE "{name}"'))
    asyncio.run(_pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    return store_dsn


def sqlite_dsn(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'events.db'}"
