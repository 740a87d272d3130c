"""An interrupted embedded run lets the store write under way finish.

Cancelling the run while it waited for an append once cancelled the append with it (a
task awaiting another task passes its cancellation on): the write, cut off mid-transaction,
kept SQLite's write lock, and storing the run's failure then waited a minute for it
(``ledgerlet run`` hung on SIGTERM). The engine now waits for the write shielded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime import embedded
from ledgerlet_services.runtime.embedded import ServiceFailed, _seeded_feed
from ledgerlet_services.runtime.engine import Engine
from ledgerlet_store.store import open_store
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


@pytest.mark.asyncio
async def test_an_input_that_cannot_be_made_fails_the_run_and_is_stored_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario's inputs are made as the engine takes them (runtime/input_stream.py), after
    the run has begun to store: one that cannot be made ends the run as a failed loop does."""
    path = EXAMPLES / "memory-pressure.yaml"
    scenario = load_scenario(path.read_text(), str(path))
    made = embedded.scenario_feed

    def failing(*args: Any, **kwargs: Any) -> Iterator[Envelope]:
        for i, env in enumerate(made(*args, **kwargs)):
            if i == 3:
                raise ValueError("the fourth input cannot be encoded")
            yield env

    monkeypatch.setattr(embedded, "scenario_feed", failing)
    store = await open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        with pytest.raises(ServiceFailed, match=r"driver stopped.*the fourth input cannot be encoded"):
            await embedded.run_embedded(scenario, store, run="broken")
        stored = await store.read_run("broken")
    finally:
        await store.close()
    assert stored and stored[0].envelope.type == "ScenarioStarted"  # (the run had begun)
    ended = [decode_data(e.envelope) for e in stored if e.envelope.type == "RunEnded"]
    assert [e.outcome for e in ended] == ["failed"]
