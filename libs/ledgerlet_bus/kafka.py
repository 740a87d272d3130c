"""The bus on Apache Kafka (or any Kafka-protocol broker), through aiokafka.

Delivery is at-least-once without transactions or the idempotent producer: the shell
flushes what a batch produced, then commits the batch's offsets. ``lag`` and
``wait_idle`` read the brokers directly (ListOffsets, Fetch, OffsetFetch) so the
virtual clock can tell when nothing is in flight.

End offsets are taken from a Fetch response's high watermark, not from ListOffsets
alone: some Kafka-protocol brokers (Tansu 0.6) answer ListOffsets with the base offset
of the last record batch plus one, which is short of the end whenever that batch holds
several records. A Fetch at that offset returns the true high watermark on every broker.

A ``namespace`` prefixes every topic and group name, so several stacks (or test runs)
can share one cluster without seeing each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import urllib.parse
import weakref
from collections import defaultdict
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # type: ignore[import-untyped]
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]
from aiokafka.client import AIOKafkaClient, CoordinationType  # type: ignore[import-untyped]
from aiokafka.errors import (  # type: ignore[import-untyped]
    CommitFailedError,
    IllegalStateError,
    KafkaError,
    NodeNotReadyError,
    NotCoordinatorForGroupError,
)
from aiokafka.protocol.commit import OffsetFetchRequest  # type: ignore[import-untyped]
from aiokafka.protocol.fetch import FetchRequest  # type: ignore[import-untyped]
from aiokafka.protocol.offset import OffsetRequest  # type: ignore[import-untyped]

from ledgerlet_bus.api import BusTimeout, BusUnavailable, CommitRejected, Record, TopicSpec
from ledgerlet_bus.api import TopicPartition as TP
from ledgerlet_bus.retry import with_backoff

log = logging.getLogger(__name__)

#: how long a consumer's fetch may wait on the broker for data (also the idle latency)
DEFAULT_FETCH_WAIT_MS = 20
_LATEST = -1
_OFFSET_OUT_OF_RANGE = 1
_AWAY = (KafkaError, OSError, asyncio.TimeoutError)
#: how long :meth:`KafkaBus.lag` asks again while the broker is away before it gives up (s)
LAG_PATIENCE = 120.0
#: seconds a producer or consumer is given to stop: with the broker away, aiokafka's group
#: coordinator looks for the coordinator (to leave the group) for ever, and a service
#: stopping on SIGTERM outlived compose's 10 s grace. Leaving without a goodbye is safe:
#: the group's session expires, and nothing uncommitted was acknowledged.
CLOSE_PATIENCE = 2.0
_TOPIC_EXISTS = 36


_URL_OPTIONS = {"namespace": str, "fetch_wait_ms": int, "linger_ms": int, "compression": str}


def parse_bus_url(url: str) -> tuple[str, dict[str, Any]]:
    """``kafka://host:port[,host:port][?namespace=NAME&fetch_wait_ms=N&linger_ms=N&compression=lz4|none]``
    → (bootstrap servers, KafkaBus options)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "kafka" or not parsed.netloc:
        raise ValueError(f"bus URL {url!r}: expected kafka://HOST:PORT[,HOST:PORT][?namespace=NAME]")
    options: dict[str, Any] = {}
    for key, values in urllib.parse.parse_qs(parsed.query).items():
        kind = _URL_OPTIONS.get(key)
        if kind is None:
            raise ValueError(f"bus URL {url!r}: unknown option {key!r} (known: {', '.join(_URL_OPTIONS)})")
        try:
            options[key] = kind(values[-1])
        except ValueError:
            raise ValueError(f"bus URL {url!r}: {key}={values[-1]!r} is not a {kind.__name__}") from None
    return parsed.netloc, options


