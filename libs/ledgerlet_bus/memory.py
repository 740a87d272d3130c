"""An in-memory bus with Kafka's semantics, for the embedded run and for tests.

Partitions are append-only lists; groups have committed offsets and split partitions
between their members (range assignment, rebalanced when members come and go); a
consumer's position in a partition starts at what its group has committed when it first
fetches from it (as a Kafka consumer's does), unless it was told to seek. Nothing is
shared between processes: one process, one bus.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from random import Random

from ledgerlet_bus.api import BusTimeout, Record, TopicPartition, TopicSpec
from ledgerlet_bus.partitioner import partition_for

DEFAULT_PARTITIONS = 1


@dataclass
class _Group:
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    members: list[MemoryConsumer] = field(default_factory=list)


class _Partition:
    """Records from offset ``base`` on; what every reading group has committed is dropped."""

    __slots__ = ("base", "records")

    def __init__(self) -> None:
        self.base = 0
        self.records: list[Record] = []

    def __len__(self) -> int:  # the end offset
        return self.base + len(self.records)

    def read(self, start: int, count: int) -> list[Record]:
        i = max(start - self.base, 0)
        return self.records[i : i + count]

    def append(self, rec: Record) -> None:
        self.records.append(rec)

    def trim(self, below: int) -> None:
        drop = below - self.base
        if drop > 0:
            del self.records[:drop]
            self.base = below


class MemoryBus:
    def __init__(
        self,
        *,
        default_partitions: int = DEFAULT_PARTITIONS,
        retain: bool = False,
        shuffle: Random | None = None,
        fetch_max_bytes: int | None = None,
    ) -> None:
        """``fetch_max_bytes``: what one ``getmany`` returns at most, as Kafka's
        ``fetch.max.bytes`` bounds a fetch (at least one record): consumers that read the
        same records then stay near each other, however large the records."""
        self._default_partitions = default_partitions
        self.fetch_max_bytes = fetch_max_bytes
        #: a test mode: consumers read partitions in a random order and random amounts
        #: (each partition still in order), as fetches from a real broker may
        self._shuffle = shuffle
        self._retain = retain  # keep everything (tests that read back); else drop what all groups committed
        self._topics: dict[str, list[_Partition]] = {}
        self._groups: dict[str, _Group] = {}
        self._changed = asyncio.Condition()
        #: commits and appends so far: what "progress" means to wait_idle
        self._moves = 0
        self._version = 0

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for group in self._groups.values():
            for member in list(group.members):
                await member.close()

    async def create_topics(self, topics: Sequence[TopicSpec]) -> None:
        for spec in topics:
            if spec.name not in self._topics:
                self._topics[spec.name] = [_Partition() for _ in range(max(spec.partitions, 1))]
        self._rebalance_all()

    def _partitions(self, topic: str) -> list[_Partition]:
        if topic not in self._topics:
            self._topics[topic] = [_Partition() for _ in range(self._default_partitions)]
            self._rebalance_all()
        return self._topics[topic]

    # -- producing -------------------------------------------------------------
    def producer(self) -> MemoryProducer:
        return MemoryProducer(self)

    def append(self, topic: str, value: bytes, key: bytes | None, headers: Sequence[tuple[str, bytes]]) -> Record:
        parts = self._partitions(topic)
        p = partition_for(key, len(parts)) if key is not None else 0
        rec = Record(topic, p, len(parts[p]), key, value, tuple(headers))
        parts[p].append(rec)
        self._moves += 1
        return rec

    async def notify(self) -> None:
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    # -- consuming -------------------------------------------------------------
    def consumer(self, group: str, topics: Sequence[str], *, whole: bool = False) -> MemoryConsumer:
        for t in topics:
            self._partitions(t)
        g = self._groups.setdefault(group, _Group())
        member = MemoryConsumer(self, group, tuple(topics), whole=whole)
        g.members.append(member)
        self._rebalance(group)
        return member

    def _rebalance_all(self) -> None:
        for name in self._groups:
            self._rebalance(name)

    def _rebalance(self, group: str) -> None:
        """Range assignment per topic, like Kafka's default assignor."""
        g = self._groups[group]
        for m in g.members:
            m.assignment = [(t, p) for t in m.topics for p in range(len(self._topics[t]))] if m.whole else []
        sharing = [m for m in g.members if not m.whole]
        topics = sorted({t for m in sharing for t in m.topics})
        for topic in topics:
            members = [m for m in sharing if topic in m.topics]
            n = len(self._topics[topic])
            per, extra = divmod(n, len(members))
            start = 0
            for i, m in enumerate(members):
                count = per + (1 if i < extra else 0)
                m.assignment.extend((topic, p) for p in range(start, start + count))
                start += count
        for m in g.members:  # (a position not kept is the group's committed one at the next fetch)
            if m.whole:  # whole members are not rebalanced: they keep their positions
                m.positions = {tp: m.positions[tp] for tp in m.assignment if tp in m.positions}
            else:
                m.positions = {}

    def leave(self, member: MemoryConsumer) -> None:
        g = self._groups.get(member.group)
        if g is not None and member in g.members:
            g.members.remove(member)
            self._rebalance(member.group)

    def trim(self, tp: TopicPartition) -> None:
        """Drop records every group reading this topic has committed."""
        if self._retain:
            return
        readers = [g for g in self._groups.values() if any(tp[0] in m.topics for m in g.members)]
        if readers:
            self._topics[tp[0]][tp[1]].trim(min(g.committed.get(tp, 0) for g in readers))

    def committed(self, group: str) -> dict[TopicPartition, int]:
        return dict(self._groups.setdefault(group, _Group()).committed)

    def end_offsets(self, topics: Sequence[str]) -> dict[TopicPartition, int]:
        return {(t, p): len(part) for t in topics for p, part in enumerate(self._partitions(t))}

    async def lag(self, groups: Mapping[str, Sequence[str]]) -> int:
        total = 0
        for group, topics in groups.items():
            committed = self._groups.setdefault(group, _Group()).committed
            for tp, end in self.end_offsets(topics).items():
                total += end - committed.get(tp, 0)
        return total

    async def history(
        self, group: str, topics: Sequence[str], *, start: Mapping[TopicPartition, int] | None = None
    ) -> list[Record]:
        committed = self._groups.setdefault(group, _Group()).committed
        out: list[Record] = []
        for t in topics:
            for p, part in enumerate(self._partitions(t)):
                upto = committed.get((t, p), 0)
                first = (start or {}).get((t, p), 0)
                if first < upto and part.base > first:
                    raise RuntimeError(f"{t}[{p}]: records below {part.base} were dropped; use MemoryBus(retain=True)")
                if first < upto:
                    out.extend(part.read(first, upto - first))
        return out

    async def wait_idle(self, groups: Mapping[str, Sequence[str]], *, timeout: float = 60.0) -> None:
        """(``timeout``: seconds without a commit or a new record, see :meth:`Bus.wait_idle`)"""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        seen = self._moves
        while True:
            async with self._changed:
                lag = await self.lag(groups)
                if lag == 0:
                    return
                if self._moves != seen:  # progress: the wait starts over
                    seen, deadline = self._moves, loop.time() + timeout
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise BusTimeout(f"bus not idle: nothing moved for {timeout:g}s, lag {lag}")
                try:
                    async with asyncio.timeout(remaining):  # (not wait_for: see getmany)
                        await self._changed.wait()
                except TimeoutError:
                    continue


