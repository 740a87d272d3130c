"""The store's reads on every backend and collation (SQLite, PostgreSQL sorting text byte by
byte, PostgreSQL sorting it as ICU's en-US does), against an oracle made from the events
themselves: decision order (virtual time, then causal order, a cause's consequences before
its next sibling, place 10 after place 2), keyset pages, batches read as their members,
appends idempotent by id, and nothing at all for a run the store does not hold. The
reads' tests share one store per backend, filled once (they only read it)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.batch import BATCH, iter_batched
from ledgerlet_core.contracts.decisions import PodTerminated
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, INPUT, INTERNAL, make_envelope
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.store.conftest import S, applied, ev, filled_once, pod_object

RUN = "r"
#: pods bound to n1 (stored in its batch), and one pending (stored alone); their byte
#: order and ICU's differ (case, ``_`` against ``-``)
BOUND = ["ns/a", "ns/B", "ns/web_1", "ns/web-1"]
PENDING = "ns/lone"


def _usage(run: str, i: int, pod: str) -> Envelope:
    return make_envelope(
        inp.UsageDeclared(key=pod, usage={"memory": "1Mi"}), run=run, t=0, order=[0, i], stream=f"usage/{pod}"
    )


def _terminated(run: str, pod: str, t: int, order: list[int]) -> Envelope:
    data = PodTerminated(reason="Evicted", grace_period_seconds=0, killed_at=t / S)
    return make_envelope(data, run=run, t=t, order=order, stream=f"pod/{pod}", node="n1", pod=pod)


def _history(run: str = RUN) -> tuple[list[Envelope], list[Envelope]]:
    """A run's events one by one (the oracle) and as the feed stores them: two nodes, a
    batch of n1's pods' objects, a pending pod, a batch of usage entries alone, then
    decisions whose places differ where a text sort could go wrong."""
    inputs = [
        applied(run, 0, {"kind": "Node", "metadata": {"name": "n1"}}, node="n1", pod=None),
        applied(run, 1, {"kind": "Node", "metadata": {"name": "n2"}}, node="n2", pod=None),
        *(
            applied(run, i, pod_object(p.split("/")[1], "ns", "n1"), node="n1", pod=p)
            for i, p in enumerate(BOUND, start=2)
        ),
        applied(run, 6, pod_object("lone", "ns", None), node=None, pod=PENDING),
        *(_usage(run, i, p) for i, p in enumerate(BOUND, start=7)),
    ]
    decisions = [
        ev(1, run=run, t=10 * S, order=[1, 0]),
        ev(2, run=run, t=5 * S, order=[1, 10]),
        ev(3, run=run, t=5 * S, order=[1, 2], stream="node/n2", node="n2"),
        ev(4, run=run, t=5 * S, order=[1, 0, 20, 0]),
        ev(5, run=run, t=5 * S, order=[1, 0]),
        ev(6, run=run, t=5 * S, order=[1, 1], stream="node/n2", node="n2"),
        ev(7, run=run, t=5 * S, order=[1, 0, 3]),
        _terminated(run, "ns/a", 5 * S, [1, 0, 20, 1]),
        _terminated(run, "ns/B", 10 * S, [1, 0, 1]),
        # pods of the same name elsewhere, one whose name ends in it
        _terminated(run, "other-ns/a", 20 * S, [1, 0]),
        _terminated(run, "ns/xa", 20 * S, [1, 1]),
        _terminated(run, "A/a", 20 * S, [1, 2]),
    ]
    bound = dict.fromkeys(BOUND, "n1")
    fed = list(iter_batched(inputs, lambda e: "n1" if (e.pod or e.stream.removeprefix("usage/")) in bound else None))
    assert [e.type for e in fed].count(BATCH) == 2  # the pods' objects; their usage (no node's)
    return [*inputs, *decisions], [*fed, *decisions]


def _ids(found: list[StoredEvent]) -> list[str]:
    return [s.envelope.id for s in found]


def _ordered(events: list[Envelope], keep: Callable[[Envelope], bool] = lambda e: True) -> list[str]:
    return [e.id for e in sorted(events, key=Envelope.sort_key) if keep(e)]


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "postgresql-icu"])
def filled_dsn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """tests/store/conftest.py's stores (``collated_dsn``), each made and given the runs once
    for the whole file: the reads' tests only read."""
    yield from filled_once(request, tmp_path_factory, _fill)


