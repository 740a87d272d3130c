"""The bus every service talks through: Kafka's model, whatever carries it.

Topics have partitions; a record's key picks its partition (Kafka's murmur2 default
partitioner), so a key's records stay in order. Consumers join a group, which splits a
topic's partitions between its members; a group's committed offset per partition is
where a restarted member resumes. Delivery is at-least-once: commit after the effects
of a record are safe, and expect to see it again otherwise.

A member reads from where its group has committed when it *first fetches* (not when
it is made), unless told to :meth:`Consumer.seek` elsewhere.

``idle`` is what makes virtual time work over a real broker: when every group has
committed everything in the topics it reads, nothing is in flight anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int = 1
    #: topic-level configuration for a broker that has it (``retention.ms``, ...)
    config: tuple[tuple[str, str], ...] = ()


class Producer(Protocol):
    async def send(
        self, topic: str, value: bytes, *, key: bytes | None = None, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        """Queue a record; it is durable once :meth:`flush` returns."""

    async def flush(self) -> None:
        """Wait until every queued record is acknowledged by the bus."""

    async def close(self) -> None: ...


class Consumer(Protocol):
    async def getmany(self, *, timeout: float = 0.1, max_records: int = 1000) -> list[Record]:
        """Records from the assigned partitions, in offset order per partition."""

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the *next* offset to read for each partition."""

    async def seek(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Read each partition from ``offsets`` on (the next offset to read), and every
        other partition of the member's from its beginning, instead of from where the
        group has committed when the member first fetches. For a whole member: a service
        that rebuilt its state from the records below some offsets resumes exactly
        there, whatever another member of its group commits meanwhile."""

    async def close(self) -> None: ...


class Bus(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def create_topics(self, topics: Sequence[TopicSpec]) -> None: ...

    def producer(self) -> Producer: ...

    def consumer(self, group: str, topics: Sequence[str], *, whole: bool = False) -> Consumer:
        """A member of ``group`` reading ``topics``.

        By default the group splits partitions between its members and rebalances when
        members come and go. ``whole=True`` makes a member that reads every partition and
        never takes part in a rebalance (it still commits to the group): what a stateful
        service needs, and it resumes at once after a restart."""

    async def lag(self, groups: Mapping[str, Sequence[str]]) -> int:
        """Records the groups have not committed yet, over the topics each one reads."""

    async def wait_idle(self, groups: Mapping[str, Sequence[str]], *, timeout: float = 60.0) -> None:
        """Return once nothing is in flight for these groups (lag 0, end offsets stable).

        ``timeout`` is how long the wait may go on *without progress* (no group committing,
        nothing produced): a slow machine or a long pass is waited out, only a stuck
        consumer raises :class:`BusTimeout`."""

    async def history(
        self, group: str, topics: Sequence[str], *, start: Mapping[TopicPartition, int] | None = None
    ) -> list[Record]:
        """The records below the group's committed offsets: what it has already handled.

        A restarted service folds them again to rebuild its state; ``start`` (per
        partition, the first offset wanted) skips what a snapshot of it already holds."""


class CommitRejected(RuntimeError):
    """The group moved the partitions elsewhere before the commit: their records come again."""


class BusUnavailable(ConnectionError):
    """The bus could not take or deliver records just now (broker away); try again."""


class BusTimeout(TimeoutError):
    """The bus did not become idle in time (a service is stuck or gone)."""
