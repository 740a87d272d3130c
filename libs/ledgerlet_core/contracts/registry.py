"""Every event type, its kind and schema version, and how to (de)serialise its data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, TypeVar

import msgspec

from ledgerlet_core.contracts.decisions import DECISION_TYPES
from ledgerlet_core.contracts.envelope import Envelope, event_id
from ledgerlet_core.contracts.inputs import INPUT_TYPES
from ledgerlet_core.contracts.internal import INTERNAL_TYPES
from ledgerlet_core.model.codec import enc_hook

INPUT: Final = "input"
INTERNAL: Final = "internal"
DECISION: Final = "decision"

#: Bumped when a type's data changes incompatibly; additions of optional fields do not.
SCHEMA_VERSION: Final = 1

T = TypeVar("T", bound=msgspec.Struct)


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    kind: str
    model: type[msgspec.Struct]
    version: int = SCHEMA_VERSION


EVENT_TYPES: Final[dict[str, EventType]] = {
    **{n: EventType(n, INPUT, m) for n, m in INPUT_TYPES.items()},
    **{n: EventType(n, INTERNAL, m) for n, m in INTERNAL_TYPES.items()},
    **{n: EventType(n, DECISION, m) for n, m in DECISION_TYPES.items()},
}

_ENCODER: Final = msgspec.json.Encoder(enc_hook=enc_hook)


def encode_data(data: msgspec.Struct) -> msgspec.Raw:
    return msgspec.Raw(_ENCODER.encode(data))


@cache
def _decoder(name: str) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(EVENT_TYPES[name].model)


def decoder_for(name: str) -> Callable[[msgspec.Raw], Any]:
    """Raw data -> the registered model of event type ``name``."""
    return _decoder(name).decode


def decode_data(env: Envelope) -> Any:
    """The envelope's data as its registered model."""
    return _decoder(env.type).decode(env.data)


def make_envelope(
    data: msgspec.Struct,
    *,
    run: str,
    t: int,
    order: list[int],
    stream: str,
    node: str | None = None,
    pod: str | None = None,
    causes: list[str] | None = None,
) -> Envelope:
    name = type(data).__name__
    et = EVENT_TYPES[name]
    return Envelope(
        id=event_id(run, t, order, name),
        type=name,
        v=et.version,
        run=run,
        t=t,
        order=order,
        stream=stream,
        kind=et.kind,
        node=node,
        pod=pod,
        causes=causes or [],
        data=encode_data(data),
    )


def node_stream(node: str) -> str:
    return f"node/{node}"


def pod_stream(pod_key: str) -> str:
    return f"pod/{pod_key}"
