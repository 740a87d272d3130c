"""What a loop emitted, routed: the topic its type travels on and its partition key."""

from __future__ import annotations

from dataclasses import dataclass

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.topics import topic_of
from ledgerlet_core.loop.emitter import Emitted


@dataclass(slots=True)
class Outgoing:
    topic: str
    key: bytes | None
    envelope: Envelope
    #: record headers (trace context), set by the shell
    headers: tuple[tuple[str, bytes], ...] = ()
    #: how many events it carries (a batch: its members)
    events: int = 1


def routed(emitted: Emitted) -> Outgoing:
    env = emitted.envelope
    return Outgoing(topic_of(env.type, env.kind), emitted.key.encode(), env, events=emitted.events)
