"""Events as rows of the ``events`` table and back, the same on every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, observed_count
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.schema import events

_CAUSES: Final = msgspec.json.Encoder()
_CAUSES_DECODER: Final = msgspec.json.Decoder(list[str])

#: the columns a row is written with, in the order :func:`row_without_version` and the
#: version and time make them (COPY on PostgreSQL, ``executemany`` on SQLite)
COLUMNS: Final = (
    "event_id",
    "run",
    "stream",
    "version",
    "type",
    "kind",
    "schema_version",
    "t",
    "order_key",
    "node",
    "pod",
    "causes",
    "data",
    "recorded_at",
)


def row_without_version(e: Envelope) -> tuple[Any, ...]:
    """A row of ``COLUMNS`` without its version and time (filled in under the write lock)."""
    return (
        e.id,
        e.run,
        f"{e.run}:{e.stream}",
        e.type,
        e.kind,
        e.v,
        e.t,
        order_key(e.order),
        e.node,
        e.pod,
        encode_causes(e.causes),
        bytes(e.data).decode(),
    )


def encode_causes(causes: list[str]) -> str:
    """A ``causes`` column: the ids as a JSON array."""
    return _CAUSES.encode(causes).decode()


def with_version(row: tuple[Any, ...], version: int, recorded_at: Any) -> tuple[Any, ...]:
    """``row`` (:func:`row_without_version`) as a whole row of ``COLUMNS``."""
    return (*row[:3], version, *row[3:], recorded_at)


def _own_stream(run: str, stream: str) -> str:
    """A ``stream`` column's stream without its run (stored as ``RUN:STREAM``)."""
    if stream.startswith(run) and stream[len(run) : len(run) + 1] == ":":
        return stream[len(run) + 1 :]
    return stream


def stored(row: Any) -> StoredEvent:
    """A row of ``events`` (every column, in the table's order) as the event it holds."""
    # (by place, not by name: a replay reads every row of a run, and ``Row._mapping``'s
    # look-ups by name were a tenth of its time; ``_AT`` checks the places at import)
    (position, event_id, run, stream, version, type_, kind, v, t, order, node, pod, causes, data, recorded) = row
    stream = _own_stream(run, stream)
    env = Envelope(
        id=event_id,
        type=type_,
        v=v,
        run=run,
        t=t,
        order=list(map(int, order.split("."))) if order else [],
        stream=stream,
        kind=kind,
        node=node,
        pod=pod,
        causes=_CAUSES_DECODER.decode(causes),
        data=msgspec.Raw(data.encode()),
    )
    return StoredEvent(position=position, version=version, recorded_at=aware(recorded), envelope=env)


class StoredRow:
    """A row of ``events`` compared with an event derived again as it is, column by column
    in the form the row holds it (``postmortem.compare.RecordedRow``): a verified replay
    reads a run's every internal event and decision, and making each an envelope first
    (its order split, its causes decoded, its data copied) only to compare it was work
    thrown away on every row that matches. The compared fields are those an envelope's
    comparison takes (``compare._FIELDS`` and the data)."""

    __slots__ = ("_members", "id", "kind", "row", "t", "type")

    def __init__(self, row: Any) -> None:
        self.row = row
        self.id: str = row[1]
        self.type: str = row[5]
        self.kind: str = row[6]
        self.t: int = row[8]
        self._members = 0

    def same_as(self, derived: Envelope) -> bool:
        (_, _, run, stream, _, type_, kind, _, t, order, node, pod, causes, data, _) = self.row
        return (
            type_ == derived.type
            and t == derived.t
            and kind == derived.kind
            and node == derived.node
            and pod == derived.pod
            and order == order_key(derived.order)
            and _own_stream(run, stream) == derived.stream
            and causes == encode_causes(derived.causes)
            and data.encode() == bytes(derived.data)
        )

    def members(self) -> int:
        if not self._members:
            self._members = observed_count(self.row[13].encode()) if self.type == OBSERVED_BATCH else 1
        return self._members

    def envelope(self) -> Envelope:
        return stored(self.row).envelope


def aware(at: datetime) -> datetime:
    """SQLite gives back the UTC times it stored without their zone."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


#: the columns of ``events`` in the order :func:`stored` unpacks them
_AT: Final = [
    *("position", "event_id", "run", "stream", "version", "type", "kind", "schema_version", "t"),
    *("order_key", "node", "pod", "causes", "data", "recorded_at"),
]
if [c.name for c in events.columns] != _AT:
    raise AssertionError(f"stored() unpacks {_AT}, the events table has {[c.name for c in events.columns]}")
if [c for c in _AT if c != "position"] != list(COLUMNS):
    raise AssertionError(f"COLUMNS {COLUMNS} are not the events table's {_AT}")
