"""An interrupted embedded run lets the store write under way finish.

Cancelling the run while it waited for an append once cancelled the append with it (a
task awaiting another task passes its cancellation on): the write, cut off mid-transaction,
kept SQLite's write lock, and storing the run's failure then waited a minute for it
(``ledgerlet run`` hung on SIGTERM). The engine now waits for the write shielded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import _seeded_feed
from ledgerlet_services.runtime.engine import Engine
from tests.conftest import EXAMPLES


class GatedSink:
    """Takes nothing until ``gate`` opens; remembers whether a write was cut off."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.stored: list[Envelope] = []
        self.cut = 0

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        self.in_flight += 1
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cut += 1
            raise
        finally:
            self.in_flight -= 1
        self.stored.extend(envelopes)
        return len(envelopes)


async def _blocked_on_the_store(task: asyncio.Task[object], sink: GatedSink) -> None:
    """Poll until the run waits for the append (nothing else can move it on)."""
    for _ in range(100_000):
        if sink.in_flight and getattr(task, "_fut_waiter", None) is not None:
            return
        await asyncio.sleep(0)
    raise AssertionError("the run never waited for the store")


@pytest.mark.asyncio
async def test_cancelling_the_run_does_not_cut_the_write_under_way() -> None:
    path = EXAMPLES / "memory-pressure.yaml"
    scenario = load_scenario(path.read_text(), str(path))
    sink = GatedSink()
    decoding = SharedDecoding()
    engine = Engine(
        _seeded_feed(scenario, "cut", decoding), sink, run="cut", duration=scenario.duration, decoding=decoding
    )
    task = asyncio.ensure_future(engine.run())
    await _blocked_on_the_store(task, sink)
    task.cancel()
    for _ in range(100):  # (the engine answers the cancellation by waiting for the write)
        await asyncio.sleep(0)
    assert not task.done() and sink.cut == 0
    sink.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sink.cut == 0 and sink.stored  # the write finished, and is counted
    assert engine.stored == len(sink.stored)
