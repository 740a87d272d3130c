"""A member that takes over a service folds every record its group has committed, also
what the member it replaces commits after the new one has read the group's history: a
member cut off from its lease's database goes on for some seconds before it notices, and
its commits must not make the new member skip records (on the in-memory bus and on a real
Kafka-protocol broker)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ledgerlet_bus.api import Bus, Record, TopicPartition
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from ledgerlet_services.runtime.causal_buffer import next_offsets
from ledgerlet_services.runtime.shell import ServiceRunner
from ledgerlet_services.runtime.topic_specs import topic_specs
from tests.bus.test_bus_contract import drain
from tests.services.test_snapshots import _serve, _steps, emitted, recorded
from tests.support.buses import either_bus


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.distributed)])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    async with either_bus(request, topic_specs(2)) as b:
        yield b


def _flat(steps: list[list[Record]]) -> list[Record]:
    return [r for step in steps for r in step]


async def _publish(bus: Bus, records: list[Record]) -> None:
    p = bus.producer()
    for r in records:
        await p.send(r.topic, r.value, key=r.key, headers=r.headers)
    await p.flush()
    await p.close()


async def _until_read(runner: ServiceRunner, task: asyncio.Task[None], upto: dict[TopicPartition, int]) -> None:
    """Wait until ``runner`` has handled (and so may commit) every record below ``upto``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while any(runner.buffer.consumed.get(tp, 0) < off for tp, off in upto.items()):
        if task.done():
            task.result()
        assert loop.time() < deadline, f"never read on to {upto}: stuck at {runner.buffer.consumed}"
        await asyncio.sleep(0.01)


async def test_a_member_taking_over_folds_what_the_old_one_commits_after_its_rebuild(
    bus: Bus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    steps = _steps(rec.by_loop[kind.name])
    third = len(steps) // 3
    first, more, later = _flat(steps[:third]), _flat(steps[third : 2 * third]), _flat(steps[2 * third :])
    await _serve(bus, ServiceRunner(bus, kind), first)  # the old member, until it loses its lease

    # the old member goes on handling, unaware that it lost its lease...
    await _publish(bus, more)
    old = bus.consumer(kind.name, kind.topics, whole=True)
    handled = await drain(old, len(more), timeout=20)
    assert len(handled) == len(more)
    # ...and commits them after the new member has read the history, before it fetches
    new = ServiceRunner(bus, kind)
    rebuild = new.rebuild

    async def rebuild_then_the_old_member_commits() -> int:
        folded = await rebuild()
        await old.commit(next_offsets(handled))
        return folded

    monkeypatch.setattr(new, "rebuild", rebuild_then_the_old_member_commits)
    task = asyncio.create_task(new.run())
    try:
        await _until_read(new, task, next_offsets(handled))
    finally:
        new.stop()
        await task
        await old.close()
    assert new.stats.rebuilt > 0  # (it did take over from a history)

    # every record the old member handled was folded by the new one: each comes as a copy
    before = new.stats.duplicates
    assert emitted(new, more) == []
    assert new.stats.duplicates - before == len(more)
    # and it decides on what a member that never stopped decides
    never_stopped = ServiceRunner(MemoryBus(), kind, group="x")
    emitted(never_stopped, first + more)
    decided = sorted(emitted(new, later))
    assert decided and decided == sorted(emitted(never_stopped, later))
