"""What a service has read but may not handle yet, and what it may commit: pure
bookkeeping, no I/O and no event loop (tests/services/test_causal_buffer.py drives it alone).

Every control loop reads every input and every clock tick, and the clock moves to the
next step only when all of them are idle, so steps are handled in order. An event another
service emitted while handling step S can still reach this service before S itself does
(they travel on different topics); handling it first would let it change what this
service decides at S. The buffer holds it until S is handled, so each service sees its
events in the causal order a replay would use, and the offsets it commits never pass an
event it holds: a process that dies before handling it reads it again.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from ledgerlet_bus.api import Record, TopicPartition
from ledgerlet_core.contracts.envelope import Envelope

#: an event's place: (virtual time, causal order)
SortKey = tuple[int, tuple[int, ...]]


@dataclass(slots=True)
class Held:
    """An event read, with its place and the record it came in."""

    key: SortKey
    env: Envelope
    record: Record


def root_of(env: Envelope) -> SortKey | None:
    """The step an event descends from: the input or clock tick at the start of its causal
    chain (None for those themselves)."""
    if len(env.order) <= 2:
        return None
    return (env.t, (env.order[0], env.order[1]))


def next_offsets(records: Sequence[Record]) -> dict[TopicPartition, int]:
    """Per partition, the offset after the last of ``records``."""
    offsets: dict[TopicPartition, int] = {}
    for r in records:
        tp = (r.topic, r.partition)
        if r.offset + 1 > offsets.get(tp, 0):
            offsets[tp] = r.offset + 1
    return offsets


class CausalBuffer:
    """Events held back until their step is handled, the last step handled per run, and
    the offsets read so far."""

    def __init__(self) -> None:
        #: per run, the last root step (an input or a tick) handled
        self.last_root: dict[str, SortKey] = {}
        #: events whose root step has not been handled yet
        self.held: list[Held] = []
        #: the next offset to read, per partition (what may be committed, held events aside)
        self.consumed: dict[TopicPartition, int] = {}

    def __bool__(self) -> bool:
        """Whether an event is held back."""
        return bool(self.held)

    def release(self, fresh: Sequence[Held], ended: Container[str] = ()) -> Iterator[Held]:
        """``fresh`` events and those held before, in causal order, but those whose step has
        not been handled yet, which are held again. The caller handles each event before
        asking for the next, and says so (:meth:`root_handled`): a step handled releases
        its descendants later in the same pass. An event of a run in ``ended`` whose step
        never came is dropped (the run was refused, or ended, meanwhile)."""
        if not fresh and not self.held:
            return
        pending = sorted([*self.held, *fresh], key=lambda h: h.key)
        self.held = []
        last_root = self.last_root
        for item in pending:
            env = item.env
            if len(env.order) > 2:  # (root_of, inlined: this runs for every event)
                done = last_root.get(env.run)
                if done is None or (env.t, (env.order[0], env.order[1])) > done:
                    if done is None and env.run in ended:
                        continue
                    self.held.append(item)
                    continue
            yield item

    def root_handled(self, run: str, key: SortKey) -> None:
        """A root step of ``run`` (an input or a tick) was handled."""
        self.last_root[run] = key

    def batch_handled(self, run: str, last: SortKey) -> None:
        """A batch's members were handled at its place (``last``: the last member's)."""
        self.last_root[run] = max(last, self.last_root.get(run, last))

    def forget(self, run: str) -> None:
        """``run`` ended (or was refused): no step of it will come."""
        self.last_root.pop(run, None)

    def read(self, records: Sequence[Record]) -> None:
        """Note records read (handled or held)."""
        for tp, off in next_offsets(records).items():
            if off > self.consumed.get(tp, 0):
                self.consumed[tp] = off

    def committable(self, records: Sequence[Record]) -> dict[TopicPartition, int]:
        """Offsets to commit once ``records`` are handled: everything read so far, but not
        past an event still held back, which must come again if the process dies before
        handling it. (A partition whose held event was released later is committed with
        the batch that released it, whatever that batch held.)"""
        self.read(records)
        offsets = dict(self.consumed)
        for item in self.held:
            tp = (item.record.topic, item.record.partition)
            if item.record.offset < offsets[tp]:
                offsets[tp] = item.record.offset
        return offsets
