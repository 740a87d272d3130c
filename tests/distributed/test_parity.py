"""The distributed stack decides exactly what the embedded run decides.

Every service runs as its own OS process (``ledgerlet service NAME``) on a real
Kafka-protocol broker and the local PostgreSQL; ``ledgerlet drive`` feeds each example
in. With the same run id, the decision log must be the embedded run's byte for byte
(ids are derived from the run id and the events' places, never from wall time).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, fresh_pg_database
from tests.services.run_helpers import run_file
from tests.support.otlp import OtlpReceiver, ReceivedSpan, chain_to_root
from tests.support.stack import EVICTION_TRACE, LocalStack

pytestmark = pytest.mark.distributed

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(
    kafka_bootstrap: str, pg_server: str, otlp: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalStack]:
    namespace = f"parity{uuid.uuid4().hex[:8]}"
    telemetry = {  # every service and the driver export traces and metrics over OTLP/HTTP
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
    }
    with fresh_pg_database() as dsn:
        s = LocalStack(
            f"kafka://{kafka_bootstrap}?namespace={namespace}", dsn, tmp_path_factory.mktemp("stack"), telemetry
        )
        s.start()
        try:
            yield s
        finally:
            codes = s.stop()
            assert all(c == 0 for c in codes.values()), f"services did not stop cleanly on SIGTERM: {codes}"


@pytest.mark.parametrize("example", EXAMPLE_FILES)
async def test_separate_processes_on_kafka_and_postgres_decide_what_the_embedded_run_decides(
    example: str, stack: LocalStack, tmp_path: Path
) -> None:
    await drives_as_embedded(stack, EXAMPLES / example, tmp_path, f"parity-{example.removesuffix('.yaml')}")


async def drives_as_embedded(
    stack: LocalStack, scenario: Path, tmp_path: Path, name: str, *, order_scheme: str = ""
) -> None:
    """``scenario`` driven through ``stack`` gives the embedded run's decision log, ids
    included (the embedded run ordered as ``order_scheme``, as the stack orders it)."""
    run_id = f"{name}-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "distributed.jsonl"
    stack.finish(stack.drive(scenario, out, run_id=run_id), run_id)
    embedded, _ = await run_file(
        scenario, f"sqlite:///{tmp_path / 'embedded.db'}", run=run_id, order_scheme=order_scheme
    )
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == len(embedded) > 0
    assert got == embedded


def test_a_trace_follows_a_tick_through_every_process_to_the_stored_decision(
    stack: LocalStack, otlp: OtlpReceiver, tmp_path: Path
) -> None:
    run_id = f"trace-{uuid.uuid4().hex[:6]}"
    stack.finish(stack.drive(EXAMPLES / "memory-pressure.yaml", tmp_path / "d.jsonl", run_id=run_id), run_id)

    def stored_evictions() -> list[ReceivedSpan]:
        return [
            s
            for s in otlp.spans
            if s.name == "event-recorder store PodEvicted" and s.attributes.get("ledgerlet.run") == run_id
        ]

    deadline = time.monotonic() + 20
    while len(stored_evictions()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    evictions = stored_evictions()
    assert len(evictions) == 2  # the cache, then the api pod
    for stored in evictions:
        chain = chain_to_root(stored, otlp.spans)
        assert [(s.service, s.name) for s in chain] == EVICTION_TRACE
        assert len({s.trace_id for s in chain}) == 1
        assert chain[2].attributes["ledgerlet.node"] == "worker-1"  # the eviction manager's span


def test_services_export_metrics(stack: LocalStack, otlp: OtlpReceiver) -> None:
    deadline = time.monotonic() + 20
    wanted = {
        "ledgerlet.events.in": {
            "ledgerlet-stats-collector",
            "ledgerlet-eviction-manager",
            "ledgerlet-controller-manager",
        },
        "ledgerlet.events.out": {"ledgerlet-stats-collector", "ledgerlet-eviction-manager"},
        "ledgerlet.decision.latency": {"ledgerlet-eviction-manager"},
        "ledgerlet.consumer.lag": {"ledgerlet-eviction-manager", "ledgerlet-event-recorder"},
        "ledgerlet.events.stored": {"ledgerlet-event-recorder"},
    }
    while time.monotonic() < deadline:
        if all(services <= otlp.metrics.get(name, set()) for name, services in wanted.items()):
            return
        time.sleep(0.2)
    pytest.fail(f"metrics received: {otlp.metrics}")
