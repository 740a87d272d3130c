"""The envelope every event travels in, on the bus and in the store.

``t`` is virtual time in nanoseconds since the scenario's start. ``order`` is the
event's place in the causal tree of its instant: an input's is ``[0, index]``, a
clock tick's ``[1, round]``, and an event a service emits while handling another gets
the handled event's order plus ``[service rank, index]``. Sorting decisions by
``(t, order)`` gives the same total order whatever order services ran in, which is
what makes the embedded run and the distributed stack write identical logs; and the
id is derived from it, so a service that re-derives a decision after a crash
re-derives the same id and the store drops the duplicate.
"""

from __future__ import annotations

import uuid
from typing import Final

import msgspec

from ledgerlet_core.model.ids import uuid5_text

#: Namespace for event ids: uuid5(NAMESPACE, f"{run}/{t}/{order}/{type}").
EVENT_ID_NAMESPACE: Final = uuid.UUID("7c0e4f4e-3b8a-5f5e-9a55-6c6564676572")


class Envelope(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    type: str
    data: msgspec.Raw
    v: int = 1
    run: str
    t: int
    order: list[int]
    stream: str
    kind: str  # "input" | "internal" | "decision"
    node: str | None = None
    pod: str | None = None
    causes: list[str] = []

    def sort_key(self) -> tuple[int, tuple[int, ...]]:
        return (self.t, tuple(self.order))


def event_id(run: str, t: int, order: list[int], type_: str) -> str:
    """Deterministic: the same run, instant, place and type always give the same id."""
    return uuid5_text(EVENT_ID_NAMESPACE, f"{run}/{t}/{'.'.join(map(str, order))}/{type_}")


_DECODER: Final = msgspec.json.Decoder(Envelope)
_ENCODER: Final = msgspec.json.Encoder()


def encode_envelope(env: Envelope) -> bytes:
    return _ENCODER.encode(env)


def decode_envelope(data: bytes) -> Envelope:
    return _DECODER.decode(data)
