"""The Kubernetes facade's reads (ledgerlet_store/kube_reads.py) on SQLite, PostgreSQL
sorting text byte by byte and PostgreSQL sorting it as ICU's en-US does: pages of pod keys
that end where the next begins whatever the collation, a namespace's keys and no other's,
and pages of events by keyset cursor through batches' members."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.decisions import NodeConditionChanged, PodEvicted
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.kube_reads import KubeReads
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.store.conftest import S, applied, batched, filled_once, pod_object

RUN = "k"
#: pods stored on their own (pending: no node) and in a node's batch; their byte order and
#: ICU's differ (case, ``-`` against ``/`` and ``_``)
ALONE = ["ns/B", "ns/web_1", "ns-x/a", "nsb/z"]
BATCHED = ["ns/a", "ns/web-1", "ns/web-10", "ns/Web-2"]
#: object streams, the first two under the prefix the facade reads
OBJECTS = ["object/PriorityClass/high", "object/PriorityClass/Low", "object/PriorityClassX/z", "object/Pr"]


def _run() -> list[Envelope]:
    singles = [applied(RUN, 0, {"kind": "Node", "metadata": {"name": "n1"}}, node="n1", pod=None)]
    for i, key in enumerate(BATCHED + ALONE, start=1):
        namespace, name = key.split("/")
        node = "n1" if key in BATCHED else None
        singles.append(applied(RUN, i, pod_object(name, namespace, node), node=node, pod=key))
    for i, stream in enumerate(OBJECTS, start=20):
        kind = stream.split("/")[1]
        obj = {"kind": kind, "metadata": {"name": stream.split("/")[-1]}, "value": i}
        singles.append(
            make_envelope(inp.ObjectApplied(object=obj, initial=True), run=RUN, t=0, order=[0, i], stream=stream)
        )
    fed = batched(singles, dict.fromkeys(BATCHED, "n1"))
    evicted = PodEvicted(
        signal="memory.available", threshold="x", observed=1, grace_period_seconds=0, message="m", ranking=["ns/a"]
    )
    pressure = NodeConditionChanged(condition="MemoryPressure", status="True", reason="r", message="m")
    later = [
        make_envelope(evicted, run=RUN, t=10 * S, order=[1, 0, 5], stream="pod/ns/a", node="n1", pod="ns/a"),
        make_envelope(pressure, run=RUN, t=10 * S, order=[1, 0, 4], stream="node/n1", node="n1"),
    ]
    return [*fed, *later]


async def _before(store: SqlEventStore, a: str, b: str) -> bool:
    """Whether the database sorts ``a`` before ``b``."""
    async with store.connect() as conn:
        return bool((await conn.execute(sa.select(sa.literal(a) < sa.literal(b)))).scalar_one())


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "postgresql-icu"])
def collated_dsn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """tests/store/conftest.py's stores, each made and given the run once for the whole
    file: its tests only read."""
    yield from filled_once(request, tmp_path_factory, _fill)


async def _fill(dsn: str) -> None:
    async with await open_store(dsn) as store:
        await store.append_batch(_run())


@pytest.fixture
def filled(collated_store: SqlEventStore) -> KubeReads:
    return KubeReads(collated_store)


async def test_text_is_byte_ordered_where_the_database_says_so(
    filled: KubeReads, collated_dsn: str, request: pytest.FixtureRequest
) -> None:
    icu = request.node.callspec.params["collated_dsn"] == "postgresql-icu"
    assert await _before(filled.store, "B", "a") is not icu  # (what the database really does)
    assert await filled.byte_ordered() is not icu
    assert await filled.store.text_sorts_bytewise() is not icu


async def test_pages_of_pod_keys_walk_every_pod_once_in_the_databases_order(filled: KubeReads) -> None:
    for prefix, wanted in ((None, BATCHED + ALONE), ("ns/", [k for k in BATCHED + ALONE if k.startswith("ns/")])):
        walked: list[str] = []
        after = None
        while page := await filled.pod_keys(RUN, after=after, prefix=prefix, limit=2):
            assert len(page) <= 2
            walked += page
            after = page[-1]
        assert sorted(walked) == sorted(wanted), prefix
        for a, b in itertools.pairwise(walked):
            assert await _before(filled.store, a, b), (a, b)
        assert await filled.pod_keys(RUN, prefix=prefix, limit=100) == walked  # (one page: the same order)
    assert await filled.pod_keys("no-such-run") == []


async def test_a_nodes_pods_and_some_pods_events(filled: KubeReads) -> None:
    assert await filled.pods_on_node(RUN, "n1") == sorted(BATCHED)
    assert await filled.pods_on_node(RUN, "n2") == []
    got = await filled.read_pods(RUN, ["ns/a", "ns/B", "ns/Web-2"])
    assert [(s.envelope.pod, s.envelope.type) for s in got] == [
        ("ns/B", "ObjectApplied"),
        ("ns/Web-2", "ObjectApplied"),
        ("ns/a", "ObjectApplied"),
        ("ns/a", "PodEvicted"),
    ]
    assert [s.envelope.type for s in await filled.read_pods(RUN, ["ns/a"], t_to=5 * S)] == ["ObjectApplied"]


async def test_streams_and_a_range_of_streams(filled: KubeReads) -> None:
    got = await filled.read_streams(RUN, ["node/n1", "node/n2"], types=["NodeConditionChanged"])
    assert [s.envelope.type for s in got] == ["NodeConditionChanged"]
    assert await filled.read_streams(RUN, ["node/n1"], types=["NodeConditionChanged"], t_to=5 * S) == []
    ranged = await filled.read_stream_range(RUN, "object/PriorityClass/", types=["ObjectApplied"])
    assert sorted(s.envelope.stream for s in ranged) == sorted(OBJECTS[:2])
    assert await filled.read_stream_range(RUN, "object/PriorityClass/", types=["ObjectDeleted"]) == []


def _cursor(s: StoredEvent) -> tuple[int, str, int]:
    return (s.envelope.t, order_key(s.envelope.order), s.position)


@pytest.mark.parametrize(
    ("scope", "types"),
    [
        ("inputs", ["ObjectApplied"]),
        ("decisions", ["PodEvicted", "NodeConditionChanged"]),
        ("pods", ["ObjectApplied", "PodEvicted"]),
    ],
)
async def test_pages_of_a_runs_events_by_keyset_cursor(filled: KubeReads, scope: str, types: list[str]) -> None:
    """Pages of three, each after the last one's cursor, through single rows and batches'
    members alike: every event once, in decision order."""
    whole = [s.envelope for s in await filled.store.read_run(RUN)]
    wanted = [
        e.id
        for e in whole
        if e.type in types and (scope != "decisions" or e.kind == "decision") and (scope != "pods" or e.pod is not None)
    ]
    paged: list[str] = []
    after = None
    while page := await filled.list_run_events(RUN, types=types, after=after, scope=scope, limit=3):
        assert len(page) <= 3
        paged += [s.envelope.id for s in page]
        after = _cursor(page[-1])
    assert paged == wanted and wanted
    till = await filled.list_run_events(RUN, types=types, scope=scope, t_to=5 * S, limit=100)
    assert [s.envelope.id for s in till] == [e.id for e in whole if e.id in set(wanted) and e.t <= 5 * S]
