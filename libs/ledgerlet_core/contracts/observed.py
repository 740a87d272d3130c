"""A housekeeping tick's derived observations in one event, a column per number
(:class:`NodesObserved`).

A fleet's nodes are each observed every pass: 5,000 nodes make 5,000 ``NodeObserved``
events every 10 s, and each one's way through the collector, the bus, the kubelet and
the store cost more than the pass it stood for. Carried together, the tick's
observations pay that once, and the kubelet tells the quiet nodes apart over whole
columns (kubelet/quiet.py). Each observation keeps its identity: a member has the id,
place, stream and data the ``NodeObserved`` alone would have had (``members``), so a
decision still cites the exact observation it was decided on, and every reader of the
store sees the observations as single events.

The pods' stats ride along only for the nodes whose pass may read them (a threshold
met, counting its minimum reclaim, or a pod with local-storage limits: node_sim/
observing.py), and are never stored unless the run keeps whole observations
(``ScenarioStarted.observations``), as single derived observations never were.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Sequence
from typing import Final

import msgspec

from ledgerlet_core.contracts.envelope import EVENT_ID_NAMESPACE, Envelope, event_id
from ledgerlet_core.contracts.internal import NodesObserved
from ledgerlet_core.model.ids import uuid5_texts

#: the event type
OBSERVED_BATCH: Final = "NodesObserved"
#: the type each member stands for
OBSERVED: Final = "NodeObserved"

#: the record key of every batch (a member's node is in the batch, not the key: a split
#: eviction manager's member must not drop a batch as another member's node's observation)
BATCH_KEY: Final = "observations"

#: members per batch at most: a record stays well under a Kafka broker's 1 MB default
#: (a member is some 400 bytes of JSON without its pods; with them, see MAX_POD_BYTES)
MAX_MEMBERS: Final = 1000
#: pods' stats per batch at most, in bytes of JSON (a new batch starts past it)
MAX_POD_BYTES: Final = 384 * 1024


class ObservedIndex(msgspec.Struct, rename="camel", kw_only=True):
    """A batch's members' ids and nodes alone (msgspec skips the rest unread)."""

    ids: list[str]
    nodes: list[str]


_DECODER: Final = msgspec.json.Decoder(NodesObserved)
_INDEX: Final = msgspec.json.Decoder(ObservedIndex)


def observed_index(data: bytes) -> ObservedIndex:
    return _INDEX.decode(data)


_ENCODER: Final = msgspec.json.Encoder()


def decode_observed(data: bytes) -> NodesObserved:
    return _DECODER.decode(data)


#: batches just encoded, by their JSON's identity (the JSON kept with them, so no id is
#: reused meanwhile): in one process (a run, a replay) the kubelet takes a tick's batch
#: right after the collector made it, and decoding it only rebuilt what was there, some
#: 140 us a tick of 100 nodes (a fourteenth of a replay)
_HANDED: dict[int, tuple[msgspec.Raw, NodesObserved]] = {}
#: batches kept for their reader at most (a process whose batches are read elsewhere,
#: through a broker, keeps the last few for nothing)
_HANDED_MAX: Final = 16


def encode_observed(batch: NodesObserved) -> msgspec.Raw:
    """The batch as JSON; ``batch`` itself is kept for :func:`handed_observed` (its maker
    never changes it after)."""
    raw = msgspec.Raw(_ENCODER.encode(batch))
    if len(_HANDED) >= _HANDED_MAX:
        del _HANDED[next(iter(_HANDED))]
    _HANDED[id(raw)] = (raw, batch)
    return raw


def handed_observed(data: bytes) -> NodesObserved:
    """:func:`decode_observed` for the one loop that reads a tick's batches (the kubelet,
    which never changes one): the batch :func:`encode_observed` was given, when ``data`` is
    the very JSON it made of it (handed over once); else decoded."""
    kept = _HANDED.pop(id(data), None)
    if kept is not None and kept[0] is data:
        return kept[1]
    return _DECODER.decode(data)


def member_order(env: Envelope, place: int) -> list[int]:
    """A member's order: the batch's (its first member's) with the member's own place."""
    return [*env.order[:-1], place]


def observation_members(
    env: Envelope, batch: NodesObserved | None = None, *, leave_out: Container[str] = ()
) -> list[Envelope]:
    """The ``NodeObserved`` events a batch carries, as their own envelopes (stored form:
    pods' stats only where the batch keeps them whole), but those of nodes in ``leave_out``."""
    data = batch if batch is not None else decode_observed(env.data)
    pods = data.pods_json() if data.whole else {}
    out = []
    for i, node in enumerate(data.nodes):
        if node in leave_out:
            continue
        observed = data.observation(i, pods.get(i))
        out.append(
            Envelope(
                id=data.ids[i],
                type=OBSERVED,
                data=msgspec.Raw(_ENCODER.encode(observed)),
                run=env.run,
                t=env.t,
                order=member_order(env, data.places[i]),
                stream=f"node/{node}",
                kind=env.kind,
                node=node,
                causes=env.causes,
            )
        )
    return out


def expand_observed(envelopes: Iterable[Envelope]) -> Iterator[Envelope]:
    """``envelopes`` with each observation batch replaced by its members."""
    for env in envelopes:
        if env.type == OBSERVED_BATCH:
            yield from observation_members(env)
        else:
            yield env


def observed_count(data: bytes) -> int:
    """How many observations a batch carries."""
    return len(_INDEX.decode(data).ids)


def observation_member(env: Envelope, batch: NodesObserved, i: int) -> Envelope:
    """Member ``i``'s envelope without its data: what a loop's events about its pass
    follow from (their place and cause)."""
    node = batch.nodes[i]
    return Envelope(
        id=batch.ids[i],
        type=OBSERVED,
        data=msgspec.Raw(b"{}"),
        run=env.run,
        t=env.t,
        order=member_order(env, batch.places[i]),
        stream=f"node/{node}",
        kind=env.kind,
        node=node,
        causes=env.causes,
    )


def stored_observed(data: bytes) -> bytes | None:
    """The stored form of a batch: its pods' stats left out unless it keeps them whole
    (None: stored as it is)."""
    # (without the key no member's pods ride along: nothing to leave out, nothing decoded)
    if b'"podsOf"' not in bytes(data):
        return None
    batch = decode_observed(data)
    if batch.whole or not batch.pods_of:
        return None
    batch.pods_of, batch.pods = [], []
    return _ENCODER.encode(batch)


def member_id(run: str, t: int, order: list[int]) -> str:
    """The id a member has: the one its ``NodeObserved`` would have alone."""
    return event_id(run, t, order, OBSERVED)


def member_ids(run: str, t: int, prefix: Sequence[int], places: Iterable[int]) -> list[str]:
    """:func:`member_id` of each member at ``[*prefix, place]``, the shared part hashed once."""
    head = f"{run}/{t}/{'.'.join(map(str, prefix))}."
    return uuid5_texts(EVENT_ID_NAMESPACE, head, (f"{p}/{OBSERVED}" for p in places))
