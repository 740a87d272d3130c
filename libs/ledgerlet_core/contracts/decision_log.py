"""The decision log (scenario spec §5): one JSON record per decision, in decision order."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

import msgspec

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.timefmt import format_rfc3339


class DecisionRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    seq: int
    id: str
    t: float
    time: str
    type: str
    node: str | None = None
    pod: str | None = None
    data: msgspec.Raw
    causes: list[str] = msgspec.field(default_factory=list)


_ENCODER: Final = msgspec.json.Encoder()


def decision_order(envelopes: Iterable[Envelope]) -> list[Envelope]:
    """Decisions sorted by virtual time, then by their place in the causal tree."""
    return sorted((e for e in envelopes if e.kind == DECISION), key=Envelope.sort_key)


def to_records(envelopes: Iterable[Envelope], start: datetime) -> list[DecisionRecord]:
    return [
        DecisionRecord(
            seq=i,
            id=e.id,
            t=e.t / SECOND,
            time=format_rfc3339(start, e.t),
            type=e.type,
            node=e.node,
            pod=e.pod,
            data=e.data,
            causes=list(e.causes),
        )
        for i, e in enumerate(decision_order(envelopes), start=1)
    ]


def encode_records(records: Iterable[DecisionRecord]) -> bytes:
    """JSON Lines."""
    return b"".join(_ENCODER.encode(r) + b"\n" for r in records)