class KafkaBus:
    def __init__(
        self,
        bootstrap: str,
        *,
        namespace: str = "",
        client_id: str = "ledgerlet",
        fetch_wait_ms: int = DEFAULT_FETCH_WAIT_MS,
        linger_ms: int = 1,
        group_instance: str | None = None,
        session_timeout_ms: int = 10_000,
        compression: str | None = "zstd",
    ) -> None:
        self.bootstrap = bootstrap
        self.namespace = namespace
        self.client_id = client_id
        self.fetch_wait_ms = fetch_wait_ms
        self.lag_patience = LAG_PATIENCE
        self.linger_ms = linger_ms
        #: static group membership: a restarted member takes its old place at once
        self.group_instance = group_instance
        self.session_timeout_ms = session_timeout_ms
        #: observations are large JSON documents: zstd shrinks them several times for little CPU
        self.compression = None if compression in (None, "", "none") else compression
        self._client: AIOKafkaClient | None = None
        self._coordinators: dict[str, int] = {}
        #: the end of each partition as last seen (where the next end probe fetches from)
        self._ends: dict[TP, int] = {}
        self._open: weakref.WeakSet[KafkaProducer | KafkaConsumer] = weakref.WeakSet()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> KafkaBus:
        bootstrap, options = parse_bus_url(url)
        return cls(bootstrap, **{**options, **kwargs})

    # -- names ---------------------------------------------------------------------
    def physical(self, name: str) -> str:
        return f"{self.namespace}.{name}" if self.namespace else name

    def logical(self, name: str) -> str:
        prefix = f"{self.namespace}." if self.namespace else ""
        return name[len(prefix) :] if prefix and name.startswith(prefix) else name

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        async def connect() -> AIOKafkaClient:
            client = AIOKafkaClient(bootstrap_servers=self.bootstrap, client_id=f"{self.client_id}-admin")
            try:
                await client.bootstrap()
            except BaseException:
                await client.close()
                raise
            return client

        self._client = await with_backoff(f"connecting to {self.bootstrap}", connect, retry_on=_AWAY)

    async def close(self) -> None:
        """Close the bus and whatever producers and consumers it made that are still open."""
        for member in list(self._open):
            with contextlib.suppress(Exception):
                await member.close()
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def client(self) -> AIOKafkaClient:
        if self._client is None:
            raise RuntimeError("KafkaBus.start() has not been awaited")
        return self._client

    async def create_topics(self, topics: Sequence[TopicSpec]) -> None:
        """Create what is missing (existing topics are left as they are)."""

        async def create() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=f"{self.client_id}-admin")
            await admin.start()
            try:
                new = [
                    NewTopic(self.physical(t.name), max(t.partitions, 1), 1, topic_configs=dict(t.config))
                    for t in topics
                ]
                response = await admin.create_topics(new)
                for name, code, message in response.topic_errors:
                    if code not in (0, _TOPIC_EXISTS):
                        raise KafkaError(f"creating topic {name}: error {code} {message}")
            finally:
                await admin.close()

        await with_backoff("creating topics", create, retry_on=_AWAY)
        for spec in topics:
            await self._partitions(spec.name)

    async def _partitions(self, topic: str) -> list[int]:
        """Partition numbers of a topic (waiting for metadata to show it)."""
        name = self.physical(topic)
        for _ in range(100):
            parts = self.client.cluster.partitions_for_topic(name)
            if parts:
                return sorted(parts)
            self.client.add_topic(name)
            await self.client.force_metadata_update()
            if self.client.cluster.partitions_for_topic(name):
                continue
            await asyncio.sleep(0.05)
        raise KafkaError(f"topic {name} has no partitions in the cluster metadata")

    async def topic_partitions(self, topics: Sequence[str]) -> list[TP]:
        return [(t, p) for t in topics for p in await self._partitions(t)]

    # -- clients ---------------------------------------------------------------------
    def producer(self) -> KafkaProducer:
        producer = KafkaProducer(self)
        self._open.add(producer)
        return producer

    def consumer(self, group: str, topics: Sequence[str], *, whole: bool = False) -> KafkaConsumer:
        consumer = KafkaConsumer(self, group, tuple(topics), whole=whole)
        self._open.add(consumer)
        return consumer

    # -- offsets ---------------------------------------------------------------------
    async def end_offsets(self, tps: Sequence[TP]) -> dict[TP, int]:
        """Each partition's high watermark, read from a Fetch response (see module doc).

        The fetch asks from the end seen last time (ListOffsets the first time), so a
        partition at its end answers with no records, only its high watermark.

        Raises :class:`KafkaError` (the broker is away: callers wait and ask again) when
        the broker gave no end for some partition (an error, or no answer): taking the end
        seen before, or leaving the partition out, would count a group that has not
        handled what was written since as caught up, and the clock would move on."""
        by_leader: dict[int, list[TP]] = defaultdict(list)
        for tp in tps:
            leader = self.client.cluster.leader_for_partition(TopicPartition(self.physical(tp[0]), tp[1]))
            if leader is None or leader < 0:
                await self.client.force_metadata_update()
                raise NodeNotReadyError(f"no leader for {tp}")
            by_leader[leader].append(tp)
        ends: dict[TP, int] = {}
        for leader, group in by_leader.items():
            start = {tp: self._ends[tp] for tp in group if tp in self._ends}
            unknown = [tp for tp in group if tp not in start]
            if unknown:
                start.update(await self._list_offsets(leader, unknown))
            found, out_of_range = await self._high_watermarks(leader, start)
            if out_of_range:  # the log is shorter than last seen (a broker that lost it): ask afresh
                listed = await self._list_offsets(leader, out_of_range)
                found.update((await self._high_watermarks(leader, listed))[0])
            ends.update(found)
        self._ends.update(ends)
        missing = [tp for tp in tps if tp not in ends]
        if missing:
            await self.client.force_metadata_update()  # (a leader that moved)
            raise KafkaError(f"no end offset from the broker for {missing}")
        return ends

    async def _list_offsets(self, leader: int, tps: Sequence[TP]) -> dict[TP, int]:
        topics: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for t, p in tps:
            topics[self.physical(t)].append((p, _LATEST))
        response = await self.client.send(leader, OffsetRequest(-1, 0, list(topics.items())))
        out: dict[TP, int] = {}
        for topic, parts in response.topics:
            for part in parts:
                partition, code = part[0], part[1]
                if code:
                    raise KafkaError(f"ListOffsets {topic}[{partition}]: error {code}")
                out[(self.logical(topic), partition)] = part[-1]
        return out

    async def _high_watermarks(self, leader: int, start: dict[TP, int]) -> tuple[dict[TP, int], list[TP]]:
        ends: dict[TP, int] = {}
        out_of_range: list[TP] = []
        want = dict(start)
        for _ in range(5):
            if not want:
                break
            topics: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
            for (t, p), offset in want.items():
                topics[self.physical(t)].append((p, offset, 1))
            # max_wait 1 ms: a partition at its end answers with no records after the wait
            # (a zero wait gets no answer at all from Tansu), one with records at once.
            response = await self.client.send(leader, FetchRequest(1, 1, 1, 0, list(topics.items())))
            for topic, parts in response.topics:
                for part in parts:
                    tp = (self.logical(topic), part[0])
                    if tp not in want:
                        continue
                    if part[1] == _OFFSET_OUT_OF_RANGE:
                        out_of_range.append(tp)
                        del want[tp]
                    elif not part[1]:
                        ends[tp] = max(part[2], want.pop(tp))
        return ends, out_of_range  # (what is still wanted has no known end)

    async def committed(self, group: str, tps: Sequence[TP]) -> dict[TP, int]:
        """The group's committed offsets (0 where it has none)."""
        name = self.physical(group)
        topics: dict[str, list[int]] = defaultdict(list)
        for t, p in tps:
            topics[self.physical(t)].append(p)
        for _ in range(3):
            coordinator = self._coordinators.get(name)
            if coordinator is None:
                coordinator = await self.client.coordinator_lookup(CoordinationType.GROUP, name)
                self._coordinators[name] = coordinator
            response = await self.client.send(coordinator, OffsetFetchRequest(name, list(topics.items())))
            top_error = getattr(response, "error_code", 0)
            if top_error == NotCoordinatorForGroupError.errno:
                self._coordinators.pop(name, None)
                continue
            out: dict[TP, int] = {}
            for topic, parts in response.topics:
                for partition, offset, _meta, code in parts:
                    if code == NotCoordinatorForGroupError.errno:
                        self._coordinators.pop(name, None)
                        raise NotCoordinatorForGroupError()
                    out[(self.logical(topic), partition)] = max(offset, 0)
            return out
        raise NotCoordinatorForGroupError(f"no coordinator for group {name}")

    async def lag(self, groups: Mapping[str, Sequence[str]]) -> int:
        """(a broker that is away, or gives no end for a partition, is asked again for up
        to ``lag_patience`` seconds: a lag is never guessed)"""

        async def attempt() -> int:
            by_group, _ends = await self.lag_by_group(groups)
            return sum(by_group.values())

        return await with_backoff("measuring lag", attempt, retry_on=_AWAY, deadline=self.lag_patience)

    async def lag_by_group(self, groups: Mapping[str, Sequence[str]]) -> tuple[dict[str, int], dict[TP, int]]:
        """Each group's uncommitted records, and the end offsets they were measured against."""
        topics = sorted({t for ts in groups.values() for t in ts})
        ends = await self.end_offsets(await self.topic_partitions(topics))
        return await self._lags(groups, ends), ends

    async def _lags(self, groups: Mapping[str, Sequence[str]], ends: dict[TP, int]) -> dict[str, int]:
        names = list(groups)
        tps = {g: [tp for tp in ends if tp[0] in groups[g]] for g in names}
        committed = await asyncio.gather(*(self.committed(g, tps[g]) for g in names))
        return {g: sum(max(ends[tp] - c.get(tp, 0), 0) for tp in tps[g]) for g, c in zip(names, committed, strict=True)}

    async def wait_idle(self, groups: Mapping[str, Sequence[str]], *, timeout: float = 60.0) -> None:
        """Idle: every group has committed the end of what it reads, and the ends read
        before and after the committed offsets are the same (nothing was produced meanwhile)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.001
        lags: dict[str, int] = {}
        topics = sorted({t for ts in groups.values() for t in ts})
        caught_up: dict[TP, int] | None = None  # the ends every group had committed, last look
        moved: tuple[dict[TP, int], dict[str, int]] | None = None
        while True:
            try:
                ends = await self.end_offsets(await self.topic_partitions(topics))
                if caught_up is not None and ends == caught_up:
                    return
                lags = await self._lags(groups, ends)
                caught_up = None if any(lags.values()) else ends
                delay = min(delay * 2, 0.02)
                if (ends, lags) != moved:  # progress (a commit, a new record): the wait starts over
                    moved, deadline = (ends, lags), loop.time() + timeout
            except _AWAY as exc:  # broker away: keep waiting, within the timeout
                log.warning("checking lag failed (%r); retrying", exc)
                caught_up = None
                delay = 1.0
            if caught_up is not None:
                continue  # look at the ends once more, at once
            if loop.time() + delay > deadline:
                behind = ", ".join(f"{g} has {n} records to handle" for g, n in lags.items() if n)
                raise BusTimeout(f"bus not idle: nothing moved for {timeout:g}s: {behind or 'broker unreachable'}")
            await asyncio.sleep(delay)

    async def history(
        self, group: str, topics: Sequence[str], *, start: Mapping[TP, int] | None = None
    ) -> list[Record]:
        """Every record below the group's committed offsets (what it has already handled),
        from ``start`` on where given; :class:`BusUnavailable` with the broker away (a
        service told to stop mid-rebuild then stops without a traceback)."""
        try:
            return await self._history(group, topics, start)
        except _AWAY as exc:
            raise BusUnavailable(f"reading what {group} committed: {exc!r}") from exc

    async def _history(self, group: str, topics: Sequence[str], start: Mapping[TP, int] | None) -> list[Record]:
        tps = await self.topic_partitions(topics)
        first = dict(start or {})
        committed = {
            tp: off for tp, off in (await self.committed(group, tps)).items() if off > 0 and off > first.get(tp, 0)
        }
        if not committed:
            return []
        reader = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id=f"{self.client_id}-history",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=self.fetch_wait_ms,
        )
        await reader.start()
        out: list[Record] = []
        try:
            assigned = [TopicPartition(self.physical(t), p) for (t, p) in committed]
            reader.assign(assigned)
            await reader.seek_to_beginning(*assigned)
            for t, p in committed:
                if first.get((t, p), 0) > 0:
                    reader.seek(TopicPartition(self.physical(t), p), first[(t, p)])
            remaining = {TopicPartition(self.physical(t), p): off for (t, p), off in committed.items()}
            while remaining:
                batch = await reader.getmany(*remaining, timeout_ms=1000, max_records=10_000)
                for ktp, msgs in batch.items():
                    stop = remaining.get(ktp)
                    if stop is None:
                        continue
                    out.extend(_record(self, m) for m in msgs if m.offset < stop)
                    if msgs and msgs[-1].offset + 1 >= stop:
                        del remaining[ktp]
                        reader.pause(ktp)
        finally:
            await reader.stop()
        return out


def _record(bus: KafkaBus, m: Any) -> Record:
    headers = tuple((k, bytes(v)) for k, v in (m.headers or ()))
    return Record(bus.logical(m.topic), m.partition, m.offset, m.key, m.value, headers)


class KafkaProducer:
    """Sends are queued and batched by aiokafka; :meth:`flush` waits for every ack."""

    def __init__(self, bus: KafkaBus) -> None:
        self._bus = bus
        self._producer: AIOKafkaProducer | None = None
        self._pending: list[asyncio.Future[Any]] = []

    async def _started(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self._bus.bootstrap,
                client_id=f"{self._bus.client_id}-producer",
                acks="all",
                enable_idempotence=False,
                linger_ms=self._bus.linger_ms,
                compression_type=self._bus.compression,
                max_batch_size=1024 * 1024,
                max_request_size=4 * 1024 * 1024,
                request_timeout_ms=15_000,
            )
            await producer.start()
            self._producer = producer
        return self._producer

    async def send(
        self, topic: str, value: bytes, *, key: bytes | None = None, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        try:
            producer = await self._started()
            fut = await producer.send(self._bus.physical(topic), value, key=key, headers=list(headers) or None)
        except _AWAY as exc:
            raise BusUnavailable(f"sending to {topic}: {exc!r}") from exc
        self._pending.append(fut)

    async def flush(self) -> None:
        """Wait for every ack; raise :class:`BusUnavailable` if any record was not taken
        (then all of them should be sent again: the duplicates carry the same event ids)."""
        if self._producer is None or not self._pending:
            return
        pending, self._pending = self._pending, []
        try:
            await self._producer.flush()
        except _AWAY as exc:
            raise BusUnavailable(f"flushing: {exc!r}") from exc
        results = await asyncio.gather(*pending, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise BusUnavailable(f"{len(errors)} of {len(pending)} records not acknowledged: {errors[0]!r}")

    async def close(self) -> None:
        if self._producer is not None:
            try:
                await self.flush()
            finally:
                producer, self._producer = self._producer, None
                await _stopped_within(producer.stop(), "producer")


class KafkaConsumer:
    """A consumer-group member. Offsets are committed only when asked (no auto-commit)."""

    def __init__(self, bus: KafkaBus, group: str, topics: tuple[str, ...], *, whole: bool = False) -> None:
        self._bus = bus
        self.group = group
        self.topics = topics
        self.whole = whole
        self._consumer: AIOKafkaConsumer | None = None

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            kwargs: dict[str, Any] = {}
            if self._bus.group_instance and not self.whole:
                kwargs["group_instance_id"] = f"{self._bus.physical(self.group)}.{self._bus.group_instance}"
            subscribe = () if self.whole else tuple(self._bus.physical(t) for t in self.topics)
            consumer = AIOKafkaConsumer(
                *subscribe,
                bootstrap_servers=self._bus.bootstrap,
                client_id=f"{self._bus.client_id}-{self.group}",
                group_id=self._bus.physical(self.group),
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                fetch_max_wait_ms=self._bus.fetch_wait_ms,
                max_partition_fetch_bytes=8 * 1024 * 1024,
                session_timeout_ms=self._bus.session_timeout_ms,
                heartbeat_interval_ms=max(self._bus.session_timeout_ms // 5, 500),
                request_timeout_ms=max(self._bus.session_timeout_ms + 5000, 15_000),
                **kwargs,
            )
            await with_backoff(f"joining group {self.group}", consumer.start, retry_on=_AWAY)
            if self.whole:  # assigned, not subscribed: starts at the group's committed offsets
                tps = await self._bus.topic_partitions(self.topics)
                consumer.assign([TopicPartition(self._bus.physical(t), p) for t, p in tps])
            self._consumer = consumer
        return self._consumer

    async def getmany(self, *, timeout: float = 0.1, max_records: int = 1000) -> list[Record]:
        consumer = await self._started()
        try:
            batches = await consumer.getmany(timeout_ms=int(timeout * 1000), max_records=max_records)
        except _AWAY as exc:
            raise BusUnavailable(f"fetching for {self.group}: {exc!r}") from exc
        out: list[Record] = []
        for msgs in batches.values():
            out.extend(_record(self._bus, m) for m in msgs)
        return out

    async def commit(self, offsets: Mapping[TP, int]) -> None:
        """Commit, retrying while the broker is away. Raises :class:`CommitRejected` when
        the group took the partitions away meanwhile: their records will come again."""
        consumer = await self._started()
        physical = {TopicPartition(self._bus.physical(t), p): off for (t, p), off in offsets.items()}

        async def attempt() -> None:
            try:
                await consumer.commit(physical)
            except (CommitFailedError, IllegalStateError) as exc:
                raise CommitRejected(str(exc)) from exc

        await with_backoff(f"committing for {self.group}", attempt, retry_on=_AWAY)

    async def seek(self, offsets: Mapping[TP, int]) -> None:
        """(see :meth:`ledgerlet_bus.api.Consumer.seek`) aiokafka asks for the group's
        committed offsets at the first fetch unless a partition has a position by then;
        one whose log no longer starts at 0 is read from its start (``earliest``)."""
        consumer = await self._started()
        for ktp in consumer.assignment():
            consumer.seek(ktp, offsets.get((self._bus.logical(ktp.topic), ktp.partition), 0))

    async def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await _stopped_within(consumer.stop(), f"consumer of {self.group}")


async def _stopped_within(stopping: Coroutine[Any, Any, None], what: str) -> None:
    """Stop an aiokafka client, waiting at most :data:`CLOSE_PATIENCE` seconds.

    aiokafka's consumer fetcher cancels its fetch task (one sleeping out a retry while the
    broker is away) and awaits it, letting that task's CancelledError out: the client is
    stopped all the same (a service stopping on SIGTERM ended in a traceback, exit 1). A
    stop that takes longer is left to itself (cancelled, not waited for)."""
    task = asyncio.ensure_future(stopping)
    try:
        done, _ = await asyncio.wait({task}, timeout=CLOSE_PATIENCE)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        log.warning("%s not stopped after %gs (broker away?): left without leaving its group", what, CLOSE_PATIENCE)
    elif not task.cancelled():
        task.result()