async def _fill(dsn: str) -> None:
    """The run (stored shuffled) and another run like it."""
    _, fed = _history()
    _, other = _history("other")
    rows = [*fed, *other]
    random.Random(7).shuffle(rows)
    async with await open_store(dsn) as store:
        assert await store.append_batch(rows) == len(rows)


@pytest.fixture
async def filled(filled_dsn: str) -> AsyncIterator[tuple[SqlEventStore, list[Envelope]]]:
    async with await open_store(filled_dsn) as store:
        yield store, _history()[0]


async def test_every_read_gives_decision_order(filled: tuple[SqlEventStore, list[Envelope]]) -> None:
    store, singles = filled
    assert _ids(await store.read_run(RUN)) == _ordered(singles)
    decided = _ordered(singles, lambda e: e.kind == DECISION)
    assert _ids(await store.read_run(RUN, kind=DECISION)) == decided
    assert _ids(await store.read_run(RUN, kind=INPUT)) == _ordered(singles, lambda e: e.kind == INPUT)
    types = ["NodeReclaimed", "PodTerminated"]
    assert _ids(await store.read_by_type(types, run=RUN)) == decided
    at_5 = _ordered(singles, lambda e: e.kind == DECISION and e.t == 5 * S)
    assert _ids(await store.read_by_type(types, run=RUN, t_from=5 * S, t_to=5 * S, limit=4)) == at_5[:4]
    assert len(await store.read_by_type(types)) == 2 * len(decided)  # (both runs)
    n1 = _ordered(singles, lambda e: e.node == "n1")
    assert _ids(await store.read_node(RUN, "n1")) == n1
    for limit in range(1, len(n1) + 1):
        assert _ids(await store.read_node(RUN, "n1", limit=limit)) == n1[:limit], limit
    assert _ids(await store.read_node(RUN, "n1", t_from=5 * S, t_to=5 * S, types=["NodeReclaimed"])) == _ordered(
        singles, lambda e: e.node == "n1" and e.t == 5 * S and e.type == "NodeReclaimed"
    )
    nodes = _ordered(singles, lambda e: e.node in ("n1", "n2") and e.pod is None and e.type != "PodTerminated")
    assert _ids(await store.read_nodes(RUN, ["n2", "n1", "n2"], types=["ObjectApplied", "NodeReclaimed"])) == nodes
    till = _ordered(singles, lambda e: e.node == "n2" and e.pod is None and e.t <= 5 * S)
    assert _ids(await store.read_nodes(RUN, ["n2"], types=["ObjectApplied", "NodeReclaimed"], t_to=5 * S)) == till
    for pod in (*BOUND, PENDING):
        assert _ids(await store.read_pod(RUN, pod)) == _ordered(singles, lambda e, p=pod: e.pod == p), pod  # type: ignore[misc]
    on_n1 = _ordered(singles, lambda e: e.stream == "node/n1" and e.type == "NodeReclaimed" and e.t >= 5 * S)
    assert _ids(await store.read_stream_window(RUN, "node/n1", types=["NodeReclaimed"], t_from=5 * S)) == on_n1
    # not a node's stream: its own rows only (the pod's object is stored in n1's batch)
    window = await store.read_stream_window(RUN, "pod/ns/B", t_to=10 * S)
    assert _ids(window) == _ordered(singles, lambda e: e.stream == "pod/ns/B" and e.type == "PodTerminated")


