"""Inputs carried a node at a time (:class:`~ledgerlet_core.contracts.inputs.InputBatch`).

A fleet's starting state is hundreds of thousands of inputs at time 0: every bound pod
and its usage entry. One event each made every loop, the bus and the store pay a
per-event price for each; batched, they pay it once per node. Batching is invisible to
what is decided: a batch's members are exactly the envelopes the single inputs had (id,
place, stream, node, pod, data), and whoever reads a batch reads its members
(:func:`expand`) in the place each would have had.

A batch is a run of consecutive inputs of one instant that concern one node (a node's
pods, then its pods' usage entries, as a fleet lists them), so no other input ever falls
between two members and the members are handled in the order single inputs would be;
a batch stands at the place of its first member.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

import msgspec

from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.envelope import Envelope, event_id
from ledgerlet_core.contracts.inputs import BatchMember, InputBatch

#: the batch's event type
BATCH: Final = "InputBatch"

#: the input types a batch may carry (readers of these look in batches too)
BATCHABLE: Final = frozenset({"ObjectApplied", "UsageDeclared"})

#: members per batch at most, and bytes of their data: a record stays well below a Kafka
#: broker's default 1 MB message limit, compressed or not (pods with large annotations)
MAX_MEMBERS: Final = 256
MAX_BYTES: Final = 512 * 1024

_MEMBERS: Final = msgspec.json.Decoder(InputBatch)
_ENCODER: Final = msgspec.json.Encoder()


def members_of(env: Envelope) -> list[BatchMember]:
    return _MEMBERS.decode(env.data).members


def expand(env: Envelope) -> list[Envelope]:
    """The inputs a batch carries, as their own envelopes (a non-batch: itself)."""
    if env.type != BATCH:
        return [env]
    return [
        Envelope(
            id=m.id,
            type=m.type,
            data=m.data,
            run=env.run,
            t=env.t,
            order=[order.INPUTS, m.index],
            stream=m.stream,
            kind=env.kind,
            node=m.node,
            pod=m.pod,
        )
        for m in members_of(env)
    ]


def expand_all(envelopes: Iterable[Envelope]) -> Iterator[Envelope]:
    for env in envelopes:
        if env.type == BATCH:
            yield from expand(env)
        else:
            yield env


def iter_batched(inputs: Iterable[Envelope], node_of: Callable[[Envelope], str | None]) -> Iterator[Envelope]:
    """``inputs`` (in feed order) with each run of consecutive batchable inputs of one
    instant and one node (``node_of``; None: not batchable) carried as batches of at most
    :data:`MAX_MEMBERS` members and :data:`MAX_BYTES` of data. Inputs are taken one at a
    time, and each batch handed out as it is full: at most one batch's worth is held."""
    run: list[Envelope] = []
    run_node: str | None = None
    size = 0
    for env in inputs:
        node = node_of(env)
        length = len(env.data)
        if run and (node != run_node or env.t != run[-1].t or len(run) >= MAX_MEMBERS or size + length > MAX_BYTES):
            yield _batch(run_node or "", run)
            run, size = [], 0
        if node is None:
            yield env
        else:
            run.append(env)
            run_node = node
            size += length
    if run:
        yield _batch(run_node or "", run)


def _batch(node: str, members: list[Envelope]) -> Envelope:
    if len(members) == 1:
        return members[0]
    wrong = {m.type for m in members} - BATCHABLE
    if wrong:
        raise ValueError(f"inputs of type {sorted(wrong)} are never batched")
    first = members[0]
    batch = InputBatch(
        members=[
            BatchMember(id=m.id, index=m.order[1], type=m.type, stream=m.stream, node=m.node, pod=m.pod, data=m.data)
            for m in members
        ]
    )
    return Envelope(
        id=event_id(first.run, first.t, first.order, BATCH),
        type=BATCH,
        data=msgspec.Raw(_ENCODER.encode(batch)),
        run=first.run,
        t=first.t,
        order=list(first.order),
        stream=f"batch/{node}",
        kind=first.kind,
        # (a batch of usage entries alone is no node's input: a node's reads pass it by)
        node=node if any(m.node == node for m in members) else None,
    )


def rekey(env: Envelope, run: str, new_id: Callable[[Envelope], str]) -> Envelope:
    """A batch as another run's: its members' ids given by ``new_id`` (of each member's
    envelope), the batch's own derived from ``run``."""
    members = [msgspec.structs.replace(m, id=new_id(e)) for m, e in zip(members_of(env), expand(env), strict=True)]
    return msgspec.structs.replace(
        env,
        run=run,
        id=event_id(run, env.t, env.order, BATCH),
        data=msgspec.Raw(_ENCODER.encode(InputBatch(members=members))),
    )
