"""One contract for every bus: Kafka's semantics (partitions, keys, groups, offsets)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from ledgerlet_bus.api import Bus, BusTimeout, Record, TopicSpec
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_bus.partitioner import murmur2, partition_for
from ledgerlet_bus.retry import Stopped, with_backoff
from tests.support.buses import either_bus


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.distributed)])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    async with either_bus(request, [TopicSpec("t", 4), TopicSpec("u", 1)]) as b:
        yield b


async def drain(consumer: object, want: int, timeout: float = 5.0) -> list[Record]:
    got: list[Record] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(got) < want and loop.time() < deadline:
        got.extend(await consumer.getmany(timeout=0.2))  # type: ignore[attr-defined]
    return got


def test_murmur2_matches_kafkas_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for key, expected in cases.items():
        assert murmur2(key) == expected
    assert 0 <= partition_for(b"node-1", 4) < 4


async def test_keys_keep_their_order_and_partition(bus: Bus) -> None:
    p = bus.producer()
    for i in range(40):
        await p.send("t", f"{i % 4}:{i}".encode(), key=f"k{i % 4}".encode())
    await p.flush()
    c = bus.consumer("g", ["t"], whole=True)
    got = await drain(c, 40)
    assert len(got) == 40
    by_key: dict[bytes | None, list[int]] = {}
    parts: dict[bytes | None, set[int]] = {}
    for r in got:
        by_key.setdefault(r.key, []).append(int(r.value.split(b":")[1]))
        parts.setdefault(r.key, set()).add(r.partition)
    assert all(v == sorted(v) for v in by_key.values())
    assert all(len(s) == 1 for s in parts.values())


async def test_groups_each_get_everything_and_members_split_partitions(bus: Bus) -> None:
    p = bus.producer()
    for i in range(20):
        await p.send("t", str(i).encode(), key=str(i).encode())
    await p.flush()
    a1 = bus.consumer("a", ["t"])
    a2 = bus.consumer("a", ["t"])
    b = bus.consumer("b", ["t"], whole=True)
    got_a: list[Record] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while len({r.value for r in got_a}) < 20 and loop.time() < deadline:
        for member in (a1, a2):
            recs = await member.getmany(timeout=0.1)
            got_a.extend(recs)
            if recs:  # members commit what they handle; a rebalance resumes from there
                await member.commit({(r.topic, r.partition): r.offset + 1 for r in recs})
    got_b = await drain(b, 20)
    assert sorted(int(r.value) for r in got_b) == list(range(20))
    assert {int(r.value) for r in got_a} == set(range(20))
    await bus.wait_idle({"a": ["t"]}, timeout=5)


async def test_committed_offsets_are_where_a_new_member_resumes(bus: Bus) -> None:
    p = bus.producer()
    for i in range(10):
        await p.send("u", str(i).encode(), key=b"k")
    await p.flush()
    c1 = bus.consumer("g", ["u"], whole=True)
    got = await drain(c1, 10)
    await c1.commit({("u", 0): got[5].offset + 1})  # handled 0..5
    await c1.close()
    c2 = bus.consumer("g", ["u"], whole=True)
    again = await drain(c2, 4)
    assert [int(r.value) for r in again] == [6, 7, 8, 9]  # at-least-once: uncommitted ones come back


async def test_a_whole_member_reads_every_partition_and_history_is_what_its_group_committed(bus: Bus) -> None:
    p = bus.producer()
    for i in range(12):
        await p.send("t", str(i).encode(), key=str(i).encode())
    await p.flush()
    c1 = bus.consumer("w", ["t"], whole=True)
    got = await drain(c1, 12)
    assert sorted(int(r.value) for r in got) == list(range(12))
    assert len({r.partition for r in got}) > 1
    handled = [r for r in got if r.partition == got[0].partition][:2]
    await c1.commit({(r.topic, r.partition): r.offset + 1 for r in handled})
    # c1 dies without leaving; its successor starts at once where the group committed
    c2 = bus.consumer("w", ["t"], whole=True)
    rest = await drain(c2, 10)
    assert sorted(int(r.value) for r in rest) == sorted(set(range(12)) - {int(r.value) for r in handled})
    history = await bus.history("w", ["t"])
    assert [r.value for r in history] == [r.value for r in handled]
    assert await bus.history("nobody", ["t"]) == []


async def test_lag_and_idle(bus: Bus) -> None:
    p = bus.producer()
    await p.send("u", b"x", key=b"k")
    await p.flush()
    groups = {"g": ["u"]}
    assert await bus.lag(groups) == 1
    with pytest.raises(BusTimeout):
        await bus.wait_idle(groups, timeout=0.2)
    c = bus.consumer("g", ["u"], whole=True)
    [r] = await drain(c, 1)
    assert await bus.lag(groups) == 1  # fetched is not done: only a commit is
    await c.commit({("u", 0): r.offset + 1})
    await bus.wait_idle(groups, timeout=1)
    assert await bus.lag(groups) == 0


async def test_lag_counts_every_record_of_a_batch(bus: Bus) -> None:
    """Records sent together travel as one batch; the end of the log is past all of them
    (Tansu's ListOffsets says otherwise: the bus reads the end from a fetch)."""
    p = bus.producer()
    for i in range(500):
        await p.send("u", str(i).encode(), key=b"k")
    await p.flush()
    assert await bus.lag({"g": ["u"]}) == 500
    for i in range(7):
        await p.send("u", str(i).encode(), key=b"k")
    await p.flush()
    assert await bus.lag({"g": ["u"]}) == 507
    c = bus.consumer("g", ["u"], whole=True)
    got = await drain(c, 507)
    await c.commit({("u", 0): got[-1].offset + 1})
    assert await bus.lag({"g": ["u"]}) == 0


async def test_idle_waits_for_a_chain_of_work(bus: Bus) -> None:
    """A handler that produces before it commits keeps the bus busy until the chain ends."""
    c = bus.consumer("relay", ["u"], whole=True)
    p = bus.producer()

    async def relay() -> None:
        for _ in range(3):
            recs = await drain(c, 1)
            for r in recs:
                n = int(r.value)
                if n < 3:
                    await p.send("u", str(n + 1).encode(), key=b"k")
                await p.flush()
                await c.commit({("u", 0): r.offset + 1})

    task = asyncio.create_task(relay())
    await p.send("u", b"1", key=b"k")
    await p.flush()
    await bus.wait_idle({"relay": ["u"]}, timeout=5)
    assert await bus.lag({"relay": ["u"]}) == 0
    await task


async def test_memory_bus_drops_what_every_reader_committed() -> None:
    bus = MemoryBus()
    await bus.create_topics([TopicSpec("t", 1)])
    a, b = bus.consumer("a", ["t"]), bus.consumer("b", ["t"])
    p = bus.producer()
    for i in range(10):
        await p.send("t", str(i).encode(), key=b"k")
    await p.flush()
    got = await drain(a, 10)
    await a.commit({("t", 0): 10})
    assert len(bus._topics["t"][0].records) == 10  # b has not read them yet
    got_b = await drain(b, 6)
    await b.commit({("t", 0): got_b[5].offset + 1})
    part = bus._topics["t"][0]
    assert part.base == 6 and len(part.records) == 4 and len(part) == 10  # offsets stay as they were
    await b.close()
    resumed = bus.consumer("b", ["t"])  # a new member resumes at the committed offset, past the trim
    assert [int(r.value) for r in await drain(resumed, 4)] == [6, 7, 8, 9]
    assert await bus.lag({"a": ["t"], "b": ["t"]}) == 4
    assert [r.offset for r in got] == list(range(10))


async def test_memory_bus_fetches_at_most_its_bytes_and_always_one_record() -> None:
    bus = MemoryBus(fetch_max_bytes=250)
    await bus.create_topics([TopicSpec("t", 2)])
    consumer = bus.consumer("a", ["t"], whole=True)
    p = bus.producer()
    for i in range(6):
        await p.send("t", bytes([48 + i]) * 100, key=f"k{i % 2}".encode())  # 100 bytes each
    await p.send("t", b"x" * 1000, key=b"k0")  # larger than a fetch
    await p.flush()
    fetches = []
    while got := await consumer.getmany(timeout=0):
        fetches.append([len(r.value) for r in got])
    assert [1000] in fetches  # it comes alone
    assert all(sum(sizes) <= 250 for sizes in fetches if sizes != [1000])
    assert sorted(n for sizes in fetches for n in sizes) == [100] * 6 + [1000]  # nothing lost or twice


async def test_backoff_stops_between_attempts_never_during_one() -> None:
    """A stop waits for the attempt under way (a write cut off half way can wedge its
    connection) and ends the waiting between attempts at once."""
    stop = asyncio.Event()
    calls: list[str] = []

    async def attempt() -> int:
        calls.append("start")
        stop.set()  # asked to stop while this attempt runs
        await asyncio.sleep(0.05)
        calls.append("end")
        raise ConnectionError("away")

    with pytest.raises(Stopped):
        await with_backoff("test", attempt, retry_on=(ConnectionError,), first=30.0, stop=stop)
    assert calls == ["start", "end"]  # finished, then no second attempt and no 30 s wait


async def test_an_idle_wait_gives_up_on_no_progress_not_on_elapsed_time(bus: Bus) -> None:
    """A consumer that keeps committing is waited out however long it takes in all."""
    p = bus.producer()
    for i in range(6):
        await p.send("slow", str(i).encode(), key=b"k")
    await p.flush()
    c = bus.consumer("slow-group", ["slow"], whole=True)

    async def slowly() -> None:
        for r in await drain(c, 6):
            await asyncio.sleep(0.15)  # each record handled in 0.15 s: 0.9 s in all
            await c.commit({("slow", r.partition): r.offset + 1})

    worker = asyncio.create_task(slowly())
    await bus.wait_idle({"slow-group": ["slow"]}, timeout=0.5)  # never 0.5 s without a commit
    await worker
    assert await bus.lag({"slow-group": ["slow"]}) == 0


async def test_history_from_a_start_is_what_the_group_committed_after_it(bus: Bus) -> None:
    """A service restored from a snapshot folds only the records after the snapshot's
    offsets, up to what its group has committed."""
    p = bus.producer()
    for i in range(10):
        await p.send("h", str(i).encode(), key=b"same")  # one key: one partition, in order
    await p.flush()
    c = bus.consumer("s", ["h"], whole=True)
    got = await drain(c, 10)
    part = got[0].partition
    await c.commit({("h", part): 8})
    await c.close()
    tail = await bus.history("s", ["h"], start={("h", part): 5})
    assert [int(r.value) for r in tail] == [5, 6, 7]
    assert [r.offset for r in tail] == [5, 6, 7]
    assert await bus.history("s", ["h"], start={("h", part): 8}) == []
    assert [int(r.value) for r in await bus.history("s", ["h"], start={})] == list(range(8))


async def test_a_member_starts_where_its_group_has_committed_when_it_first_fetches(bus: Bus) -> None:
    """Not when it was made: what another member commits in between moves its start (a
    service taking over must not rely on it: see the next test)."""
    p = bus.producer()
    for i in range(10):
        await p.send("u", str(i).encode(), key=b"k")
    await p.flush()
    old = bus.consumer("g", ["u"], whole=True)
    await drain(old, 10)
    await old.commit({("u", 0): 3})
    new = bus.consumer("g", ["u"], whole=True)
    await old.commit({("u", 0): 7})  # the old member goes on after the new one was made
    assert [int(r.value) for r in await drain(new, 3)] == [7, 8, 9]


async def test_a_seek_reads_from_where_it_says_whatever_the_group_commits(bus: Bus) -> None:
    """A partition named reads from its offset, every other one from its beginning."""
    p = bus.producer()
    for i in range(10):
        await p.send("u", str(i).encode(), key=b"k")
    for i in range(8):
        await p.send("t", f"t{i}".encode(), key=str(i).encode())
    await p.flush()
    old = bus.consumer("g", ["u", "t"], whole=True)
    got = await drain(old, 18)
    everything = {(r.topic, r.partition): r.offset + 1 for r in got}
    await old.commit({("u", 0): 5})
    new = bus.consumer("g", ["u", "t"], whole=True)
    await new.seek({("u", 0): 3})
    await old.commit(everything)  # the old member commits all of it before the new one fetches
    again = await drain(new, 15)
    assert sorted(r.value.decode() for r in again if r.topic == "u") == [str(i) for i in range(3, 10)]
    assert sorted(r.value.decode() for r in again if r.topic == "t") == [f"t{i}" for i in range(8)]
    assert len(again) == 15
