"""What a handler emits: envelopes placed in the causal order of the event it handles.

The n-th event a loop emits while handling ``trigger`` gets order ``trigger.order +
[rank, n]`` and the trigger's virtual time, so its id follows from where it stands in
the run, not from when or where it was computed (contracts/order.py). In a run ordered
by node, a node-scoped loop's n-th event about a node gets ``trigger.order + [rank,
node's place, n]`` instead: its id then depends on nothing another node did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope, node_stream, pod_stream


@dataclass(slots=True)
class Emitted:
    envelope: Envelope
    #: the partition key: a node's (or a pod's) events stay in order
    key: str
    #: how many events it carries (a batch: its members)
    events: int = 1


@dataclass(slots=True)
class Emitter:
    trigger: Envelope
    rank: int
    out: list[Emitted] = field(default_factory=list)
    #: places in the order given up (:meth:`skip`)
    skipped: int = 0
    #: places taken so far: events emitted here (whatever their order) and places given up;
    #: the next event without an order of its own is numbered so
    count: int = 0
    #: whether what concerns a node (None: no node) is emitted here; what is not keeps
    #: its place (a member's share of a split service: loop/membership.py)
    keep: Callable[[str | None], bool] | None = None
    #: a node's place (``NodeEntry.order``) when the run orders this loop's events by node
    place: Callable[[str], int] | None = None
    #: events emitted so far per node (ordered by node; made on the first)
    by_node: dict[str, int] | None = None

    def skip(self) -> None:
        """Give up the next place in the order without emitting: what would have stood
        there is left out, and what follows keeps its id (a quick replay's quiet nodes)."""
        self.skipped += 1
        self.count += 1

    def reserve(self) -> int:
        """Take the next place in the order for an event carried in a batch (emitted later,
        with its batch: :meth:`emit_batch`); the place taken."""
        n = self.count
        self.count += 1
        return n

    def emit_batch(self, envelope: Envelope, key: str, members: int) -> None:
        """Emit a batch of ``members`` events that took their places already
        (:meth:`reserve`): it takes none of its own."""
        self.out.append(Emitted(envelope, key, members))

    def for_member(self, member: Envelope) -> Emitter:
        """An emitter for one member of a batch the loop handles whole (a tick's
        observations): what it emits is numbered from the member's place, as if the member
        had come alone, and lands in this emitter's output."""
        return Emitter(member, self.rank, self.out, keep=self.keep, place=self.place)

    def emit(
        self,
        data: msgspec.Struct,
        *,
        node: str | None = None,
        pod: str | None = None,
        stream: str | None = None,
        causes: list[str] | None = None,
        key: str | None = None,
        order: list[int] | None = None,
    ) -> Envelope:
        """Emit ``data`` (causes: the trigger unless given; stream: the pod's, else the node's)."""
        if order is None:
            place = self.place
            if place is None:
                order = [*self.trigger.order, self.rank, self.count]
            elif node is None:
                what = data.__class__.__name__
                raise ValueError(f"{what}: ordered by node, an event about no node needs an order of its own")
            else:
                by_node = self.by_node
                if by_node is None:
                    by_node = self.by_node = {}
                n = by_node.get(node, 0)
                by_node[node] = n + 1
                order = [*self.trigger.order, self.rank, place(node), n]
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
        self.count += 1
        if self.keep is not None and not self.keep(node):
            self.skipped += 1  # (another member emits it, with this very id)
            return env
        self.out.append(Emitted(env, key if key is not None else (node or pod or "cluster")))
        return env

    def decide(
        self, data: msgspec.Struct, *, node: str | None = None, pod: str | None = None, causes: list[str] | None = None
    ) -> str:
        """Emit a decision (or an event other loops fold) about a node or a pod; its id."""
        return self.emit(data, node=node, pod=pod, causes=causes).id
