"""Replay: a recorded run's inputs through the control loops again.

``verify`` re-derives every decision and internal event from the stored inputs and
compares them, id by id, with what the store holds (``ledgerlet replay --verify``).
``whatif`` re-runs the same inputs under another configuration and diffs the decisions
(``ledgerlet whatif``). Both run the embedded services on an in-memory bus and collect
what they derive instead of storing it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ledgerlet_core.contracts import batch
from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.batch import BATCH
from ledgerlet_core.contracts.envelope import Envelope, event_id
from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED
from ledgerlet_core.contracts.registry import DECISION, INPUT, decode_data, encode_data
from ledgerlet_core.controllers.config import ControllerConfig
from ledgerlet_core.kubelet.config import check_kubelet_settings, resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import DurationError, parse_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.postmortem.compare import DecisionDiff, Mismatch, decision_diff, verify
from ledgerlet_core.postmortem.overrides import apply_overrides
from ledgerlet_core.scheduling.config import SchedulerConfig, config_errors
from ledgerlet_services.runtime.embedded import ServiceFailed, record_outcome, run_feed
from ledgerlet_services.runtime.recorder import CollectingSink
from ledgerlet_store.store import EventStore, RunState, UnknownRun, pick_run


class NoSuchRun(LookupError):
    """The store holds no run by that id (or no run at all)."""


@dataclass
class RecordedRun:
    run: str
    started: ev.ScenarioStarted
    inputs: list[Envelope]
    others: list[Envelope]
    read_seconds: float = 0.0
    #: how the run ended (``RunEnded``: stored by what drove it, not derived by its loops)
    ended: list[Envelope] = field(default_factory=list)

    @property
    def events(self) -> int:
        return len(self.inputs) + len(self.others) + len(self.ended)

    @property
    def full_observations(self) -> bool:
        """Whether derived observations were stored with every pod's stats."""
        return any(
            e.type == "NodeObserved" and b'"source":"usage"' in bytes(e.data) and b'"podsOmitted"' not in bytes(e.data)
            for e in self.others
        )

    @property
    def open_loop_nodes(self) -> list[str]:
        """Nodes observed through recorded ``stats`` (their usage cannot react to a change)."""
        return sorted({e.node for e in self.inputs if e.type == "StatsReported" and e.node})


async def resolve_run(store: EventStore, run: str | None) -> str:
    """``run`` if the store has it; the newest completed run when none is named."""
    return (await run_state(store, run)).run


async def run_state(store: EventStore, run: str | None) -> RunState:
    """The state of ``run``: a full id or a prefix naming one run (the newest completed
    run when none is named)."""
    try:
        return pick_run(await store.run_states(), run)
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


async def read_recorded(store: EventStore, run: str, *, batch: int = 20_000) -> RecordedRun:
    began = time.perf_counter()
    inputs: list[Envelope] = []
    others: list[Envelope] = []
    ended: list[Envelope] = []
    async for stored in store.iter_run(run, batch=batch, members=False):
        env = stored.envelope
        (ended if env.type == "RunEnded" else inputs if env.kind == INPUT else others).append(env)
    started = next((e for e in inputs if e.type == "ScenarioStarted"), None)
    if started is None:
        raise NoSuchRun(f"run {run!r} has no ScenarioStarted event: nothing to replay from")
    inputs.sort(key=Envelope.sort_key)
    others.sort(key=Envelope.sort_key)
    return RecordedRun(run, decode_data(started), inputs, others, time.perf_counter() - began, ended)


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


async def rederive(
    recorded: RecordedRun,
    *,
    started: ev.ScenarioStarted | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Envelope]:
    sink = CollectingSink()
    await run_feed(
        replay_feed(recorded, started),
        sink,
        run=recorded.run,
        duration=(started or recorded.started).duration,
        progress=progress,
        full_observations=recorded.full_observations,
    )
    return sink.events


@dataclass
class Replay:
    """A run's stored events and what the control loops derive again from its inputs."""

    recorded: RecordedRun
    derived: dict[str, Envelope]
    derive_seconds: float

    @property
    def events_per_second(self) -> float:
        return self.recorded.events / max(self.recorded.read_seconds + self.derive_seconds, 1e-9)

    def mismatches(self) -> list[Mismatch]:
        return verify(self.recorded.others, self.derived)


async def replay_run(
    store: EventStore, run: str | None = None, *, progress: Callable[[int], None] | None = None
) -> Replay:
    """Read a run and re-derive it (``ledgerlet replay``); :class:`NoSuchRun` if it is not there."""
    recorded = await read_recorded(store, await resolve_run(store, run))
    began = time.perf_counter()
    derived = await rederive(recorded, progress=progress)
    return Replay(recorded, derived, time.perf_counter() - began)


@dataclass
class WhatIfReport:
    run: str
    diff: DecisionDiff
    configs: dict[str, dict[str, Any]]
    open_loop_nodes: list[str] = field(default_factory=list)
    recorded_decisions: list[Envelope] = field(default_factory=list)
    whatif_decisions: list[Envelope] = field(default_factory=list)


async def whatif_run(
    store: EventStore,
    run: str | None,
    assignments: list[str],
    file_config: Mapping[str, Any] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    save_as: str | None = None,
) -> WhatIfReport:
    """Re-run the recorded inputs under changed settings; :class:`InputError` for bad ones.

    With ``save_as`` the what-if is stored as a run of its own (its ``ScenarioStarted``
    names the run and the settings it came from), which ``report`` and ``explain`` show
    like any run, and beside the recorded one with ``--compare``."""
    base_run = await resolve_run(store, run)
    if save_as is not None and save_as in {s.run for s in await store.run_states()}:
        raise InputError(f"the store already holds a run {save_as!r}", obj="--save-as")
    recorded = await read_recorded(store, base_run)
    base = recorded.started
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
    rec = [e for e in recorded.others if e.kind == DECISION]
    if save_as is None:
        derived = await rederive(recorded, started=started, progress=progress)
        alt = sorted((e for e in derived.values() if e.kind == DECISION), key=Envelope.sort_key)
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
            )
        except ServiceFailed as exc:  # stored as failed, as a run's driver stores it
            await record_outcome(store, save_as, started.duration, RUN_FAILED, str(exc))
            raise
        await record_outcome(store, save_as, started.duration, RUN_COMPLETED)
        alt = [e.envelope for e in await store.read_run(save_as, kind=DECISION)]
    return WhatIfReport(recorded.run, decision_diff(rec, alt), configs, recorded.open_loop_nodes, rec, alt)
