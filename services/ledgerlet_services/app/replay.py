"""Replay: a recorded run's inputs through the control loops again.

``verify`` re-derives every decision and internal event from the stored inputs and
compares them, id by id, with what the store holds (``ledgerlet replay --verify``).
``whatif`` re-runs the same inputs under another configuration and diffs the decisions
(``ledgerlet whatif``). Both run the embedded services on an in-memory bus and collect
what they derive instead of storing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ledgerlet_core.contracts import batch
from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.batch import BATCH
from ledgerlet_core.contracts.envelope import Envelope, event_id
from ledgerlet_core.contracts.inputs import OBSERVATIONS_WHOLE
from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, observation_members, observed_count
from ledgerlet_core.contracts.registry import DECISION, INPUT, INTERNAL, decode_data, encode_data
from ledgerlet_core.controllers.config import ControllerConfig
from ledgerlet_core.kubelet.config import check_kubelet_settings, resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import DurationError, parse_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.postmortem.compare import (
    DecisionDiff,
    Mismatch,
    Recorded,
    Verifier,
    decision_diff,
    quiet_nodes,
)
from ledgerlet_core.postmortem.overrides import apply_overrides
from ledgerlet_core.scheduling.config import SchedulerConfig, config_errors
from ledgerlet_services.runtime.embedded import ServiceFailed, record_outcome, run_feed
from ledgerlet_services.runtime.recorder import DEFAULT_STORE_WAIT
from ledgerlet_services.runtime.run_binding import observations_stored_whole
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.runs import RunState, UnknownRun, pick_run, run_states
from ledgerlet_store.sql_store import SqlEventStore


class NoSuchRun(LookupError):
    """The store holds no run by that id (or no run at all)."""


@dataclass
class RecordedRun:
    """A stored run's inputs (its input batches whole, as the loops take them), what they
    started it with, and whether its derived observations were stored whole. The rest of
    what it stored is read as it is compared (:class:`VerifyingSink`), never all at once."""

    run: str
    started: ev.ScenarioStarted
    inputs: list[Envelope]
    read_seconds: float = 0.0
    full_observations: bool = False

    @property
    def input_events(self) -> int:
        """The inputs as stored events (a batch's members each)."""
        return sum(len(batch.members_of(e)) if e.type == BATCH else 1 for e in self.inputs)

    @property
    def open_loop_nodes(self) -> list[str]:
        """Nodes observed through recorded ``stats`` (their usage cannot react to a change)."""
        return sorted({e.node for e in self.inputs if e.type == "StatsReported" and e.node})


async def resolve_run(store: SqlEventStore, run: str | None) -> str:
    """``run`` if the store has it; the newest completed run when none is named."""
    return (await run_state(store, run)).run


async def run_state(store: SqlEventStore, run: str | None) -> RunState:
    """The state of ``run``: a full id or a prefix naming one run (the newest completed
    run when none is named)."""
    try:
        return pick_run(await run_states(store), run)
    except UnknownRun as exc:
        raise NoSuchRun(f"{store.describe()}: {exc}") from None


def incomplete_warning(state: RunState) -> str | None:
    """What a reader says of a run that did not complete (None for a completed one)."""
    if state.completed:
        return None
    why = f": {state.reason}" if state.reason else ""
    return (
        f"run {state.run} is incomplete ({state.status}{why}); what is stored is only part of it. "
        f"Running its scenario again with --run-id {state.run} completes it."
    )


async def read_recorded(store: SqlEventStore, run: str, *, batch: int = 20_000) -> RecordedRun:
    """A stored run's inputs, in order (and how its observations were stored)."""
    began = time.perf_counter()
    inputs = [s.envelope async for s in store.iter_run(run, batch=batch, members=False, kinds=(INPUT,))]
    started = next((e for e in inputs if e.type == "ScenarioStarted"), None)
    if started is None:
        raise NoSuchRun(f"run {run!r} has no ScenarioStarted event: nothing to replay from")
    inputs.sort(key=Envelope.sort_key)
    full = bool(await observations_stored_whole(store, run))  # (the first derived observation says)
    recorded = RecordedRun(run, decode_data(started), inputs, time.perf_counter() - began, full)
    if full and recorded.started.observations != OBSERVATIONS_WHOLE:  # (recorded before the field said so)
        recorded.started = msgspec.structs.replace(recorded.started, observations=OBSERVATIONS_WHOLE)
        data = encode_data(recorded.started)
        recorded.inputs = [
            msgspec.structs.replace(e, data=data) if e.type == "ScenarioStarted" else e for e in recorded.inputs
        ]
    return recorded


def replay_feed(recorded: RecordedRun, started: ev.ScenarioStarted | None = None) -> list[Envelope]:
    """The driver's feed: every stored input but ScenarioEnded, which the driver publishes."""
    feed = [e for e in recorded.inputs if e.type != "ScenarioEnded"]
    if started is None:
        return feed
    data = encode_data(started)
    return [msgspec.structs.replace(e, data=data) if e.type == "ScenarioStarted" else e for e in feed]


def rekeyed(feed: list[Envelope], run: str) -> list[Envelope]:
    """The inputs as another run's: ids are derived from the run id (event_id), so a
    what-if stored beside its recorded run shares no id with it (a batch's members too)."""
    ids = {e.id: event_id(run, e.t, e.order, e.type) for e in feed}

    def moved(e: Envelope) -> Envelope:
        if e.type == BATCH:
            return batch.rekey(e, run, lambda m: event_id(run, m.t, m.order, m.type))
        return msgspec.structs.replace(e, run=run, id=ids[e.id], causes=[ids.get(c, c) for c in e.causes])

    return [moved(e) for e in feed]


class DecisionsSink:
    """Keeps what the loops derived that is a decision (a re-derivation that is compared or
    written out, not stored): a run's decisions are few beside its observations."""

    def __init__(self) -> None:
        self.decisions: dict[str, Envelope] = {}

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        before = len(self.decisions)
        for env in envelopes:
            if env.kind == DECISION:
                self.decisions.setdefault(env.id, env)
        return len(self.decisions) - before


#: what a quick verification does not make again, nor compare, of a quiet node
OBSERVED = "NodeObserved"

#: how many nodes a query may name (SQLite's oldest limit on a statement's parameters is 999)
_NAMED_NODES_MAX = 900


class VerifyingSink(DecisionsSink):
    """Compares what the loops derive with what the store holds as it comes: the stored
    events are read a page at a time, as far as the re-derivation has got in virtual
    time (the store holds a run's events in about the order they were made), and paired
    by id (:class:`~ledgerlet_core.postmortem.compare.Verifier`)."""

    def __init__(
        self,
        store: SqlEventStore,
        run: str,
        *,
        page: int = 5000,
        quiet_nodes: frozenset[str] = frozenset(),
        types_by_node: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """``quiet_nodes``: nodes not observed again (quick). Their observations are left
        out of the comparison on both sides, and their status updates are compared without
        their causes (the kubelet names its node's last observation among them). With
        ``types_by_node`` (:meth:`SqlEventStore.types_by_node`) the store does not even hand
        the observations out, while the other nodes are few enough to name in the query."""
        super().__init__()
        self.verifier = Verifier()
        #: stored events read, or left out unread
        self.read = 0
        self.quiet = quiet_nodes
        #: stored events left out of the comparison (the quiet nodes' observations)
        self.left_out = 0
        only: tuple[Sequence[str], Sequence[str]] | None = None
        if quiet_nodes and types_by_node is not None:
            others = sorted(n for n in types_by_node if n not in quiet_nodes)
            if len(others) <= _NAMED_NODES_MAX:
                # (observations stored one by one are left out by the query, unread; those
                # stored in batches are read with them and left out as they come)
                only = ([OBSERVED], others)
                self.read = self.left_out = sum(types_by_node.get(n, {}).get(OBSERVED, 0) for n in quiet_nodes)
        # (a tick's observations whole, as they are derived again: compared as one; in a full
        # verification each stored event as its row, made an envelope only if it differs)
        self._stored: AsyncIterator[Recorded]
        if quiet_nodes:
            self._stored = _envelopes(
                store.iter_run(run, batch=page, kinds=(INTERNAL, DECISION), types_only_of=only, members=False)
            )
        else:
            self._stored = store.iter_run_rows(run, batch=page, kinds=(INTERNAL, DECISION))
        self._page = page
        self._done = False
        #: the next page, read while the loops derive (the store's thread works meanwhile)
        self._ahead: asyncio.Task[tuple[list[Recorded], bool]] | None = None

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        new = await super().append_batch(envelopes)
        self.verifier.derived(self._comparable(envelopes) if self.quiet else envelopes)
        while not self._done and self.verifier.recorded_t <= self.verifier.derived_t:
            await self._read(self._page)
        return new

    async def _page_of(self, count: int) -> tuple[list[Recorded], bool]:
        """The next ``count`` stored events, and whether the run has no more."""
        got: list[Recorded] = []
        async for stored in self._stored:
            got.append(stored)
            if len(got) >= count:
                return got, False
        return got, True

    async def _read(self, count: int) -> None:
        """Pair the next page (read ahead of need, if it was), and start reading the one after."""
        ahead, self._ahead = self._ahead, None
        got, self._done = await (ahead if ahead is not None else self._page_of(count))
        if not self._done:
            self._ahead = asyncio.create_task(self._page_of(self._page))
        count = sum(_members(e) for e in got)
        self.read += count
        if self.quiet:
            kept = self._comparable([e for e in got if isinstance(e, Envelope)])
            self.left_out += count - len(kept)
            self.verifier.recorded(kept)
            return
        self.verifier.recorded(got)

    def _comparable(self, envelopes: Sequence[Envelope]) -> list[Envelope]:
        """What is compared of ``envelopes`` when the quiet nodes are not observed (a tick's
        observations one by one, the quiet nodes' left out: the batches differ)."""
        out = []
        for e in envelopes:
            if e.type == OBSERVED_BATCH:
                out.extend(observation_members(e, leave_out=self.quiet))
                continue
            if e.node in self.quiet:
                if e.type == OBSERVED:
                    continue
                if e.type == "NodeStatusUpdated":
                    e = msgspec.structs.replace(e, causes=[])
            out.append(e)
        return out

    async def finish(self) -> list[Mismatch]:
        """Read what is left of the run and pair the rest: the mismatches."""
        while not self._done:
            await self._read(self._page)
        return self.verifier.finish()

    async def stop_reading(self) -> None:
        """Let go of the page being read ahead (a re-derivation that failed or was cancelled)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and not ahead.done():
            ahead.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ahead


async def _envelopes(stored: AsyncIterator[StoredEvent]) -> AsyncIterator[Recorded]:
    async for e in stored:
        yield e.envelope


def _members(e: Recorded) -> int:
    """The stored events ``e`` stands for (a tick's observations: one each)."""
    if not isinstance(e, Envelope):
        return e.members()
    return observed_count(e.data) if e.type == OBSERVED_BATCH else 1


async def rederive(
    recorded: RecordedRun,
    sink: DecisionsSink,
    *,
    started: ev.ScenarioStarted | None = None,
    progress: Callable[[int], None] | None = None,
    quiet_nodes: frozenset[str] = frozenset(),
) -> None:
    await run_feed(
        replay_feed(recorded, started),
        sink,
        run=recorded.run,
        duration=(started or recorded.started).duration,
        progress=progress,
        full_observations=recorded.full_observations,
        quiet_nodes=quiet_nodes,
    )


@dataclass
class Replay:
    """A run's stored events against what the control loops derive again from its inputs."""

    recorded: RecordedRun
    #: the decisions derived again, by id
    derived: dict[str, Envelope]
    derive_seconds: float
    #: the stored decisions and internal events read and paired, and what differed
    compared: int = 0
    stored_events: int = 0
    found: list[Mismatch] = field(default_factory=list)
    #: quick: how many nodes were not observed again, and their stored observations not compared
    quiet_count: int = 0
    left_out: int = 0

    @property
    def events_per_second(self) -> float:
        """Stored events (inputs, internal events, decisions) verified per second, reading
        included (quick: those compared, not the quiet nodes' observations left out)."""
        return (self.stored_events - self.left_out) / max(self.recorded.read_seconds + self.derive_seconds, 1e-9)

    def mismatches(self) -> list[Mismatch]:
        return self.found


async def replay_run(
    store: SqlEventStore,
    run: str | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    verify: bool = True,
    quick: bool = False,
) -> Replay:
    """Read a run and re-derive it (``ledgerlet replay``), comparing with what it stored as
    it goes when ``verify``; :class:`NoSuchRun` if it is not there. ``quick``: no
    observations of the nodes on which the run decided nothing (:func:`quiet_nodes`)."""
    recorded = await read_recorded(store, await resolve_run(store, run))
    began = time.perf_counter()
    by_node = await store.types_by_node(recorded.run) if quick else {}
    quiet = quiet_nodes(by_node)
    if not verify:
        plain = DecisionsSink()
        await rederive(recorded, plain, progress=progress, quiet_nodes=quiet)
        took = time.perf_counter() - began
        return Replay(recorded, plain.decisions, took, stored_events=recorded.input_events, quiet_count=len(quiet))
    alone = await store.types_by_node(recorded.run, batched=False) if quick else {}
    sink = VerifyingSink(store, recorded.run, quiet_nodes=quiet, types_by_node=alone)
    try:
        await rederive(recorded, sink, progress=progress, quiet_nodes=quiet)
        found = await sink.finish()
    finally:
        await sink.stop_reading()
    stored = recorded.input_events + sink.read
    took = time.perf_counter() - began
    compared = sink.verifier.compared
    return Replay(recorded, sink.decisions, took, compared, stored, found, len(quiet), sink.left_out)


@dataclass
class WhatIfReport:
    run: str
    diff: DecisionDiff
    configs: dict[str, dict[str, Any]]
    open_loop_nodes: list[str] = field(default_factory=list)
    recorded_decisions: list[Envelope] = field(default_factory=list)
    whatif_decisions: list[Envelope] = field(default_factory=list)


def unmodelled_refusal(entries: Sequence[ev.UnmodelledField]) -> str:
    """Why a what-if of such a run is refused, naming what is not modelled."""
    shown = [f"{e.object}: {e.field} ({e.plugin})" for e in entries[:5]]
    more = f"; and {len(entries) - 5} more" if len(entries) > 5 else ""
    return (
        "its scenario holds fields upstream decides by that ledgerlet does not model, so a what-if of it "
        f"may be wrong where they matter: {'; '.join(shown)}{more} (see the run's load warnings; "
        "--accept-unmodelled runs it anyway)"
    )


async def whatif_run(
    store: SqlEventStore,
    run: str | None,
    assignments: list[str],
    file_config: Mapping[str, Any] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    save_as: str | None = None,
    accept_unmodelled: bool = False,
) -> WhatIfReport:
    """Re-run the recorded inputs under changed settings; :class:`InputError` for bad ones,
    and for a run whose scenario holds fields upstream decides by that ledgerlet does not
    model (``ScenarioStarted.unmodelled``), unless ``accept_unmodelled``.

    With ``save_as`` the what-if is stored as a run of its own (its ``ScenarioStarted``
    names the run and the settings it came from), which ``report`` and ``explain`` show
    like any run, and beside the recorded one with ``--compare``."""
    base_run = await resolve_run(store, run)
    if save_as is not None and save_as in {s.run for s in await run_states(store)}:
        raise InputError(f"the store already holds a run {save_as!r}", obj="--save-as")
    recorded = await read_recorded(store, base_run)
    base = recorded.started
    if base.unmodelled and not accept_unmodelled:
        raise InputError(unmodelled_refusal(base.unmodelled), obj=f"run {recorded.run}")
    configs = apply_overrides(
        {
            "kubeletConfig": base.kubelet_config,
            "schedulerConfig": base.scheduler_config,
            "controllerConfig": base.controller_config,
        },
        assignments,
        file_config,
    )
    # refuse a bad configuration up front, as the scenario loader would: the loops would
    # otherwise fail part way (a saved what-if left half-written)
    check_kubelet_settings(configs["kubeletConfig"], obj="what-if", prefix="kubeletConfig")
    resolve_kubelet_config(configs["kubeletConfig"], obj="what-if kubeletConfig")
    scheduler = convert(configs["schedulerConfig"], SchedulerConfig, obj="what-if schedulerConfig")
    for field_name, message in config_errors(scheduler):
        raise InputError(message, obj="what-if", field=f"schedulerConfig.{field_name}")
    controller = convert(configs["controllerConfig"], ControllerConfig, obj="what-if controllerConfig")
    try:
        parse_duration(controller.node_monitor_grace_period)
    except DurationError as exc:
        raise InputError(str(exc), obj="what-if", field="controllerConfig.nodeMonitorGracePeriod") from None
    started = msgspec.structs.replace(
        base,
        kubelet_config=configs["kubeletConfig"],
        scheduler_config=configs["schedulerConfig"],
        controller_config=configs["controllerConfig"],
    )
    rec = [e.envelope for e in await store.read_run(recorded.run, kind=DECISION)]
    if save_as is None:
        sink = DecisionsSink()
        await rederive(recorded, sink, started=started, progress=progress)
        alt = sorted(sink.decisions.values(), key=Envelope.sort_key)
    else:
        changed = [*assignments, *(["--config"] if file_config else [])]
        started = msgspec.structs.replace(started, source=f"what-if of run {recorded.run}: {', '.join(changed)}")
        feed = rekeyed(replay_feed(recorded, started), save_as)
        try:
            await run_feed(
                feed,
                store,
                run=save_as,
                duration=started.duration,
                progress=progress,
                full_observations=recorded.full_observations,
                store_wait=DEFAULT_STORE_WAIT,  # (a store that stays away ends it, as a run)
            )
        except ServiceFailed as exc:  # stored as failed, as a run's driver stores it (if the store can)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(record_outcome(store, save_as, started.duration, RUN_FAILED, str(exc)), 10)
            raise
        await record_outcome(store, save_as, started.duration, RUN_COMPLETED)
        alt = [e.envelope for e in await store.read_run(save_as, kind=DECISION)]
    return WhatIfReport(recorded.run, decision_diff(rec, alt), configs, recorded.open_loop_nodes, rec, alt)
