"""One contract for the event store, run on SQLite and on PostgreSQL: every method of the
store (``SqlEventStore``: the append-only contract of contract.py and the reads on it),
what a database that is away looks like (StoreUnavailable), and checkpoints. The run
registry and the Kubernetes facade's reads have suites of their own (test_runs.py,
test_kube_reads.py), and so have the reads' order, pages, batches and empty answers on
each collation (test_store_reads.py); test_every_read_is_in_a_contract_suite keeps them
whole."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ledgerlet_core.contracts.decisions import PodTerminated
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent, StoreError, StoreUnavailable, WrongExpectedVersion
from ledgerlet_store.runs import runs
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.store.conftest import S, ev


async def test_append_and_read_a_stream(store: SqlEventStore) -> None:
    events = [ev(i) for i in range(3)]
    await store.append("node/n1", events, expected_version=0)
    got = await store.read_stream("run-a", "node/n1")
    assert [g.version for g in got] == [1, 2, 3]
    assert [g.envelope.id for g in got] == [e.id for e in events]
    assert decode_data(got[2].envelope).bytes_freed == 2
    assert got[0].envelope.order == [1, 0] and got[0].envelope.node == "n1"
    assert await store.stream_version("run-a", "node/n1") == 3


async def test_optimistic_concurrency(store: SqlEventStore) -> None:
    await store.append("node/n1", [ev(0)], expected_version=0)
    with pytest.raises(WrongExpectedVersion) as err:
        await store.append("node/n1", [ev(1)], expected_version=0)
    assert (err.value.expected, err.value.actual) == (0, 1)
    await store.append("node/n1", [ev(1)], expected_version=1)
    assert await store.count() == 2


async def test_append_is_idempotent_by_event_id(store: SqlEventStore) -> None:
    events = [ev(i) for i in range(3)]
    first = await store.append("node/n1", events, expected_version=0)
    again = await store.append("node/n1", events, expected_version=0)  # a retried append
    assert first == again
    assert await store.append_batch(events) == 0
    assert await store.count() == 3


async def test_known_names_the_stored_ids_among_those_asked(store: SqlEventStore) -> None:
    events = [ev(i) for i in range(3)]
    await store.append_batch(events[:2])
    unknown = [f"00000000-0000-0000-0000-{n:012d}" for n in range(2_500)]  # (ids asked in chunks)
    asked = [*unknown[:1_200], events[2].id, events[1].id, *unknown[1_200:], events[0].id, events[1].id]
    assert await store.known(asked) == {events[0].id, events[1].id}
    assert await store.known([]) == set()


async def test_batch_across_streams_dedupes_within_and_against_the_store(store: SqlEventStore) -> None:
    a = [ev(i, stream="node/n1") for i in range(3)]
    b = [ev(i, stream="node/n2", node="n2", order=[2, i]) for i in range(2)]
    assert await store.append_batch([*a, *b, a[0]]) == 5
    assert await store.append_batch([*a, ev(9)]) == 1
    assert [g.version for g in await store.read_stream("run-a", "node/n2")] == [1, 2]
    assert [g.version for g in await store.read_stream("run-a", "node/n1")] == [1, 2, 3, 4]


async def test_global_positions_and_reading_by_position(store: SqlEventStore) -> None:
    await store.append_batch([ev(i) for i in range(5)])
    everything = await store.read_all()
    positions = [e.position for e in everything]
    assert positions == sorted(positions) and len(set(positions)) == 5
    tail = await store.read_all(from_position=positions[2], limit=2)
    assert [e.position for e in tail] == positions[2:4]


async def test_read_by_type_and_time_range(store: SqlEventStore) -> None:
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


async def test_a_runs_events_come_back_in_decision_order(store: SqlEventStore) -> None:
    # stored out of order; read back by (virtual time, causal order)
    late = ev(1, t=10 * S, order=[1, 0])
    child = ev(2, t=5 * S, order=[1, 0, 20, 0])
    parent = ev(3, t=5 * S, order=[1, 0])
    sibling = ev(4, t=5 * S, order=[1, 1])
    other_run = ev(5, run="run-b", t=0, order=[0])
    await store.append_batch([late, sibling, child, other_run, parent])
    got = await store.read_run("run-a")
    assert [g.envelope.id for g in got] == [parent.id, child.id, sibling.id, late.id]
    assert [r for r, _ in await runs(store)] == []  # no ScenarioStarted yet


async def test_concurrent_appenders_cannot_both_win(store: SqlEventStore) -> None:
    await store.append("node/n1", [ev(0)], expected_version=0)
    results = await asyncio.gather(
        store.append("node/n1", [ev(1)], expected_version=1),
        store.append("node/n1", [ev(2)], expected_version=1),
        return_exceptions=True,
    )
    assert sum(isinstance(r, WrongExpectedVersion) for r in results) == 1
    assert await store.stream_version("run-a", "node/n1") == 2


async def test_large_batches(store: SqlEventStore) -> None:
    n = 6000
    assert await store.append_batch([ev(i, order=[1, i]) for i in range(n)]) == n
    assert await store.count("run-a") == n


async def test_migrations_are_idempotent(store_dsn: str) -> None:
    for _ in range(2):
        s = await open_store(store_dsn)
        await s.append_batch([ev(0)])
        await s.close()
    s = await open_store(store_dsn, migrate=False)
    await s.migrate()
    assert await s.count() == 1
    await s.close()


async def test_batches_from_two_stores_on_one_database_keep_versions_contiguous(store_dsn: str) -> None:
    """A store remembers the versions it wrote; another writer moving a stream on must not
    make it write a version twice or skip one (PostgreSQL's optimistic COPY path)."""
    a = await open_store(store_dsn)
    b = await open_store(store_dsn, migrate=False)
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


async def test_decision_queries_use_their_partial_indexes(store: SqlEventStore) -> None:
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


async def test_input_batches_are_stored_as_one_row_and_read_as_their_members(store: SqlEventStore) -> None:
    from ledgerlet_core.contracts.batch import BATCH, iter_batched

    singles = _inputs()
    bound = {"ns/web-1": "n1", "ns/web-2": "n1"}
    fed = list(
        iter_batched(singles, lambda e: e.node if e.pod in bound else bound.get(e.stream.removeprefix("usage/")))
    )
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


async def test_a_snapshot_is_replaced_whole_and_read_back_as_saved(collated_store: SqlEventStore) -> None:
    store = collated_store
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


async def test_a_recorded_runs_reads_are_what_its_whole_history_says(store: SqlEventStore) -> None:
    """Every indexed read of a real run (input batches, a tick's observations in one row,
    decisions) gives exactly the events that filtering the run's whole history gives."""
    from collections import Counter

    from ledgerlet_core.contracts.registry import DECISION, INTERNAL
    from tests.postmortem.conftest import EVICTED, RUN, record

    await record(store.dsn)
    whole = [s.envelope for s in await store.read_run(RUN)]
    rows = [s async for s in store.iter_run(RUN, members=False)]  # as stored: batches whole
    assert sorted(e.id for e in whole) == sorted([s.envelope.id async for s in store.iter_run(RUN)])
    assert await store.count(RUN) == len(rows) == len(await store.read_all(limit=10**6)) < len(whole)

    def ids(found: list[StoredEvent]) -> list[str]:
        return [s.envelope.id for s in found]

    decisions = [e for e in whole if e.kind == DECISION]
    assert ids(await store.read_run(RUN, kind=DECISION)) == [e.id for e in decisions]
    # as rows (a verified replay's read): each the same as the event it holds, no other
    kinds = (INTERNAL, DECISION)
    held = [s.envelope async for s in store.iter_run(RUN, members=False, kinds=kinds)]
    as_rows = [r async for r in store.iter_run_rows(RUN, kinds=kinds, batch=7)]
    assert [r.envelope() for r in as_rows] == held and [r.id for r in as_rows] == [e.id for e in held]
    assert all(r.same_as(e) for r, e in zip(as_rows, held, strict=True))
    assert not any(r.same_as(e) for r, e in zip(as_rows, held[1:], strict=False))
    assert sum(r.members() for r in as_rows) == sum(1 for e in whole if e.kind in kinds)
    assert ids([s async for s in store.iter_run(RUN, kinds=[DECISION])]) == [e.id for e in decisions]
    node = next(e.node for e in whole if e.pod == EVICTED and e.type == "PodEvicted")
    assert node is not None
    for t in ("PodEvicted", "ObjectApplied", "NodeObserved"):
        of_type = [e.id for e in whole if e.type == t]
        assert of_type and ids(await store.read_by_type([t], run=RUN)) == of_type, t
    window = [e for e in whole if e.type == "NodeObserved" and 60 * S <= e.t <= 300 * S]
    got = await store.read_by_type(["NodeObserved"], run=RUN, t_from=60 * S, t_to=300 * S, limit=5)
    assert ids(got) == [e.id for e in window][:5]
    mine = [e for e in whole if e.node == node and e.kind != INTERNAL]
    assert ids(await store.read_node(RUN, node)) == [e.id for e in mine]
    applied = [e.id for e in mine if e.type == "ObjectApplied"]
    assert ids(await store.read_node(RUN, node, types=["ObjectApplied"], limit=3)) == applied[:3]
    own = [e.id for e in mine if e.pod is None and e.type in ("ObjectApplied", "NodeConditionChanged")]
    assert own and ids(await store.read_nodes(RUN, [node], types=["ObjectApplied", "NodeConditionChanged"])) == own
    assert ids(await store.read_pod(RUN, EVICTED)) == [e.id for e in whole if e.pod == EVICTED]
    assert await store.pods_named(RUN, EVICTED.split("/")[1]) == [EVICTED]
    observed = [e.id for e in whole if e.type == "NodeObserved" and e.node == node and e.t <= 300 * S]
    got = await store.read_stream_window(RUN, f"node/{node}", types=["NodeObserved"], t_to=300 * S)
    assert observed and ids(got) == observed
    stream = [s for s in rows if s.envelope.stream == f"pod/{EVICTED}"]
    assert ids(await store.read_stream(RUN, f"pod/{EVICTED}")) == ids(sorted(stream, key=lambda s: s.version))
    assert await store.stream_version(RUN, f"pod/{EVICTED}") == len(stream) > 0
    # by id: batch members and observations too (not a batch's usage entries: no decision
    # cites one, and the members' index leaves them out, batches.py)
    whole_ids = [e.id for e in whole]
    cited = await store.get_events([*whole_ids, "no-such-id"])
    usage_in_batches = {e.id for e in whole if e.type == "UsageDeclared"} - {s.envelope.id for s in rows}
    assert sorted(ids(cited)) == sorted(set(whole_ids) - usage_in_batches)
    assert [s.position for s in cited] == sorted(s.position for s in cited)
    # pages of decisions by keyset cursor: every one once, in decision order, filters kept
    for filters in ({}, {"node": node}, {"pod": EVICTED}, {"types": ["PodEvicted", "NodeTaintAdded"]}):
        paged: list[str] = []
        after = None
        while page := await store.list_decisions(RUN, after=after, limit=3, **filters):  # type: ignore[arg-type]
            paged += ids(page)
            last = page[-1]
            after = (last.envelope.t, order_key(last.envelope.order), last.position)
        wanted = [
            e.id
            for e in decisions
            if ("node" not in filters or e.node == filters["node"])
            and ("pod" not in filters or e.pod == filters["pod"])
            and ("types" not in filters or e.type in filters["types"])
        ]
        assert paged == wanted and wanted, filters
    in_window = [e.id for e in decisions if 100 * S <= e.t <= 200 * S]
    assert ids(await store.list_decisions(RUN, t_from=100 * S, t_to=200 * S, limit=1000)) == in_window
    # what a quick verified replay leaves out is counted per node and type
    counted: dict[str, Counter[str]] = {}
    for e in whole:
        if e.node is not None and e.kind in (DECISION, INTERNAL):
            counted.setdefault(e.node, Counter())[e.type] += 1
    assert {n: dict(c) for n, c in counted.items()} == await store.types_by_node(RUN)
    # events of some types only if about some nodes: the rest as they are
    only = [s.envelope async for s in store.iter_run(RUN, types_only_of=(["PodAdmitted"], ["no-such-node"]))]
    assert not [e for e in only if e.type == "PodAdmitted" and e.node is not None]
    assert len([e for e in only if e.type != "PodAdmitted"]) == len([e for e in whole if e.type != "PodAdmitted"])


async def test_the_store_answers_when_its_database_does(collated_store: SqlEventStore) -> None:
    store = collated_store
    await store.ping()
    assert store.describe() and "***" not in store.describe()


async def test_a_postgresql_server_that_is_not_there_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        await open_store("postgresql://postgres@127.0.0.1:1/nowhere")


async def test_a_sqlite_file_that_cannot_be_opened_is_unavailable_one_that_is_not_a_store_is_an_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreUnavailable):
        await open_store(f"sqlite:///{tmp_path / 'no-such-directory' / 'events.db'}")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, " * 1000)
    with pytest.raises(StoreError) as err:
        await open_store(f"sqlite:///{garbage}")
    assert not isinstance(err.value, StoreUnavailable)


