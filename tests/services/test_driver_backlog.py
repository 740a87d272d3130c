"""The driver puts an instant's inputs on the in-memory bus a bounded amount at a time: a
fleet's starting state is never on the bus whole, and what is decided does not change."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ledgerlet_bus.api import Record
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_services.runtime import embedded
from ledgerlet_services.runtime.embedded import FETCH_MAX_BYTES
from ledgerlet_services.runtime.topic_specs import INPUTS
from tests.golden.cases import golden_path
from tests.golden.replay_case import decision_log

CASE = "bench-eviction-fleet"  # 8 nodes x 12 bound pods, observed for 40 minutes


class _Watched(MemoryBus):
    """Notes the most input bytes it ever held at once (records not yet read by all)."""

    def __init__(self) -> None:
        super().__init__(fetch_max_bytes=FETCH_MAX_BYTES)
        self.most_held = 0
        self.largest = 0

    def append(self, topic: str, value: bytes, key: bytes | None, headers: Sequence[tuple[str, bytes]]) -> Record:
        rec = super().append(topic, value, key, headers)
        if topic == INPUTS:
            self.largest = max(self.largest, len(value))
            held = sum(len(r.value) for part in self._partitions(INPUTS) for r in part.records)
            self.most_held = max(self.most_held, held)
        return rec


async def _run(tmp_path: Path, name: str) -> tuple[bytes, _Watched]:
    bus = _Watched()
    (tmp_path / name).mkdir()
    return await decision_log(CASE, tmp_path / name, bus=bus), bus


@pytest.mark.slow
async def test_an_instants_inputs_are_published_a_bounded_amount_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "MAX_BACKLOG_BYTES", None)
    whole_log, whole = await _run(tmp_path, "whole")
    bound = 16 << 10  # more than any one record here
    monkeypatch.setattr(embedded, "MAX_BACKLOG_BYTES", bound)
    bounded_log, bounded = await _run(tmp_path, "bounded")

    assert bounded.largest < bound
    assert whole.most_held > 4 * bound  # all at once, the bus held it whole
    # (the recorder may still trail earlier instants by a record or so: max_follower_lag)
    assert bounded.most_held <= bound + bounded.largest
    assert bounded_log == whole_log == golden_path(CASE).read_bytes()
