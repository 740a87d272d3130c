"""Decisions must not depend on the order in which a step's events reach a service.

Over Kafka, an event another service emitted while handling a tick can arrive before
the tick itself (they travel on different topics and partitions), and a slow consumer
sees a whole step in one batch. The shuffling in-memory bus reproduces that: consumers
read partitions in random order and amounts and now and then fall behind. Every event a
run stores, internal ones included, must come out the same.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ledgerlet_bus.api import Record
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.contracts.envelope import encode_envelope
from ledgerlet_core.contracts.internal import ClockTick
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.loops.kubelet import KubeletLoop
from ledgerlet_services.runtime.causal_buffer import root_of
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_services.runtime.shell import ServiceRunner
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

Event = tuple[str, str, int, tuple[int, ...], bytes]


async def _events(path: Path, tmp: Path, bus: MemoryBus | None) -> list[Event]:
    scenario = load_scenario(path.read_text(), str(path))
    store = await open_store(f"sqlite:///{tmp / 'events.db'}")
    try:
        await run_embedded(scenario, store, run="order", bus=bus)
        stored = await store.read_run("order")
    finally:
        await store.close()
    return [
        (e.envelope.id, e.envelope.type, e.envelope.t, tuple(e.envelope.order), bytes(e.envelope.data)) for e in stored
    ]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
async def test_every_stored_event_is_the_same_whatever_the_delivery_order(example: str, tmp_path: Path) -> None:
    path = EXAMPLES / example
    (tmp_path / "base").mkdir()
    baseline = await _events(path, tmp_path / "base", None)
    for seed in (1, 2, 3):
        (tmp_path / str(seed)).mkdir()
        shuffled = await _events(path, tmp_path / str(seed), MemoryBus(shuffle=random.Random(seed)))
        assert shuffled == baseline, f"seed {seed}: {len(set(baseline) ^ set(shuffled))} events differ"


def _record(env: object, offset: int, topic: str = "ledgerlet.decisions") -> Record:
    return Record(topic, 0, offset, None, encode_envelope(env))  # type: ignore[arg-type]


def test_an_event_is_held_until_the_step_it_descends_from_is_handled() -> None:
    tick = make_envelope(ClockTick(round=0, phase=0), run="r", t=5, order=[1, 0], stream="clock")
    derived = make_envelope(ClockTick(round=9, phase=0), run="r", t=5, order=[1, 0, 30, 0], stream="x")
    assert root_of(tick) is None and root_of(derived) == (5, (1, 0))
    runner = ServiceRunner(MemoryBus(), KubeletLoop)
    runner.handle_records([_record(derived, 7)])
    assert [h.env.id for h in runner.buffer.held] == [derived.id]
    # not committed past the held event: it must come again if the process dies now
    assert runner.commit_offsets([_record(derived, 7)]) == {("ledgerlet.decisions", 0): 7}
    runner.handle_records([_record(tick, 3, "ledgerlet.clock")])
    assert runner.buffer.held == []
    assert runner.stats.events_in == 2
    # released: both partitions committed to the end of what was read
    assert runner.commit_offsets([_record(tick, 3, "ledgerlet.clock")]) == {
        ("ledgerlet.decisions", 0): 8,
        ("ledgerlet.clock", 0): 4,
    }
