"""What a handler emits: envelopes placed in the causal order of the event it handles."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope, node_stream, pod_stream


@dataclass(slots=True)
class Outgoing:
    topic: str
    key: bytes | None
    envelope: Envelope
    #: record headers (trace context), set by the shell
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(slots=True)
class Emitter:
    """Collects a handler's output. The n-th event it emits while handling ``trigger``
    gets order ``trigger.order + [rank, n]`` and the trigger's virtual time."""

    trigger: Envelope
    rank: int
    out: list[Outgoing] = field(default_factory=list)

    def emit(
        self,
        topic: str,
        data: msgspec.Struct,
        *,
        node: str | None = None,
        pod: str | None = None,
        stream: str | None = None,
        causes: list[str] | None = None,
        key: str | None = None,
        order: list[int] | None = None,
    ) -> Envelope:
        if order is None:
            order = [*self.trigger.order, self.rank, len(self.out)]
        if stream is None:
            stream = pod_stream(pod) if pod else node_stream(node) if node else "cluster"
        env = make_envelope(
            data,
            run=self.trigger.run,
            t=self.trigger.t,
            order=order,
            stream=stream,
            node=node,
            pod=pod,
            causes=causes if causes is not None else [self.trigger.id],
        )
        route = key if key is not None else (node or pod or "cluster")
        self.out.append(Outgoing(topic, route.encode(), env))
        return env
