"""The loop every service runs: consume a batch, handle it, publish, then commit.

Offsets are committed only after everything the batch produced is acknowledged, so a
crash at any point loses nothing: the batch is delivered again, handlers skip event
ids they have seen, and re-derived decisions carry the same ids as before (the store
and downstream consumers drop them). Batching amortises produce and commit round trips
over up to ``max_records`` events (the hot path is per batch, not per message).

State is per run: each run id gets a fresh service instance, dropped when the run's
``ScenarioEnded`` has been handled, so one long-lived process serves run after run.

The runner is put together from parts: what it may handle yet and commit (causal_buffer.py,
pure), its traffic with the bus (publishing.py), the state rebuilt at a restart
(recovery.py) and the checkpoints that shorten it (snapshot_policy.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ledgerlet_bus.api import Bus, Record, TopicPartition
from ledgerlet_bus.retry import Stopped
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts.batch import BATCH, expand
from ledgerlet_core.contracts.envelope import Envelope, decode_envelope
from ledgerlet_core.contracts.observed import BATCH_KEY
from ledgerlet_core.contracts.topics import OBSERVATIONS
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership, group_of
from ledgerlet_services.loops.base import Loop, RunRefused
from ledgerlet_services.runtime.causal_buffer import CausalBuffer, Held, SortKey
from ledgerlet_services.runtime.dedupe import RecentIds
from ledgerlet_services.runtime.outgoing import Outgoing, routed
from ledgerlet_services.runtime.publishing import commit, poll, publish, stream
from ledgerlet_services.runtime.recovery import fold, read_history
from ledgerlet_services.runtime.snapshot_codec import RunnerState
from ledgerlet_services.runtime.snapshot_policy import Snapshots
from ledgerlet_services.runtime.telemetry import Telemetry

log = logging.getLogger(__name__)

#: runs whose end was handled, remembered so stray redeliveries do not start them again
_ENDED_RUNS_KEPT = 10_000


@dataclass
class RunnerStats:
    events_in: int = 0
    events_out: int = 0
    duplicates: int = 0
    batches: int = 0
    rebuilt: int = 0
    #: records read back at the start (from the snapshot's offsets on, where there was one)
    rebuilt_records: int = 0
    #: other members' nodes' observations, dropped undecoded (a split node-scoped service)
    foreign: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    #: runs the loop refused to serve (loops/base.py RunRefused), skipped whole
    refused: list[str] = field(default_factory=list)


def _foreign_to(member: Membership) -> Callable[[bytes], bool]:
    """Whether a record keyed so is about a node ``member`` does not own (cached: a fleet
    has thousands of nodes, each observed every pass)."""
    known: dict[bytes, bool] = {BATCH_KEY.encode(): False}  # (a batch holds every member's nodes)

    def foreign(key: bytes) -> bool:
        found = known.get(key)
        if found is None:
            found = known[key] = not member.owns(key.decode())
        return found

    return foreign


def not_splittable(name: str) -> str:
    """Why a service that is not ``Loop.splittable`` cannot be given a member."""
    return f"{name} cannot be split between members (only the stats collector and the eviction manager can)"


class ServiceRunner:
    def __init__(
        self,
        bus: Bus,
        service: type[Loop],
        *,
        group: str | None = None,
        max_records: int = 2000,
        telemetry: Telemetry | None = None,
        envelopes: SharedEnvelopes | None = None,
        snapshots: Snapshots | None = None,
        quiet_nodes: frozenset[str] = frozenset(),
        member: Membership | None = None,
        decoding: SharedDecoding | None = None,
    ) -> None:
        """``envelopes``: decoding shared with the other runners of an embedded run;
        ``decoding``: the objects its loops decode, shared with the other runners of the
        process (else the runner's own);
        ``snapshots``: where the state is checkpointed (see runtime/snapshot_policy.py);
        ``quiet_nodes``: nodes the loop makes no observations of (:meth:`Loop.set_quiet_nodes`);
        ``member``: this runner's share of a split service (loop/membership.py), whose group
        is its own (every member reads every record)."""
        if member is not None and not service.splittable:
            raise ValueError(not_splittable(service.name))
        self.bus = bus
        self._decode: Callable[[bytes, str], Envelope] = (
            envelopes.decode if envelopes is not None else lambda value, _: decode_envelope(value)
        )
        self._expand: Callable[[Envelope, str], tuple[list[Envelope], dict[str, Any] | None]] = (
            envelopes.expand if envelopes is not None else lambda batch, _: (expand(batch), None)
        )
        self.kind = service
        self.decoding = decoding if decoding is not None else SharedDecoding()
        self.name = service.name
        self.rank = service.rank
        self.topics = service.topics
        self.member = member
        self._keep = service.keeper(member) if member is not None else None
        #: a node-scoped member's test for another member's node's observation, read and
        #: dropped undecoded (the record's key is the node); not when the decoding is shared
        #: with other runners, which would keep it for this one (and it costs this one nothing)
        self._foreign: Callable[[bytes], bool] | None = (
            _foreign_to(member) if member is not None and service.node_scoped and envelopes is None else None
        )
        self.group = group or group_of(service.name, member)
        self.max_records = max_records
        self.telemetry = telemetry or Telemetry.disabled()
        self.snapshots = snapshots
        self.quiet_nodes = quiet_nodes
        #: the offsets of a checkpoint that is due but could not start yet
        self._checkpoint_due: dict[TopicPartition, int] | None = None
        self.stats = RunnerStats()
        self.instances: dict[str, Loop] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._seen = RecentIds()
        #: what is held back until its step is handled, and what may be committed
        self.buffer = CausalBuffer()
        self._stop = asyncio.Event()
        #: called on every turn of the loop (a liveness signal)
        self.heartbeat: Callable[[], None] | None = None
        #: set once the service has rebuilt its state and consumes new events
        self.ready = asyncio.Event()
        self._handing_over = False

    def stop(self) -> None:
        self._stop.set()

    def hand_over(self) -> None:
        """Stop at the next point where the state reflects exactly what was committed
        (a batch published and committed, no event held back), checkpointing it there, so
        the process that takes this member over folds only what comes after
        (runtime/pool.py). Unlike :meth:`stop`, the batch in hand is finished."""
        self._handing_over = True

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def run(self) -> None:
        consumer = self.bus.consumer(self.group, self.topics, whole=True)
        producer = self.bus.producer()
        try:
            try:
                await self.rebuild()
            except Stopped:
                return  # (told to stop while waiting for the snapshot's database)
            await consumer.seek(self.buffer.consumed)  # (see recovery.py)
            #: the offsets the state reflects exactly (what was rebuilt, then the last batch
            #: committed), if so; a rebuild from a snapshot alone has nothing to add to it
            clean: dict[TopicPartition, int] | None = dict(self.buffer.consumed) if self.stats.rebuilt_records else None
            self.ready.set()
            while not self._stop.is_set():
                if self.heartbeat is not None:
                    self.heartbeat()
                if self._handing_over and not self.buffer:
                    if clean is not None and self.snapshots is not None:
                        saved = await self.checkpoint(clean)
                        log.info(
                            "%s: handed over %s", self.group, "with a checkpoint" if saved else "(not checkpointed)"
                        )
                    return
                records = await poll(consumer, self.max_records, self.name)
                if not records:
                    if self._checkpoint_due is not None:  # idle: what the last batch could not start
                        self.checkpoint_aside(self._checkpoint_due)
                    continue
                began = time.perf_counter()
                outgoing: list[Outgoing] = []
                streamed: set[int] = set()
                for chunk in self._batch(records, outgoing):
                    await stream(producer, chunk, streamed)
                if not await publish(producer, outgoing, streamed, who=self.name, stop=self._stop):
                    return  # stopping: the batch is not committed and will be handled again
                took = time.perf_counter() - began
                self.telemetry.batch_done(self.group, outgoing, took)  # (a member by its own group)
                self.stats.events_out += sum(o.events for o in outgoing)
                offsets = self.commit_offsets(records)
                committed = await commit(consumer, offsets, self.name, stop=self._stop)
                if committed is None:
                    return  # stopping while the broker is away: the batch comes again
                clean = offsets if committed else None
                if self.snapshots is not None:
                    due = self.snapshots.count(len(records), took) or self._checkpoint_due is not None
                    if due and committed:
                        self.checkpoint_aside(offsets)
                    elif not committed:
                        self._checkpoint_due = None  # (the next committed batch is due again)
                # let the other services of this process take their turn: on the in-memory
                # bus nothing above waits while records are there, and one loop would read
                # a fleet's whole starting state before the others began (what they share
                # is kept until every one has read it)
                await asyncio.sleep(0)
        finally:
            if self.snapshots is not None:
                await self.snapshots.close()
            await producer.close()
            await consumer.close()

    # -- state ---------------------------------------------------------------------
    def instance(self, run: str) -> Loop | None:
        """The service's state for ``run`` (a new one for a run not seen before)."""
        svc = self.instances.get(run)
        if svc is None:
            if run in self._ended:
                return None
            svc = self.instances[run] = self.kind(ClusterView(self.decoding))
            if self.quiet_nodes:
                svc.set_quiet_nodes(self.quiet_nodes)
            if self.member is not None:
                svc.set_membership(self.member)
        return svc

    def _ended_run(self, run: str) -> None:
        self.instances.pop(run, None)
        self._seen.forget(run)
        self.buffer.forget(run)
        self._ended[run] = None
        if len(self._ended) > _ENDED_RUNS_KEPT:
            self._ended.popitem(last=False)

    async def rebuild(self) -> int:
        """Fold again what the group has committed (recovery.py), from the newest
        snapshot on where there is one; how many events were folded. Raises
        :class:`Stopped` if told to stop while waiting for the snapshot's database."""
        began = time.perf_counter()
        start: dict[TopicPartition, int] | None = None
        loaded = await self.snapshots.load(self._stop, self.decoding) if self.snapshots is not None else None
        if loaded is not None:
            state, start = loaded
            self.adopt(state)
            self.buffer.consumed = dict(start)
        history = await read_history(self.bus, self.group, self.topics, start, self._seen)
        for tp, off in history.next_offsets.items():
            self.buffer.consumed[tp] = max(off, self.buffer.consumed.get(tp, 0))
        if self.snapshots is not None:
            self.snapshots.folded += history.records
        folded = await fold(history.live, self._seen, lambda env: self._handle(env, None))
        for run in sorted(history.ended):
            self._ended_run(run)
        self.stats.rebuilt = folded
        self.stats.rebuilt_records = history.records
        log.info(
            "%s: rebuilt state from %s%d events of %d records (%d runs ended) in %.2f s",
            self.group,  # (a member by its own group)
            "a snapshot and " if loaded is not None else "",
            folded,
            history.records,
            len(history.ended),
            time.perf_counter() - began,
        )
        return folded

    def adopt(self, state: RunnerState) -> None:
        """Take up a snapshot's state (before anything else is handled)."""
        self.instances, self._ended, self._seen, self.buffer.last_root = (
            state.instances,
            state.ended,
            state.seen,
            state.last_root,
        )

    def state(self) -> RunnerState:
        """What folding the committed records gave (a snapshot's content)."""
        return RunnerState(self.instances, self._ended, self._seen, self.buffer.last_root)

    async def checkpoint(self, offsets: dict[TopicPartition, int]) -> bool:
        """Save the state as of ``offsets`` (just committed) and wait until it is stored
        (whether it was); nothing is saved while an event is held back: the state then
        reflects records beyond what was committed, and the held event's own offset is
        what a restart reads from."""
        if self.snapshots is None or self.buffer:
            return False
        return await self.snapshots.save(self.state(), offsets)

    def checkpoint_aside(self, offsets: dict[TopicPartition, int]) -> None:
        """Start saving the state as of ``offsets`` and go on handling meanwhile (the
        state is pickled as it is now by a forked child: runtime/snapshot_policy.py). One that
        cannot start now (another is under way, an event is held) is started when the
        service is next idle, as of what it has committed by then, and so is one whose
        turn has not come (another service of the machine is checkpointing); one that
        fails to start (the fork refused) waits for the next interval, not the next idle
        poll."""
        if self.snapshots is None:
            return
        busy = bool(self.buffer) or self.snapshots.saving
        if not busy:
            self.snapshots.begin(self.state(), offsets)
        self._checkpoint_due = offsets if busy or self.snapshots.waiting_for_host else None

    def handle_records(self, records: list[Record]) -> list[Outgoing]:
        """Handle a batch; what it emitted (see :meth:`_batch`)."""
        outgoing: list[Outgoing] = []
        for _ in self._batch(records, outgoing):
            pass
        return outgoing

    def _batch(self, records: list[Record], outgoing: list[Outgoing]) -> Iterator[list[Outgoing]]:
        """Handle a batch in causal order, holding back events whose root step has not
        been handled yet (causal_buffer.py). Everything emitted goes to ``outgoing``;
        what a long handler emitted so far is also yielded as it goes, so it can be
        sent while the handler works on (a pass over thousands of nodes)."""
        self.stats.batches += 1
        fresh: list[Held] = []
        foreign = self._foreign
        for rec in records:
            if foreign is not None and rec.topic == OBSERVATIONS and rec.key is not None and foreign(rec.key):
                self.stats.foreign += 1
                continue
            env = self._decode(rec.value, rec.topic)
            if env.run in self._ended or self._seen.seen(env.run, env.id):
                self.stats.duplicates += 1
                continue
            fresh.append(Held(env.sort_key(), env, rec))
        self.telemetry.events_in(self.group, len(records))
        for item in self.buffer.release(fresh, self._ended):
            env = item.env
            if env.type == BATCH:
                self._handle_members(env, outgoing, item.record.headers, item.record.topic)
            else:
                yield from self._handle(env, outgoing, item.record.headers, item.key)

    def _handle_members(
        self, batch: Envelope, outgoing: list[Outgoing] | None, headers: Headers = (), topic: str = ""
    ) -> None:
        """Handle a batch's members one after another, each as the input it stands for
        (with an emitter of its own), at the batch's place: nothing can fall between two
        of them but events derived from an earlier step, whose order against the step's
        inputs the loops never depend on (see the module docstring). The shell's own
        bookkeeping is paid once for the batch."""
        svc = self.instance(batch.run)
        if svc is None:
            return
        members, memo = self._expand(batch, topic)
        tracing = outgoing is not None and self.telemetry.tracing
        span = self.telemetry.handling(self.name, batch, headers) if tracing else _NO_SPAN
        with span as out_headers:
            for member in members:
                if not svc.wants(member):
                    continue
                emitter = Emitter(member, self.rank, keep=self._keep, place=svc.node_place())
                steps = svc.handle(member, emitter, memo)
                for _ in steps if steps is not None else ():  # (inputs are handled at once)
                    pass
                if outgoing is not None and emitter.out:
                    emitted = [routed(e) for e in emitter.out]
                    for o in emitted:
                        o.headers = out_headers
                    outgoing.extend(emitted)
        self.buffer.batch_handled(batch.run, members[-1].sort_key())
        if outgoing is not None:
            self.stats.events_in += len(members)
            by_type = self.stats.by_type
            for member in members:
                by_type[member.type] = by_type.get(member.type, 0) + 1

    def _handle(
        self, env: Envelope, outgoing: list[Outgoing] | None, headers: Headers = (), key: SortKey | None = None
    ) -> Iterator[list[Outgoing]]:
        """Handle one event; its output goes to ``outgoing`` (None: thrown away). A
        handler that yields (a long pass) has what it emitted so far yielded on."""
        svc = self.instance(env.run)
        if svc is None:
            return
        if len(env.order) <= 2:  # a root step (causal_buffer.root_of)
            self.buffer.root_handled(env.run, key or env.sort_key())
        emitter = Emitter(env, self.rank, keep=self._keep, place=svc.node_place())
        if outgoing is not None:
            self.stats.events_in += 1
            by_type = self.stats.by_type
            by_type[env.type] = by_type.get(env.type, 0) + 1
        tracing = outgoing is not None and self.telemetry.tracing
        span = self.telemetry.handling(self.name, env, headers) if tracing else _NO_SPAN
        done = 0
        with span as out_headers:
            try:
                steps = svc.handle(env, emitter)
            except RunRefused as exc:
                log.error("%s: %s; the run's events are skipped", self.group, exc)
                self.stats.refused.append(env.run)
                self._ended_run(env.run)
                return
            for _ in steps if steps is not None else ():
                if outgoing is not None and len(emitter.out) > done:
                    chunk = [routed(e) for e in emitter.out[done:]]
                    done = len(emitter.out)
                    for o in chunk:
                        o.headers = out_headers
                    outgoing.extend(chunk)
                    yield chunk
        if outgoing is not None and len(emitter.out) > done:
            rest = [routed(e) for e in emitter.out[done:]]
            for o in rest:
                o.headers = out_headers
            outgoing.extend(rest)
        if env.type == "ScenarioEnded":
            self._ended_run(env.run)

    def commit_offsets(self, records: list[Record]) -> dict[TopicPartition, int]:
        """Offsets to commit once ``records`` are handled (CausalBuffer.committable)."""
        return self.buffer.committable(records)


Headers = tuple[tuple[str, bytes], ...]

#: the span of an event handled without tracing (nullcontext is reusable)
_NO_SPAN: contextlib.nullcontext[Headers] = contextlib.nullcontext(())


class SharedEnvelopes:
    """Envelopes decoded once for the runners of one embedded run, which all read the same
    records (a runner alone in its process, as in the distributed stack, decodes its own).
    Envelopes are never changed in place, only replaced.

    An envelope is let go once every reader of its topic has asked for it (``loops``: how
    many loops read each topic, and ``recorders`` read every topic), a batch's members once
    every loop reading its topic has (recorders store batches as they are), so what is
    kept is what lies between the
    slowest reader and the fastest, however far apart they are (a fleet's starting state
    is half a million members, read by six loops at their own pace). What a reader never
    asks for (a run it has ended) is dropped past ``kept_bytes`` of records or
    ``kept_members`` members, the oldest first."""

    def __init__(
        self,
        loops: Mapping[str, int] | None = None,
        recorders: int = 1,
        *,
        kept_bytes: int = 256 << 20,
        kept_members: int = 1 << 18,
    ) -> None:
        self._readers = {t: n + recorders for t, n in (loops or {}).items()}
        self._expanders = dict(loops or {})
        self._kept_bytes = kept_bytes
        self._kept_members = kept_members
        self._bytes = 0
        #: record bytes -> [envelope, readers still to ask]
        self._envelopes: OrderedDict[bytes, list[Any]] = OrderedDict()
        self._member_count = 0
        #: batch id -> [members, readers still to ask]
        self._members: OrderedDict[str, list[Any]] = OrderedDict()

    def decode(self, value: bytes, topic: str = "") -> Envelope:
        """The envelope of a record of ``topic``."""
        found = self._envelopes.get(value)
        if found is None:
            env = decode_envelope(value)
            left = self._readers.get(topic, 0) - 1
            if left > 0:
                self._envelopes[value] = [env, left]
                self._bytes += len(value)
                while self._bytes > self._kept_bytes and len(self._envelopes) > 1:
                    old, _ = self._envelopes.popitem(last=False)
                    self._bytes -= len(old)
            return env
        env = found[0]
        found[1] -= 1
        if found[1] <= 0:
            del self._envelopes[value]
            self._bytes -= len(value)
        return cast(Envelope, env)

    def expand(self, batch: Envelope, topic: str = "") -> tuple[list[Envelope], dict[str, Any]]:
        """A batch's members (:func:`~ledgerlet_core.contracts.batch.expand`), once, and
        what the loops decoded of them for the cluster view (``Loop.handle``'s ``memo``):
        every loop folds the same pods, each read once."""
        found = self._members.get(batch.id)
        if found is None:
            members, memo = expand(batch), cast(dict[str, Any], {})
            left = self._expanders.get(topic, 0) - 1
            if left > 0:
                self._members[batch.id] = [members, left, memo]
                self._member_count += len(members)
                while self._member_count > self._kept_members and len(self._members) > 1:
                    _, (gone, _, _) = self._members.popitem(last=False)
                    self._member_count -= len(gone)
            return members, memo
        members, _, memo = found
        found[1] -= 1
        if found[1] <= 0:
            del self._members[batch.id]
            self._member_count -= len(members)
        return members, memo

    def __len__(self) -> int:
        """Envelopes and batches kept (waiting for a reader)."""
        return len(self._envelopes) + len(self._members)