class MemoryProducer:
    def __init__(self, bus: MemoryBus) -> None:
        self._bus = bus
        self._pending = 0

    async def send(
        self, topic: str, value: bytes, *, key: bytes | None = None, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        self._bus.append(topic, value, key, headers)
        self._pending += 1

    async def flush(self) -> None:
        if self._pending:
            self._pending = 0
            await self._bus.notify()

    async def close(self) -> None:
        await self.flush()


class MemoryConsumer:
    def __init__(self, bus: MemoryBus, group: str, topics: tuple[str, ...], *, whole: bool = False) -> None:
        self._bus = bus
        self.group = group
        self.topics = topics
        self.whole = whole
        self.assignment: list[TopicPartition] = []
        self.positions: dict[TopicPartition, int] = {}
        self._closed = False

    def _available(self, max_records: int) -> list[Record]:
        self._start_where_committed()
        out: list[Record] = []
        budget = self._bus.fetch_max_bytes
        shuffle = self._bus._shuffle
        assignment = self.assignment
        if shuffle is not None:
            assignment = shuffle.sample(assignment, len(assignment))
        for tp in assignment:
            part = self._bus._topics[tp[0]][tp[1]]
            pos = max(self.positions.get(tp, 0), part.base)
            if pos < len(part):
                room = max(max_records - len(out), 0)
                if shuffle is not None and room:
                    if out and shuffle.random() < 0.5:
                        continue  # this partition's records come in a later fetch
                    room = shuffle.randint(1, room)
                take = part.read(pos, room)
                if budget is not None:
                    take = _within(take, budget, alone=not out)
                    budget -= sum(len(r.value) for r in take)
                out.extend(take)
                self.positions[tp] = pos + len(take)
            if len(out) >= max_records or (budget is not None and budget <= 0):
                break
        return out

    async def getmany(self, *, timeout: float = 0.1, max_records: int = 1000) -> list[Record]:
        if self._closed:
            return []
        await self._lag_behind()
        records = self._available(max_records)
        if records or timeout <= 0:
            return records
        cond = self._bus._changed
        async with cond:
            records = self._available(max_records)
            if records:
                return records
            try:
                # asyncio.timeout, not wait_for: wait_for runs the wait in a task of its own,
                # and cancelling this one then leaves that task re-acquiring the lock for ever
                # (the process cannot exit)
                async with asyncio.timeout(timeout):
                    await cond.wait()
            except TimeoutError:
                return []
        await self._lag_behind()
        return self._available(max_records)

    async def _lag_behind(self) -> None:
        """In shuffle mode, now and then let other consumers run first (a slow fetch)."""
        shuffle = self._bus._shuffle
        if shuffle is not None and shuffle.random() < 0.4:
            for _ in range(shuffle.randint(1, 20)):
                await asyncio.sleep(0)

    def _start_where_committed(self) -> None:
        """Partitions without a position start where the group has committed by now."""
        if len(self.positions) < len(self.assignment):
            committed = self._bus._groups[self.group].committed
            for tp in self.assignment:
                if tp not in self.positions:
                    self.positions[tp] = committed.get(tp, 0)

    async def seek(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.positions = {tp: offsets.get(tp, 0) for tp in self.assignment}

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        g = self._bus._groups[self.group]
        for tp, off in offsets.items():
            if off > g.committed.get(tp, 0):
                g.committed[tp] = off
                self._bus.trim(tp)
                self._bus._moves += 1
        await self._bus.notify()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bus.leave(self)


def _within(records: list[Record], budget: int, *, alone: bool) -> list[Record]:
    """The first of ``records`` whose values fit in ``budget`` bytes; ``alone``: the fetch
    has nothing yet, so its first record comes whatever its size (as Kafka's does)."""
    used = 0
    for i, rec in enumerate(records):
        used += len(rec.value)
        if used > budget and (i or not alone):
            return records[:i]
    return records
