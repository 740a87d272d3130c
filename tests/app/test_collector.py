"""The cyclic collector is paused where the command line reads a scenario (app/collector.py),
not in the loader (40 % of reading a 5,000-node fleet was the collector walking objects
that live on)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_services.app import recording_import
from ledgerlet_services.app.collector import collector_paused
from ledgerlet_services.app.commands import common
from tests.conftest import EXAMPLES

RECORDED = Path(__file__).parents[1] / "data" / "recordings" / "kind-v1.31"


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector on for the test, and as it was after."""
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was_enabled:
            gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_paused_for_the_block_and_left_as_it_was() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="refused"), collector_paused():
        raise ValueError("refused")
    assert gc.isenabled()  # (and after an error)
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # a caller that paused it keeps it paused


def _watching(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[bool]:
    """Whether the collector was on each time ``module`` loaded a scenario."""
    during: list[bool] = []

    def watched(text: str, source: str = "<scenario>") -> Scenario:
        during.append(gc.isenabled())
        return load_scenario(text, source)

    monkeypatch.setattr(module, "load_scenario", watched)
    return during


@pytest.mark.usefixtures("collector_on")
def test_the_command_lines_scenario_is_read_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    during = _watching(monkeypatch, common)
    assert common.load_or_report(EXAMPLES / "memory-pressure.yaml", Console()) is not None
    assert during == [False] and gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_an_imported_recording_is_checked_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    during = _watching(monkeypatch, recording_import)
    inputs = [RECORDED / "kubectl-get-nodes-pods.yaml", *sorted(RECORDED.glob("summary-*.json"))]
    recording_import.import_files(inputs=inputs, name="imported", out=tmp_path / "out.yaml")
    assert during == [False] and gc.isenabled()
