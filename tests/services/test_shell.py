"""The service shell: streaming a long handler's output, and a batch's commit."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import ClassVar

import msgspec
import pytest

from ledgerlet_bus.api import Record
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts.envelope import Envelope, encode_envelope
from ledgerlet_core.contracts.internal import ClockTick, TimerSet
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_services.loops.base import Loop
from ledgerlet_services.runtime import publishing
from ledgerlet_services.runtime.outgoing import Outgoing
from ledgerlet_services.runtime.shell import ServiceRunner


class _Pass(Loop):
    """Emits one event per 'node', yielding after each, as the collector does (under its name and rank)."""

    name: ClassVar[str] = "stats-collector"
    topics: ClassVar[tuple[str, ...]] = ("ledgerlet.clock",)

    def handle(self, env: Envelope, out: Emitter) -> Iterator[None]:
        for n in range(3):
            out.emit(TimerSet(at=n, owner="pass", phase=0), node=f"n{n}")
            yield


def _tick(offset: int) -> Record:
    env = make_envelope(ClockTick(round=0, phase=1), run="r", t=10, order=[1, 0], stream="clock")
    return Record("ledgerlet.clock", 0, offset, b"clock", encode_envelope(env))


def test_a_yielding_handler_has_its_output_streamed_in_order() -> None:
    runner = ServiceRunner(MemoryBus(), _Pass)
    outgoing: list[Outgoing] = []
    chunks = list(runner._batch([_tick(0)], outgoing))
    assert [[o.envelope.node for o in c] for c in chunks] == [["n0"], ["n1"], ["n2"]]
    assert [o.envelope.node for o in outgoing] == ["n0", "n1", "n2"]
    # order keys follow emission, whatever was streamed
    assert [o.envelope.order for o in outgoing] == [[1, 0, 10, 0], [1, 0, 10, 1], [1, 0, 10, 2]]


async def test_streamed_output_is_published_once_and_acknowledged_before_the_commit() -> None:
    bus = MemoryBus(retain=True)
    runner = ServiceRunner(bus, _Pass)
    producer = bus.producer()
    p = bus.producer()
    env = make_envelope(ClockTick(round=0, phase=1), run="r", t=10, order=[1, 0], stream="clock")
    await p.send("ledgerlet.clock", encode_envelope(env), key=b"clock")
    await p.flush()
    consumer = bus.consumer("pass", ["ledgerlet.clock"], whole=True)
    records = await consumer.getmany(timeout=0.1)
    outgoing: list[Outgoing] = []
    streamed: set[int] = set()
    for chunk in runner._batch(records, outgoing):
        await publishing.stream(producer, chunk, streamed)
    assert len(streamed) == 3
    assert await publishing.publish(producer, outgoing, streamed, who=runner.name, stop=asyncio.Event())
    sent = bus._topics["ledgerlet.timers"]
    assert sum(len(part.records) for part in sent) == 3  # streamed ones are not sent again


class _Counting(Loop):
    """Counts the inputs it handles (each member of a batch once)."""

    name: ClassVar[str] = "shutdown-manager"
    topics: ClassVar[tuple[str, ...]] = ("ledgerlet.inputs",)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.handled: list[str] = []

    def wants(self, env: Envelope) -> bool:
        return True

    def handle(self, env: Envelope, out: Emitter) -> None:
        self.handled.append(env.id)


async def test_a_restarted_service_skips_a_batch_it_folded_when_it_comes_again() -> None:
    """A batch can be on the bus twice (a producer's retry, a driver that takes over):
    a service that folded the first copy while rebuilding must skip the second, as it
    skips any event it has handled."""
    from ledgerlet_core.contracts import inputs as inp
    from ledgerlet_core.contracts.batch import BATCH, iter_batched

    singles = [
        make_envelope(
            inp.UsageDeclared(key=f"ns/p{i}", usage={"memory": "1Mi"}), run="r", t=0, order=[0, i], stream="u"
        )
        for i in range(3)
    ]
    (batch,) = list(iter_batched(singles, lambda e: "n1"))
    assert batch.type == BATCH
    bus = MemoryBus(retain=True)
    p = bus.producer()
    for _ in range(2):  # the batch, and a copy of it
        await p.send("ledgerlet.inputs", encode_envelope(batch), key=b"n1")
    await p.flush()
    first = bus.consumer("shutdown-manager", ["ledgerlet.inputs"], whole=True)
    await first.commit({("ledgerlet.inputs", 0): 1})  # the first copy was handled and committed
    await first.close()
    runner = ServiceRunner(bus, _Counting, group="shutdown-manager")
    assert await runner.rebuild() == 3
    consumer = bus.consumer("shutdown-manager", ["ledgerlet.inputs"], whole=True)
    again = await consumer.getmany(timeout=0.1)
    assert len(again) == 1
    runner.handle_records(again)
    service = runner.instances["r"]
    assert isinstance(service, _Counting) and service.handled == [s.id for s in singles]  # once each


def _batch_record(offset: int) -> Record:
    """A batch of two pods' inputs on the inputs topic."""
    from ledgerlet_core.contracts import inputs as inp
    from ledgerlet_core.contracts.batch import iter_batched

    pods = [
        make_envelope(
            inp.ObjectApplied(object={"kind": "Pod", "metadata": {"name": f"p{i}"}}, initial=True),
            run="r",
            t=0,
            order=[0, i],
            stream=f"pod/default/p{i}",
            node="n1",
            pod=f"default/p{i}",
        )
        for i in (1, 2)
    ]
    (batch,) = list(iter_batched(pods, lambda env: "n1"))
    return Record("ledgerlet.inputs", 0, offset, b"n1", encode_envelope(batch))


def test_shared_envelopes_are_decoded_once_and_let_go_when_every_reader_has_them() -> None:
    from ledgerlet_services.runtime.shell import SharedEnvelopes

    shared = SharedEnvelopes({"ledgerlet.clock": 2, "ledgerlet.inputs": 2}, recorders=1)
    tick = _tick(0)
    first = shared.decode(tick.value, tick.topic)
    assert shared.decode(tick.value, tick.topic) is first  # the second loop's
    assert len(shared) == 1
    assert shared.decode(tick.value, tick.topic) is first  # the recorder's: the last reader
    assert len(shared) == 0  # (a fleet's starting state is not kept once read)
    rec = _batch_record(0)
    batch = shared.decode(rec.value, rec.topic)
    members, memo = shared.expand(batch, rec.topic)
    assert [m.pod for m in members] == ["default/p1", "default/p2"]
    memo["x"] = 1
    assert shared.decode(rec.value, rec.topic) is batch  # the second loop
    again, memo_again = shared.expand(batch, rec.topic)  # ... is given the same members and memo
    assert again is members and memo_again is memo
    assert len(shared) == 1  # the recorder has not read it yet
    shared.decode(rec.value, rec.topic)  # (it stores the batch as it is)
    assert len(shared) == 0


def test_loops_share_what_they_decode_of_a_batch_s_members() -> None:
    """Every loop folds a batch's pods: each member's object is read once for all of them."""
    from ledgerlet_services.loops.kubelet import KubeletLoop
    from ledgerlet_services.loops.scheduler import Scheduler
    from ledgerlet_services.runtime.shell import SharedEnvelopes

    shared = SharedEnvelopes({"ledgerlet.inputs": 2}, recorders=0)
    bus = MemoryBus()
    runners = [ServiceRunner(bus, kind, envelopes=shared) for kind in (KubeletLoop, Scheduler)]
    rec = _batch_record(0)
    seen: list[object] = []
    for runner in runners:
        runner.instances["r"] = svc = runner.kind()
        arrive = svc.cluster.arrive
        svc.cluster.arrive = lambda env, data, arrive=arrive: (seen.append(data), arrive(env, data))[1]  # type: ignore[method-assign]
        runner.handle_records([rec])
    assert len(seen) == 4
    assert seen[0] is seen[2] and seen[1] is seen[3]  # the second loop was given the first's
    assert seen[0] is not seen[1]


def _observation(node: str, offset: int, value: bytes | None = None) -> Record:
    from ledgerlet_core.contracts.internal import NodeObserved
    from ledgerlet_core.model.summary import NodeStats, Summary

    data = NodeObserved(node=node, summary=Summary(node=NodeStats(node_name=node)), source="usage")
    env = make_envelope(data, run="r", t=10, order=[1, 0, 10, offset], stream=f"node/{node}", node=node)
    return Record("ledgerlet.observations", 0, offset, node.encode(), value or encode_envelope(env))


def test_a_split_eviction_manager_drops_other_members_observations_undecoded() -> None:
    """Read live from the broker (no decoding shared with other runners), another member's
    node's observation is let go by its record's key, never decoded; its own are handled."""
    from ledgerlet_core.loop.membership import Membership
    from ledgerlet_services.loops.kubelet import KubeletLoop

    member = Membership(0, 2)
    nodes = [f"node-{i}" for i in range(20)]
    mine = [n for n in nodes if member.owns(n)]
    theirs = [n for n in nodes if not member.owns(n)]
    assert mine and theirs
    runner = ServiceRunner(MemoryBus(), KubeletLoop, member=member)
    garbage = b"{not an envelope"
    runner.handle_records([_observation(n, i, garbage) for i, n in enumerate(theirs)])
    assert runner.stats.foreign == len(theirs) and not runner.buffer.held
    runner.handle_records([_observation(n, 100 + i) for i, n in enumerate(mine)])
    # (decoded, and held until their step's root has been handled)
    assert runner.stats.foreign == len(theirs) and sorted(h.env.node or "" for h in runner.buffer.held) == sorted(mine)
    whole = ServiceRunner(MemoryBus(), KubeletLoop)  # not split: every observation is its own
    with pytest.raises(msgspec.DecodeError):
        whole.handle_records([_observation(theirs[0], 0, garbage)])
    assert whole.stats.foreign == 0
