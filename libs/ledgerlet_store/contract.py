"""What the rest of ledgerlet may count on from an event store: append-only, idempotent by
event id, read back in the order decisions were made.

* Every event gets a global ``position`` and a per-stream ``version``.
* ``append`` to one stream can state the version it expects (optimistic concurrency).
* Appends are idempotent by event id: an event already stored is skipped, so a
  redelivered or re-derived event never becomes a duplicate.
* A run's events come back in decision order (virtual time, then causal order); events
  come back by id (a decision's causes).

Each backend implements it (ledgerlet_store/sqlite.py, postgres.py); the reads only some
readers need (a node's history, pages of decisions, the run registry in runs.py, the
Kubernetes facade's pages in kube_reads.py) sit on top. A store that cannot reach its
database raises :class:`StoreUnavailable`, never a driver's own exception: the runtime
retries on it without knowing which database is behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ledgerlet_core.contracts.envelope import Envelope


@dataclass(frozen=True, slots=True)
class StoredEvent:
    position: int
    version: int
    recorded_at: datetime
    envelope: Envelope


class StoreError(RuntimeError):
    """The store refused or failed an operation (not because its database is away).

    ``reason`` is the database's own words, without the store's address (the message
    names both)."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class StoreUnavailable(StoreError):
    """The database did not answer (down, restarting, out of connections, locked past the
    wait, cut off): the same call may succeed later."""


class WrongExpectedVersion(StoreError):
    """The stream is not at the version the appender expected (someone else wrote)."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at version {actual}, expected {expected}")
        self.stream = stream
        self.expected = expected
        self.actual = actual


def stream_id(run: str, stream: str) -> str:
    """A stream's name in the store: streams are per run."""
    return f"{run}:{stream}"


class EventStore(Protocol):
    """The append-only contract every backend keeps (its contract suite:
    tests/store/test_store_contract.py, run on SQLite and on PostgreSQL)."""

    async def append(
        self, stream: str, envelopes: Sequence[Envelope], *, expected_version: int | None = None
    ) -> list[int]:
        """Append to one stream; the positions (existing ones for events already stored).
        ``expected_version`` is the stream's version before this append (0 for a new
        stream); a mismatch raises :class:`WrongExpectedVersion` unless every event is
        already stored (a retried append succeeds)."""
        ...

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        """Append events of many streams at once (all or none); how many were new."""
        ...

    async def read_run(self, run: str, *, kind: str | None = None) -> list[StoredEvent]:
        """A run's events (of one ``kind``, if given) in decision order."""
        ...

    def iter_run(
        self,
        run: str,
        *,
        batch: int = 5000,
        members: bool = True,
        kinds: Sequence[str] = (),
        types_only_of: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> AsyncIterator[StoredEvent]:
        """A run's events by position, a batch at a time (a replay over a big store)."""
        ...

    async def get_events(self, ids: Sequence[str]) -> list[StoredEvent]:
        """Events by id, in position order; unknown ids are left out."""
        ...

    def describe(self) -> str:
        """Where the store is, for messages (no password)."""
        ...

    async def close(self) -> None: ...