async def test_a_sqlite_store_locked_past_its_wait_is_unavailable_then_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the write lock for longer than a writer waits."""
    import sqlite3

    from ledgerlet_store import sqlite as backend

    monkeypatch.setattr(backend, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "events.db"
    async with await open_store(f"sqlite:///{path}") as store:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreUnavailable, match="locked"):
                await store.append_batch([ev(0)])
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert await store.append_batch([ev(0)]) == 1


@pytest.mark.slow
async def test_a_postgresql_server_that_goes_away_is_unavailable_until_it_is_back() -> None:
    """A server of the test's own, crashed and started again under an open store: every
    call meanwhile raises StoreUnavailable (what the runtime retries on), never a driver's
    exception; once it is back the store answers on fresh connections."""
    from tests.support import private_pg

    if not private_pg.available():
        pytest.skip("PostgreSQL's server binaries (or runuser, as root) are not here")
    with private_pg.private_cluster() as pg:
        dsn = await pg.create_database("events")
        async with await open_store(dsn) as store:
            assert await store.append_batch([ev(0)]) == 1
            pg.stop("immediate")
            for call in (
                lambda: store.append_batch([ev(1)]),
                lambda: store.read_run("run-a"),
                lambda: store.load_snapshot("k"),
                lambda: runs(store),
                store.ping,
            ):
                with pytest.raises(StoreUnavailable):
                    await call()
            pg.start()
            assert await store.append_batch([ev(1)]) == 1
            assert [s.envelope.id for s in await store.read_run("run-a")] == [ev(0).id, ev(1).id]


def test_every_read_is_in_a_contract_suite() -> None:
    """Each public method of the store and of the facade's reads, and each function of the
    run registry, is called by a contract suite (which run on every backend); each of the
    leases' and the pools' (PostgreSQL's advisory locks, which SQLite has no counterpart
    of) by theirs."""
    import inspect

    from ledgerlet_store import kube_reads, leases, presence, runs
    from ledgerlet_store.sql_store import SqlEventStore

    def public(cls: type) -> list[str]:
        return [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]

    def uncalled(names: list[str], files: tuple[str, ...]) -> list[str]:
        suites = "".join((Path(__file__).parent / f).read_text() for f in files)
        return [n for n in names if not any(f"{c}{n}(" in suites for c in (".", " ", "("))]

    names = public(SqlEventStore) + public(kube_reads.KubeReads)
    names += [n for n, f in inspect.getmembers(runs, inspect.isfunction) if f.__module__ == runs.__name__]
    # (what the reads are built of, called by every one of them)
    building_blocks = {"connect", "writing", "fetch", "batch_members_of"}
    suites = ("test_store_contract.py", "test_store_reads.py", "test_kube_reads.py", "test_runs.py")
    missing = uncalled([n for n in names if n not in building_blocks], suites)
    missing += uncalled(public(leases.Lease) + public(presence.Presence), ("test_leases.py",))
    assert not missing, f"not in a contract suite: {missing}"
