"""Recovery: a restarted service's state, rebuilt from what its group committed.

A service's state is a function of the records its group has committed. A restarted one
loads the newest checkpoint (snapshot_policy.py), if there is one it can read, and folds again
every event its group committed after it (the bus keeps them), in the runs' decision order
``(t, order)``, with its output thrown away, since it was published the first time.
Handlers never depend on the order in which a step's events arrive (ties are broken by
event keys), so the rebuilt state is the state the service had. It then reads on from
exactly the offsets that state reflects, not from whatever the group has committed by its
first fetch: a member that lost its lease and has not noticed yet may still be
committing, and what it commits meanwhile would otherwise never be folded here (what is
read twice is dropped by its event ids).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ledgerlet_bus.api import Bus, Record, TopicPartition
from ledgerlet_core.contracts.batch import BATCH, expand
from ledgerlet_core.contracts.envelope import Envelope, decode_envelope
from ledgerlet_services.runtime.causal_buffer import next_offsets
from ledgerlet_services.runtime.dedupe import RecentIds

#: records decoded, or events folded, between two turns a rebuild gives the event loop:
#: folding a fleet's history takes minutes, and meanwhile the lease's pings, a pool's
#: looks and the other members a process hosts must go on (a ping left waiting over 5 s
#: counts as a lost lease)
REBUILD_SLICE = 2000


@dataclass
class History:
    """What a group committed after a start (a checkpoint's offsets, or the beginning),
    to fold again."""

    #: records read back
    records: int = 0
    #: the events to fold, once each, in decision order (runs that ended left out)
    live: list[Envelope] = field(default_factory=list)
    #: runs whose end is among them
    ended: set[str] = field(default_factory=set)
    #: per partition, the next offset to read (reading goes on exactly from there)
    next_offsets: dict[TopicPartition, int] = field(default_factory=dict)


async def read_history(
    bus: Bus, group: str, topics: Sequence[str], start: dict[TopicPartition, int] | None, seen: RecentIds
) -> History:
    """What ``group`` committed on ``topics`` after ``start``, in the order to fold it:
    decoded, a batch's members in its place, a batch ``seen`` already (a copy of one
    folded before) left out, each event once."""
    records: list[Record] = await bus.history(group, topics, start=start)
    envelopes: dict[str, Envelope] = {}
    for i, rec in enumerate(records):
        if i % REBUILD_SLICE == REBUILD_SLICE - 1:
            await asyncio.sleep(0)  # (see REBUILD_SLICE)
        record = decode_envelope(rec.value)
        if record.type == BATCH and seen.seen(record.run, record.id):
            continue  # (a copy of a batch folded before: its members were too)
        for env in expand(record):
            envelopes.setdefault(env.id, env)
    ended = {e.run for e in envelopes.values() if e.type == "ScenarioEnded"}
    live = sorted((e for e in envelopes.values() if e.run not in ended), key=Envelope.sort_key)
    return History(len(records), live, ended, next_offsets(records))


async def fold(live: Sequence[Envelope], seen: RecentIds, handle: Callable[[Envelope], Iterator[object]]) -> int:
    """Fold ``live`` events with ``handle`` (output thrown away), but those ``seen`` (a copy
    of what the checkpoint holds), giving the event loop turns as it goes; how many were
    folded."""
    folded = 0
    for env in live:
        if seen.seen(env.run, env.id):
            continue
        folded += 1
        if folded % REBUILD_SLICE == 0:
            await asyncio.sleep(0)
        for _ in handle(env):
            await asyncio.sleep(0)  # (a long pass, a slice at a time)
    return folded
