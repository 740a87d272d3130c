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
from ledgerlet_store.store import open_store
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
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
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
        "eviction-manager NodesObserved",  # (the tick's observations, handled together)
        "event-recorder store PodEvicted",
    ]
    assert len({s.context.trace_id for s in chain}) == 1
    data = metrics.get_metrics_data()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"ledgerlet.events.in", "ledgerlet.events.out", "ledgerlet.decision.latency"} <= names
    telemetry.shutdown()


@pytest.mark.slow
def test_ledgerlet_run_serves_prometheus_metrics_when_asked(tmp_path: Path) -> None:
    """OTEL_METRICS_EXPORTER=prometheus (the SDK's own variables) on the embedded default:
    while the run goes, /metrics on OTEL_EXPORTER_PROMETHEUS_PORT holds the services'
    counters; once it ends, the port is let go."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    long = tmp_path / "long.yaml"
    long.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", "duration: 720h"))
    env = {**os.environ, "OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": str(port)}
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(long), "--quiet", "--run-id", "m"]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{tmp_path / 'e.db'}"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        scraped, deadline = "", time.monotonic() + 60
        while (
            'service="eviction-manager"} ' not in scraped or "ledgerlet_decision_latency_seconds_bucket" not in scraped
        ):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
            try:
                scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
        assert 'service_name="ledgerlet-embedded"' in scraped
        # decision latency in buckets sized to seconds, and the process's own resources
        latency = [
            line for line in scraped.splitlines() if line.startswith("ledgerlet_decision_latency_seconds_bucket{")
        ]
        assert {line.split('le="')[1].split('"')[0] for line in latency} >= {"0.0005", "0.001", "0.1", "30.0", "+Inf"}
        assert "10000.0" not in {line.split('le="')[1].split('"')[0] for line in latency}
        for name in ("process_resident_memory_bytes ", "process_cpu_seconds_total ", "process_open_fds "):
            assert any(line.startswith(name) for line in scraped.splitlines()), name
        counted = [line for line in scraped.splitlines() if line.startswith("ledgerlet_events_in_total{")]
        assert {'service="stats-collector"', 'service="eviction-manager"'} <= {
            part for line in counted for part in line.split("}")[0].split(",")
        }
        assert all(float(line.rsplit(" ", 1)[1]) > 0 for line in counted)
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert proc.returncode == 143


@pytest.mark.slow
def test_a_bad_exporter_stops_ledgerlet_run_before_it_starts(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "OTEL_METRICS_EXPORTER": "statsd"}
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(EXAMPLES / "memory-pressure.yaml")]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{tmp_path / 'e.db'}"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "OTEL_METRICS_EXPORTER='statsd'" in done.stderr
    assert not (tmp_path / "e.db").exists()


async def test_latency_buckets_are_seconds_and_the_process_is_measured(tmp_path: Path) -> None:
    """The decision latency's buckets run from half a millisecond to 30 s (the SDK's
    default, 0 ... 10000, is milliseconds'); RSS, CPU time and open descriptors are
    instruments of their own for OTLP and the console."""
    from ledgerlet_services.runtime.telemetry import LATENCY_BUCKETS

    metrics = InMemoryMetricReader()
    telemetry = Telemetry.build("embedded", metric_reader=metrics)
    path = EXAMPLES / "memory-pressure.yaml"
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        await run_embedded(load_scenario(path.read_text(), str(path)), store, run="tele", telemetry=telemetry)
    finally:
        await store.close()
    found = {
        m.name: m for rm in metrics.get_metrics_data().resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    points = list(found["ledgerlet.decision.latency"].data.data_points)
    assert points and all(tuple(p.explicit_bounds) == LATENCY_BUCKETS for p in points)
    assert sum(p.count for p in points) > 0
    below = sum(sum(p.bucket_counts[: LATENCY_BUCKETS.index(1.0) + 1]) for p in points)
    assert below == sum(p.count for p in points)  # the embedded run decides in well under a second
    rss = next(iter(found["process.memory.usage"].data.data_points)).value
    assert 20 << 20 < rss < 8 << 30
    cpu = {dict(p.attributes)["cpu.mode"]: p.value for p in found["process.cpu.time"].data.data_points}
    assert cpu["user"] > 0
    assert next(iter(found["process.open_file_descriptor.count"].data.data_points)).value >= 3
    telemetry.shutdown()