def _decided(e: Envelope, filters: dict[str, Any]) -> bool:
    return (
        e.kind == DECISION
        and e.node == filters.get("node", e.node)
        and e.pod == filters.get("pod", e.pod)
        and e.type in filters.get("types", [e.type])
        and filters.get("t_from", 0) <= e.t <= filters.get("t_to", e.t)
    )


async def test_pages_of_decisions_by_keyset_cursor(filled: tuple[SqlEventStore, list[Envelope]]) -> None:
    """Pages of two, each after the last one's ``(t, order_key, position)``: every decision
    once, in decision order, the filters kept (the cursor compares text in the database)."""
    store, singles = filled
    pages: list[dict[str, Any]] = [{}, {"node": "n1"}, {"pod": "ns/a"}, {"types": ["PodTerminated"]}]
    for filters in [*pages, {"t_from": 5 * S, "t_to": 5 * S}]:
        wanted = _ordered(singles, lambda e, f=filters: _decided(e, f))  # type: ignore[misc]
        paged: list[str] = []
        after = None
        while page := await store.list_decisions(RUN, after=after, limit=2, **filters):
            assert len(page) <= 2
            paged += _ids(page)
            last = page[-1]
            after = (last.envelope.t, order_key(last.envelope.order), last.position)
        assert paged == wanted and wanted, filters


async def test_batches_are_read_as_their_members(filled: tuple[SqlEventStore, list[Envelope]]) -> None:
    store, singles = filled
    rows = [s async for s in store.iter_run(RUN, members=False, batch=2)]
    assert len(rows) == await store.count(RUN) == len(singles) - 2 * len(BOUND) + 2  # two batches, a row each
    assert [s.position for s in rows] == sorted(s.position for s in rows)
    every = [s async for s in store.iter_run(RUN, batch=2)]  # by position, a batch's members at its place
    assert sorted(_ids(every)) == sorted(e.id for e in singles)
    inputs = [s.envelope async for s in store.iter_run(RUN, batch=1, kinds=[INPUT])]
    assert sorted(e.id for e in inputs) == sorted(e.id for e in singles if e.kind == INPUT)
    as_rows = [r async for r in store.iter_run_rows(RUN, batch=3)]
    assert [r.id for r in as_rows] == _ids(rows) and [r.envelope() for r in as_rows] == [s.envelope for s in rows]
    assert [r async for r in store.iter_run_rows(RUN, kinds=[INTERNAL])] == []
    applied_ = _ordered(singles, lambda e: e.type == "ObjectApplied")
    assert _ids(await store.read_by_type(["ObjectApplied"], run=RUN)) == applied_
    usage = _ordered(singles, lambda e: e.type == "UsageDeclared")
    assert _ids(await store.read_by_type(["UsageDeclared"], run=RUN)) == usage
    for limit in range(1, len(applied_) + 1):
        assert _ids(await store.read_by_type(["ObjectApplied"], run=RUN, limit=limit)) == applied_[:limit], limit
    for limit in range(1, len(usage) + 1):  # (the pods' batch, read first, holds none)
        assert _ids(await store.read_by_type(["UsageDeclared"], run=RUN, limit=limit)) == usage[:limit], limit
    # by id: pods' inputs in a batch (through its index), in position order; not usage
    # entries in a batch (no decision cites one: the index leaves them out, batches.py)
    cited = await store.get_events([*reversed([e.id for e in singles]), "no-such-id", singles[0].id])
    assert sorted(_ids(cited)) == sorted(e.id for e in singles if e.type != "UsageDeclared")
    assert [s.position for s in cited] == sorted(s.position for s in cited)
    assert await store.get_events([]) == [] and await store.get_events(["no-such-id"]) == []
    # per node and type: decisions and internal events, observations in batches too
    counted: dict[str, Counter[str]] = {}
    for e in singles:
        if e.node is not None and e.kind in (DECISION, INTERNAL):
            counted.setdefault(e.node, Counter())[e.type] += 1
    assert await store.types_by_node(RUN) == {n: dict(c) for n, c in counted.items()}
    assert await store.types_by_node(RUN, kinds=[DECISION], batched=False) == {n: dict(c) for n, c in counted.items()}
    assert await store.types_by_node(RUN, kinds=[INPUT]) == {
        "n1": {"ObjectApplied": 1, BATCH: 1},
        "n2": {"ObjectApplied": 1},
    }


