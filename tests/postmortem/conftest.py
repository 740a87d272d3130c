"""A store holding a recorded run of the fluentd DiskPressure post-mortem (seed 003's
incident), on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES

RUN = "fluentd-incident"
EVICTED = "kube-system/fluentd-elasticsearch-wk8xc"


async def record(dsn: str, example: str = "disk-pressure-fluentd.yaml", run: str = RUN) -> None:
    path = EXAMPLES / example
    scenario = load_scenario(path.read_text(encoding="utf-8"), f"examples/{example}")
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=run)


@pytest.fixture
async def recorded(store_dsn: str) -> str:
    """The DSN of a store with the incident recorded as run ``RUN``."""
    await record(store_dsn)
    return store_dsn


def sqlite_dsn(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'events.db'}"
