"""A run's stored events, read back for comparison: the fault tests (tests/distributed,
tests/compose) store a run on the distributed stack while something fails and check it
against the embedded run's, event by event: nothing lost, nothing twice."""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

from ledgerlet_store.store import open_store

#: (id, type, virtual time, order, payload) of one stored event
Stored = tuple[str, str, int, tuple[int, ...], bytes]


async def stored_events(dsn: str, run: str) -> list[Stored]:
    store = await open_store(dsn)
    try:
        events = await store.read_run(run)
    finally:
        await store.close()
    return [
        (e.envelope.id, e.envelope.type, e.envelope.t, tuple(e.envelope.order), bytes(e.envelope.data)) for e in events
    ]


async def count_events(dsn: str, run: str) -> int:
    store = await open_store(dsn, migrate=False)
    try:
        return await store.count(run)
    finally:
        await store.close()


def wait_until_stored(dsn: str, run: str, at_least: int, drive: subprocess.Popen[Any], timeout: float = 120) -> None:
    """Until the recorder has stored ``at_least`` of the run's events (mid-scenario)."""
    deadline = time.monotonic() + timeout
    while asyncio.run(count_events(dsn, run)) < at_least:
        assert drive.poll() is None, "the scenario finished before the fault could be injected"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.05)


def assert_same_events(embedded: list[Stored], distributed: list[Stored]) -> None:
    ids = [e[0] for e in distributed]
    assert len(ids) == len(set(ids)), "an event was stored twice"
    missing = {e[1] for e in set(embedded) - set(distributed)}
    extra = {e[1] for e in set(distributed) - set(embedded)}
    assert not missing and not extra, f"lost: {missing or '-'}; not in the embedded run: {extra or '-'}"
    assert distributed == embedded
