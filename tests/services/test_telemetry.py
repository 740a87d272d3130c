"""Telemetry: exporters chosen by the standard OpenTelemetry variables, and a trace
that follows a tick of the clock through the services to what they decided."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_store.store import EventStore
from tests.conftest import EXAMPLES


def test_exporters_are_off_unless_asked_for() -> None:
    t = Telemetry.from_env("x", {})
    assert not t.tracing and not t.metering
    t = Telemetry.from_env("x", {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"})
    assert t.tracing and not t.metering
    t.shutdown()


def test_an_unknown_exporter_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER='jaeger'"):
        Telemetry.from_env("x", {"OTEL_TRACES_EXPORTER": "jaeger"})


async def test_spans_link_the_clock_to_the_stored_eviction_and_metrics_count_events(tmp_path: Path) -> None:
    spans = InMemorySpanExporter()
    metrics = InMemoryMetricReader()
    telemetry = Telemetry.build("embedded", span_exporter=spans, metric_reader=metrics)
    path = EXAMPLES / "memory-pressure.yaml"
    store = await EventStore.open(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        await run_embedded(load_scenario(path.read_text(), str(path)), store, run="tele", telemetry=telemetry)
    finally:
        await store.close()
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    stored = [s for s in finished if s.name == "event-recorder store PodEvicted"]
    assert len(stored) == 2
    chain = [stored[0]]
    while chain[-1].parent is not None:
        chain.append(by_id[chain[-1].parent.span_id])
    assert [s.name for s in reversed(chain)] == [
        "clock ClockTick",
        "stats-collector ClockTick",
        "eviction-manager NodeObserved",
        "event-recorder store PodEvicted",
    ]
    assert len({s.context.trace_id for s in chain}) == 1
    data = metrics.get_metrics_data()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"ledgerlet.events.in", "ledgerlet.events.out", "ledgerlet.decision.latency"} <= names
    telemetry.shutdown()
