"""The store's contract suites: events to store, and stores on every backend (SQLite,
PostgreSQL sorting text byte by byte, PostgreSQL sorting it as ICU's en-US does)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.batch import iter_batched
from ledgerlet_core.contracts.decisions import NodeReclaimed
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.conftest import fresh_pg_database

S = 10**9


def ev(
    i: int,
    *,
    run: str = "run-a",
    stream: str = "node/n1",
    t: int | None = None,
    order: list[int] | None = None,
    node: str | None = "n1",
) -> Envelope:
    """A decision about a node (its data says ``i``)."""
    return make_envelope(
        NodeReclaimed(signal="nodefs.available", action="GarbageCollectContainers", bytes_freed=i),
        run=run,
        t=t if t is not None else i * S,
        order=order or [1, i],
        stream=stream,
        node=node,
    )


def pod_object(name: str, namespace: str, node: str | None) -> dict[str, object]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": node}}


def applied(run: str, i: int, obj: dict[str, object], *, node: str | None, pod: str | None, t: int = 0) -> Envelope:
    """An object applied at ``t``, as the feed makes it (a pod on its pod's stream)."""
    stream = f"pod/{pod}" if pod else f"node/{node}"
    return make_envelope(
        inp.ObjectApplied(object=obj, initial=True), run=run, t=t, order=[0, i], stream=stream, node=node, pod=pod
    )


def batched(singles: list[Envelope], bound: dict[str, str]) -> list[Envelope]:
    """``singles`` as the feed stores them: a node's pods' inputs of one instant in a batch
    (``bound``: pod -> node)."""
    return list(iter_batched(singles, lambda e: bound.get(e.pod or "") if e.pod else None))


@pytest.fixture(params=["sqlite", "postgresql", "postgresql-icu"])
def collated_dsn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The reads whose answers depend on how text sorts run on SQLite (byte order),
    PostgreSQL with the C.UTF-8 collation (byte order) and with ICU's en-US (``a`` before
    ``B``, punctuation after letters' case)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'events.db'}"
        return
    request.getfixturevalue("pg_server")
    with fresh_pg_database("en-US" if request.param.endswith("icu") else None) as dsn:
        yield dsn


@pytest.fixture
async def collated_store(collated_dsn: str) -> AsyncIterator[SqlEventStore]:
    s = await open_store(collated_dsn)
    try:
        yield s
    finally:
        await s.close()


def filled_once(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    fill: Callable[[str], Awaitable[None]],
) -> Iterator[str]:
    """A store of the backend ``request.param`` names (as :func:`collated_dsn`'s), made and
    filled by ``fill`` once: for a module-scoped fixture whose tests only read."""
    if request.param == "sqlite":
        dsn = f"sqlite:///{tmp_path_factory.mktemp('filled') / 'events.db'}"
        asyncio.run(fill(dsn))
        yield dsn
        return
    request.getfixturevalue("pg_server")
    with fresh_pg_database("en-US" if request.param.endswith("icu") else None) as dsn:
        asyncio.run(fill(dsn))
        yield dsn
