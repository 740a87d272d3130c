"""A store holding a recorded run of the fluentd DiskPressure post-mortem (seed 003's
incident), on SQLite and on PostgreSQL: recorded once in each test process, each test
given a copy (``tests/support/recordings.py``)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support.recordings import pg_copy, pg_template, record_once

RUN = "fluentd-incident"
EVICTED = "kube-system/fluentd-elasticsearch-wk8xc"


async def record(dsn: str, example: str = "disk-pressure-fluentd.yaml", run: str = RUN) -> None:
    """Record ``example`` as ``run`` in the store at ``dsn`` (a SQLite file not there yet:
    a copy of this process's first recording of the same)."""
    await record_once(dsn, (example, run), functools.partial(_record, example=example, run=run))


async def _record(dsn: str, example: str, run: str) -> None:
    path = EXAMPLES / example
    scenario = load_scenario(path.read_text(encoding="utf-8"), f"examples/{example}")
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=run)


@pytest.fixture(scope="session")
def pg_recorded(pg_server: str) -> Iterator[str]:
    """A PostgreSQL database holding the incident, which this test process's tests copy."""
    with pg_template(functools.partial(_record, example="disk-pressure-fluentd.yaml", run=RUN)) as dsn:
        yield dsn


@pytest.fixture
def recorded(store_dsn: str, request: pytest.FixtureRequest) -> str:
    """The DSN of a store with the incident recorded as run ``RUN``: a copy of this
    process's recording."""
    if store_dsn.startswith("sqlite"):
        asyncio.run(record(store_dsn))
    else:
        pg_copy(store_dsn, request.getfixturevalue("pg_recorded"))
    return store_dsn


def sqlite_dsn(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'events.db'}"
