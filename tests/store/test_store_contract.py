"""One contract for the event store, run on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from ledgerlet_core.contracts.decisions import NodeReclaimed, PodTerminated
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_store.store import EventStore, WrongExpectedVersion, order_key

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
    return make_envelope(
        NodeReclaimed(signal="nodefs.available", action="GarbageCollectContainers", bytes_freed=i),
        run=run,
        t=t if t is not None else i * S,
        order=order or [1, i],
        stream=stream,
        node=node,
    )


async def test_append_and_read_a_stream(store: EventStore) -> None:
    events = [ev(i) for i in range(3)]
    await store.append("node/n1", events, expected_version=0)
    got = await store.read_stream("run-a", "node/n1")
    assert [g.version for g in got] == [1, 2, 3]
    assert [g.envelope.id for g in got] == [e.id for e in events]
    assert decode_data(got[2].envelope).bytes_freed == 2
    assert got[0].envelope.order == [1, 0] and got[0].envelope.node == "n1"
    assert await store.stream_version("run-a", "node/n1") == 3


async def test_optimistic_concurrency(store: EventStore) -> None:
    await store.append("node/n1", [ev(0)], expected_version=0)
    with pytest.raises(WrongExpectedVersion) as err:
        await store.append("node/n1", [ev(1)], expected_version=0)
    assert (err.value.expected, err.value.actual) == (0, 1)
    await store.append("node/n1", [ev(1)], expected_version=1)
    assert await store.count() == 2


async def test_append_is_idempotent_by_event_id(store: EventStore) -> None:
    events = [ev(i) for i in range(3)]
    first = await store.append("node/n1", events, expected_version=0)
    again = await store.append("node/n1", events, expected_version=0)  # a retried append
    assert first == again
    assert await store.append_batch(events) == 0
    assert await store.count() == 3


async def test_batch_across_streams_dedupes_within_and_against_the_store(store: EventStore) -> None:
    a = [ev(i, stream="node/n1") for i in range(3)]
    b = [ev(i, stream="node/n2", node="n2", order=[2, i]) for i in range(2)]
    assert await store.append_batch([*a, *b, a[0]]) == 5
    assert await store.append_batch([*a, ev(9)]) == 1
    assert [g.version for g in await store.read_stream("run-a", "node/n2")] == [1, 2]
    assert [g.version for g in await store.read_stream("run-a", "node/n1")] == [1, 2, 3, 4]


async def test_global_positions_and_reading_by_position(store: EventStore) -> None:
    await store.append_batch([ev(i) for i in range(5)])
    everything = await store.read_all()
    positions = [e.position for e in everything]
    assert positions == sorted(positions) and len(set(positions)) == 5
    tail = await store.read_all(from_position=positions[2], limit=2)
    assert [e.position for e in tail] == positions[2:4]


async def test_read_by_type_and_time_range(store: EventStore) -> None:
    term = make_envelope(
        PodTerminated(reason="Evicted", grace_period_seconds=1, killed_at=5.0),
        run="run-a",
        t=5 * S,
        order=[1, 99],
        stream="pod/default/p",
        pod="default/p",
    )
    await store.append_batch([*(ev(i) for i in range(10)), term])
    got = await store.read_by_type(["NodeReclaimed"], run="run-a", t_from=3 * S, t_to=6 * S)
    assert [g.envelope.t // S for g in got] == [3, 4, 5, 6]
    assert [g.envelope.type for g in await store.read_by_type(["PodTerminated"])] == ["PodTerminated"]


async def test_a_runs_events_come_back_in_decision_order(store: EventStore) -> None:
    # stored out of order; read back by (virtual time, causal order)
    late = ev(1, t=10 * S, order=[1, 0])
    child = ev(2, t=5 * S, order=[1, 0, 20, 0])
    parent = ev(3, t=5 * S, order=[1, 0])
    sibling = ev(4, t=5 * S, order=[1, 1])
    other_run = ev(5, run="run-b", t=0, order=[0])
    await store.append_batch([late, sibling, child, other_run, parent])
    got = await store.read_run("run-a")
    assert [g.envelope.id for g in got] == [parent.id, child.id, sibling.id, late.id]
    assert [r for r, _ in await store.runs()] == []  # no ScenarioStarted yet


async def test_concurrent_appenders_cannot_both_win(store: EventStore) -> None:
    await store.append("node/n1", [ev(0)], expected_version=0)
    results = await asyncio.gather(
        store.append("node/n1", [ev(1)], expected_version=1),
        store.append("node/n1", [ev(2)], expected_version=1),
        return_exceptions=True,
    )
    assert sum(isinstance(r, WrongExpectedVersion) for r in results) == 1
    assert await store.stream_version("run-a", "node/n1") == 2


async def test_large_batches(store: EventStore) -> None:
    n = 6000
    assert await store.append_batch([ev(i, order=[1, i]) for i in range(n)]) == n
    assert await store.count("run-a") == n


async def test_migrations_are_idempotent(store_dsn: str) -> None:
    for _ in range(2):
        s = await EventStore.open(store_dsn)
        await s.append_batch([ev(0)])
        await s.close()
    s = await EventStore.open(store_dsn)
    assert await s.count() == 1
    await s.close()


async def test_batches_from_two_stores_on_one_database_keep_versions_contiguous(store_dsn: str) -> None:
    """A store remembers the versions it wrote; another writer moving a stream on must not
    make it write a version twice or skip one (PostgreSQL's optimistic COPY path)."""
    a = await EventStore.open(store_dsn)
    b = await EventStore.open(store_dsn, migrate=False)
    try:
        assert await a.append_batch([ev(0), ev(1)]) == 2
        assert await b.append_batch([ev(2)]) == 1
        assert await a.append_batch([ev(3), ev(1)]) == 1  # ev(1) is a redelivery
        assert await a.append_batch([ev(4)]) == 1
        got = await a.read_stream("run-a", "node/n1")
        assert [g.version for g in got] == [1, 2, 3, 4, 5]
        assert [decode_data(g.envelope).bytes_freed for g in got] == [0, 1, 2, 3, 4]
    finally:
        await a.close()
        await b.close()


async def test_decision_queries_use_their_partial_indexes(store: EventStore) -> None:
    await store.append_batch([ev(i) for i in range(5)])
    if store.dialect != "sqlite":
        return  # PostgreSQL's planner prefers a scan on a table this small
    import sqlalchemy as sa

    async with store.engine.connect() as conn:
        plan = " ".join(
            str(r[-1])
            for r in await conn.execute(
                sa.text(
                    "EXPLAIN QUERY PLAN SELECT * FROM events WHERE run = 'run-a' AND kind = 'decision' "
                    "ORDER BY t, order_key"
                )
            )
        )
    assert "ix_events_decisions" in plan


def _inputs(run: str = "run-b") -> list[Envelope]:
    """A node object, two bound pods and their usage, a pending pod: as the feed makes them."""
    from ledgerlet_core.contracts import inputs as inp

    def applied(i: int, obj: dict[str, object], node: str | None, pod: str | None) -> Envelope:
        stream = f"pod/{pod}" if pod else f"node/{node}"
        return make_envelope(
            inp.ObjectApplied(object=obj, initial=True), run=run, t=0, order=[0, i], stream=stream, node=node, pod=pod
        )

    def pod(name: str, node: str | None) -> dict[str, object]:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "spec": {"nodeName": node}}

    return [
        applied(1, {"kind": "Node", "metadata": {"name": "n1"}}, "n1", None),
        applied(2, pod("web-1", "n1"), "n1", "ns/web-1"),
        applied(3, pod("web-2", "n1"), "n1", "ns/web-2"),
        applied(4, pod("lone", None), None, "ns/lone"),
        *(
            make_envelope(
                inp.UsageDeclared(key=f"ns/{p}", usage={"memory": "1Mi"}),
                run=run,
                t=0,
                order=[0, i],
                stream=f"usage/ns/{p}",
            )
            for i, p in ((5, "web-1"), (6, "web-2"))
        ),
    ]