async def test_pods_named_matches_the_name_exactly_whatever_the_case_or_the_wildcards(
    filled: tuple[SqlEventStore, list[Envelope]],
) -> None:
    """A bare name, matched by LIKE in the database (which ignores case on SQLite, and
    where ``_`` and ``%`` are wildcards), then exactly; pods only a batch names too."""
    store, _ = filled
    assert await store.pods_named(RUN, "a") == ["A/a", "ns/a", "other-ns/a"]  # (sorted byte by byte)
    assert await store.pods_named(RUN, "b") == []  # (ns/B)
    assert await store.pods_named(RUN, "B") == ["ns/B"]
    assert await store.pods_named(RUN, "web_1") == ["ns/web_1"]  # not ns/web-1
    assert await store.pods_named(RUN, "web%") == []
    assert await store.pods_named(RUN, "lone") == [PENDING]
    assert await store.pods_named(RUN, "xa") == ["ns/xa"]


async def test_batches_of_appends_are_idempotent_by_event_id(collated_dsn: str) -> None:
    """An event stored already is skipped however it is redelivered: alone, with new ones,
    twice in one batch, or inside an input batch stored again (its members not listed
    twice). (``append``, one stream at an expected version, is the contract suite's:
    nothing outside the tests calls it.)"""
    a, b, c = (ev(i) for i in range(3))
    singles, fed = _history("run-b")
    async with await open_store(collated_dsn) as store:
        assert await store.append_batch([a, b]) == 2
        assert await store.append_batch([b, c, c, a]) == 1
        assert await store.append_batch([]) == 0
        assert await store.append_batch(fed) == len(fed)
        assert await store.append_batch(list(reversed(fed))) == 0
        assert await store.count("run-a") == 3 and await store.count("run-b") == len(fed)
        assert _ids(await store.read_run("run-a")) == [a.id, b.id, c.id]
        assert _ids(await store.read_run("run-b")) == _ordered(singles)
        assert _ids(await store.read_pod("run-b", "ns/a")) == _ordered(singles, lambda e: e.pod == "ns/a")
        indexed = [e.id for e in singles if e.type != "UsageDeclared"]
        assert sorted(_ids(await store.get_events(indexed))) == sorted(indexed)


async def test_a_run_the_store_does_not_hold_reads_as_nothing(filled: tuple[SqlEventStore, list[Envelope]]) -> None:
    store, _ = filled
    gone = "no-such-run"
    assert await store.read_run(gone) == [] and await store.read_run(gone, kind=DECISION) == []
    assert [s async for s in store.iter_run(gone)] == [] and [r async for r in store.iter_run_rows(gone)] == []
    assert await store.read_by_type(["NodeReclaimed", "ObjectApplied"], run=gone) == []
    assert await store.list_decisions(gone) == []
    assert await store.read_pod(gone, "ns/a") == [] and await store.pods_named(gone, "a") == []
    assert await store.read_node(gone, "n1") == [] and await store.read_node(gone, "n1", limit=1) == []
    assert await store.read_nodes(gone, ["n1"], types=["ObjectApplied"]) == []
    assert await store.read_nodes(RUN, [], types=["ObjectApplied"]) == []
    assert await store.read_stream_window(gone, "node/n1", types=["NodeObserved"]) == []
    assert await store.types_by_node(gone) == {} and await store.count(gone) == 0
    assert await store.known([]) == set()
    # and what a run holds nothing of
    assert await store.read_pod(RUN, "ns/nobody") == [] and await store.read_node(RUN, "n9") == []
    assert await store.read_by_type(["NodeObserved"], run=RUN) == []
    assert await store.list_decisions(RUN, types=["PodEvicted"]) == []