async def test_input_batches_are_stored_as_one_row_and_read_as_their_members(store: EventStore) -> None:
    from ledgerlet_core.contracts.batch import BATCH, batch_inputs

    singles = _inputs()
    bound = {"ns/web-1": "n1", "ns/web-2": "n1"}
    fed = batch_inputs(singles, lambda e: e.node if e.pod in bound else bound.get(e.stream.removeprefix("usage/")))
    assert [e.type for e in fed] == ["ObjectApplied", BATCH, "ObjectApplied", BATCH]
    assert await store.append_batch(fed[:3]) == 3
    assert await store.append_batch(fed[3:]) == 1  # a batch of usage entries alone (no pod to index)
    assert await store.append_batch(fed) == 0  # idempotent, members too
    assert await store.count("run-b") == 4  # rows: the batches are one each

    by_id = {e.id: e for e in singles}
    run = [s.envelope for s in await store.read_run("run-b")]
    assert run == sorted(singles, key=Envelope.sort_key)  # exactly the single inputs, in order
    assert [s.envelope for s in await store.read_run("run-b", kind="input")] == run
    assert sorted(s.envelope.id for s in [e async for e in store.iter_run("run-b")]) == sorted(by_id)
    assert [s.envelope.type for s in [e async for e in store.iter_run("run-b", members=False)]].count(BATCH) == 2

    assert [s.envelope.id for s in await store.read_pod("run-b", "ns/web-2")] == [singles[2].id]
    assert [s.envelope.id for s in await store.read_pod("run-b", "ns/lone")] == [singles[3].id]
    assert await store.pods_named("run-b", "web-1") == ["ns/web-1"]
    node = await store.read_node("run-b", "n1")
    assert [s.envelope.id for s in node] == [singles[0].id, singles[1].id, singles[2].id]
    assert [s.envelope.id for s in await store.read_node("run-b", "n1", types=["ObjectApplied"], limit=2)] == [
        singles[0].id,
        singles[1].id,
    ]
    usage = await store.read_by_type(["UsageDeclared"], run="run-b")
    assert [s.envelope.id for s in usage] == [singles[4].id, singles[5].id]
    cited = await store.get_events([singles[2].id, singles[3].id, "no-such-id"])  # a batched pod, a single one
    assert sorted(s.envelope.id for s in cited) == sorted([singles[2].id, singles[3].id])
    assert {bytes(s.envelope.data) for s in cited} == {bytes(singles[2].data), bytes(singles[3].data)}
    # the facade's reads: pages of pod keys, a node's pods, some pods' events, inputs in order
    assert await store.pod_keys("run-b") == ["ns/lone", "ns/web-1", "ns/web-2"]
    assert await store.pod_keys("run-b", after="ns/lone", limit=1) == ["ns/web-1"]
    assert await store.pods_on_node("run-b", "n1") == ["ns/web-1", "ns/web-2"]
    pods = await store.read_pods("run-b", ["ns/web-2", "ns/lone"])
    assert [s.envelope.id for s in pods] == [singles[3].id, singles[2].id]
    page = await store.list_run_events("run-b", types=["ObjectApplied"], scope="inputs", limit=2)
    assert [s.envelope.id for s in page] == [singles[0].id, singles[1].id]
    rest = await store.list_run_events(
        "run-b", types=["ObjectApplied"], scope="inputs", after=(0, order_key([0, 2]), page[-1].position)
    )
    assert [s.envelope.id for s in rest] == [singles[2].id, singles[3].id]


async def test_a_snapshot_is_replaced_whole_and_read_back_as_saved(store: EventStore) -> None:
    from datetime import UTC, datetime

    from ledgerlet_store.snapshots import StoredSnapshot

    assert await store.load_snapshot("g") is None
    first = StoredSnapshot("g", "v1", {("ledgerlet.inputs", 0): 7}, b"\x00state\xff" * 1000, 7, datetime.now(UTC))
    await store.save_snapshot(first)
    second = StoredSnapshot(
        "g",
        "v1",
        {("ledgerlet.inputs", 0): 9, ("ledgerlet.decisions", 3): 2},
        b"newer",
        11,
        datetime.now(UTC),
    )
    await store.save_snapshot(second)
    other = StoredSnapshot("ns.g", "v2", {}, b"x", 0, datetime.now(UTC))
    await store.save_snapshot(other)
    got = await store.load_snapshot("g")
    assert got is not None
    assert (got.version, got.offsets, got.state, got.records) == ("v1", second.offsets, b"newer", 11)
    assert (await store.load_snapshot("ns.g")) is not None
    await store.drop_snapshot("g")
    assert await store.load_snapshot("g") is None
    assert (await store.load_snapshot("ns.g")) is not None
