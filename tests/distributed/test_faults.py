"""Faults on the distributed stack: a service killed with SIGKILL and restarted, the
broker restarted, PostgreSQL restarted, each in the middle of a scenario. Afterwards
the run must have stored exactly the events the embedded run stores: no decision lost,
none duplicated, nothing different.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_services.runtime.catalog import needs_bus, service_names
from ledgerlet_store.runs import run_states
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES, fresh_pg_database
from tests.services.run_helpers import run_file
from tests.support import private_pg
from tests.support.brokers import Tansu, durable_tansu
from tests.support.events import Stored, assert_same_events, count_events, stored_events, wait_until_stored
from tests.support.stack import CLI, LocalStack

pytestmark = pytest.mark.distributed

SCENARIO = EXAMPLES / "disk-pressure-fluentd.yaml"  # the longest example: 161 instants, 35 decisions
SHORT_SCENARIO = Path(__file__).parents[1] / "data" / "scenarios" / "short-memory-pressure.yaml"


def _run_with_fault(
    stack: LocalStack,
    tmp_path: Path,
    fault: Callable[[], None],
    *,
    at_fraction: float = 0.3,
    scenario: Path = SCENARIO,
    order_scheme: str = "",
) -> tuple[list[Stored], list[Stored], list[dict[str, object]], list[dict[str, object]]]:
    run = f"fault-{uuid.uuid4().hex[:8]}"
    embedded_dsn = f"sqlite:///{tmp_path / 'embedded.db'}"
    embedded_log, _ = asyncio.run(run_file(scenario, embedded_dsn, run=run, order_scheme=order_scheme))
    total = asyncio.run(count_events(embedded_dsn, run))
    out = tmp_path / "distributed.jsonl"
    drive = stack.drive(scenario, out, run_id=run)
    try:
        wait_until_stored(stack.store_dsn, run, int(total * at_fraction), drive)
        fault()
        stack.finish(drive, run)
    finally:
        if drive.poll() is None:
            drive.kill()

    distributed_log = [json.loads(line) for line in out.read_text().splitlines()]
    return (
        asyncio.run(stored_events(embedded_dsn, run)),
        asyncio.run(stored_events(stack.store_dsn, run)),
        embedded_log,
        distributed_log,
    )


@pytest.fixture
def stack(kafka_bootstrap: str, pg_server: str, tmp_path: Path) -> Iterator[LocalStack]:
    with fresh_pg_database() as dsn:
        s = LocalStack(f"kafka://{kafka_bootstrap}?namespace=f{uuid.uuid4().hex[:8]}", dsn, tmp_path / "stack")
        s.start()
        try:
            yield s
        finally:
            s.stop()


def test_eviction_manager_killed_mid_scenario_and_restarted(stack: LocalStack, tmp_path: Path) -> None:
    def kill_and_restart() -> None:
        assert stack.kill("eviction-manager") == -9
        time.sleep(1.0)  # the clock waits: the eviction manager has events it has not handled
        stack.start_service("eviction-manager")

    embedded, distributed, log_e, log_d = _run_with_fault(stack, tmp_path, kill_and_restart)
    assert_same_events(embedded, distributed)
    assert log_d == log_e
    assert "rebuilt state from" in stack.tail("eviction-manager", 200)


def test_every_control_loop_killed_at_once_and_restarted(stack: LocalStack, tmp_path: Path) -> None:
    def kill_all() -> None:
        for name in ("stats-collector", "eviction-manager", "controller-manager", "event-recorder"):
            stack.kill(name)
        for name in ("stats-collector", "eviction-manager", "controller-manager", "event-recorder"):
            stack.start_service(name)

    embedded, distributed, log_e, log_d = _run_with_fault(stack, tmp_path, kill_all, at_fraction=0.5)
    assert_same_events(embedded, distributed)
    assert log_d == log_e


def test_postgresql_restarted_mid_scenario(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The database stops for two seconds mid-scenario and comes back: nothing is lost or
    stored twice. On a cluster of the test's own: stopping the machine's shared one would
    cut off every other user of it."""
    if not private_pg.available():
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    with private_pg.private_cluster() as pg:
        dsn = asyncio.run(pg.create_database("ledgerlet"))
        stack = LocalStack(f"kafka://{kafka_bootstrap}?namespace=f{uuid.uuid4().hex[:8]}", dsn, tmp_path / "stack")
        stack.start()
        try:

            def restart_postgres() -> None:
                pg.stop("fast")
                try:
                    time.sleep(2.0)  # the recorder cannot store meanwhile; the others go on
                finally:
                    pg.start()

            embedded, distributed, log_e, log_d = _run_with_fault(stack, tmp_path, restart_postgres)
            assert_same_events(embedded, distributed)
            assert log_d == log_e
            assert "retrying" in stack.tail("event-recorder", 2000), "the recorder never saw the database go"
        finally:
            stack.stop()


def test_broker_restarted_mid_scenario(pg_server: str, tmp_path: Path) -> None:
    with durable_tansu() as broker, fresh_pg_database() as dsn:
        # Tansu keeps topics and committed offsets in S3 (moto) here, so they survive the
        # restart; every request is slower, and each fetch lists a partition's batches, so
        # consumers poll less often and the scenario is a short one (OOM kills, an eviction).
        stack = LocalStack(f"{broker.url}?fetch_wait_ms=100", dsn, tmp_path / "stack").start()
        try:

            def restart_broker(b: Tansu = broker) -> None:
                b.stop()  # SIGKILL
                time.sleep(2.0)  # down for a while: producers, consumers and the clock retry
                b.start()  # on the same port, with the same storage

            embedded, distributed, log_e, log_d = _run_with_fault(
                stack, tmp_path, restart_broker, scenario=SHORT_SCENARIO, at_fraction=0.4
            )
        finally:
            stack.stop()
        assert_same_events(embedded, distributed)
        assert log_d == log_e
        logs = [stack.tail(n, 2000) for n in service_names() if needs_bus(n)]
        assert all("Connect call failed" in log for log in logs), "a service did not see the broker go"


def test_drive_killed_mid_scenario_and_driven_again_completes_the_run(stack: LocalStack, tmp_path: Path) -> None:
    """kill -9 of `ledgerlet drive` (the virtual clock) mid-scenario: the run is left
    incomplete in the store; driving it again with the same run id completes it, and the
    log and the stored events are the embedded run's."""
    run = f"redrive-{uuid.uuid4().hex[:8]}"
    embedded_dsn = f"sqlite:///{tmp_path / 'embedded.db'}"
    embedded_log, _ = asyncio.run(run_file(SCENARIO, embedded_dsn, run=run))
    total = asyncio.run(count_events(embedded_dsn, run))
    first = stack.drive(SCENARIO, tmp_path / "first.jsonl", run_id=run)
    try:
        wait_until_stored(stack.store_dsn, run, int(total * 0.3), first)
        first.kill()
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    assert not (tmp_path / "first.jsonl").exists()

    async def status() -> str:
        async with await open_store(stack.store_dsn) as store:
            return {s.run: s.status for s in await run_states(store)}[run]

    assert asyncio.run(status()) != "completed"
    again = stack.drive(SCENARIO, tmp_path / "again.jsonl", run_id=run)
    stack.finish(again, run)
    assert asyncio.run(status()) == "completed"
    log = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert log == embedded_log
    assert_same_events(asyncio.run(stored_events(embedded_dsn, run)), asyncio.run(stored_events(stack.store_dsn, run)))
    # another scenario under its run id is refused before anything is published (it mixed both)
    stored = asyncio.run(count_events(stack.store_dsn, run))
    other = stack.drive(SHORT_SCENARIO, tmp_path / "other.jsonl", run_id=run)
    assert other.wait(120) == 2
    said = " ".join((stack.workdir / f"drive-{run}.log").read_text().split())
    assert f"was started from {SCENARIO}" in said and f"not {SHORT_SCENARIO}" in said, said
    assert asyncio.run(count_events(stack.store_dsn, run)) == stored and not (tmp_path / "other.jsonl").exists()


def test_a_run_whose_inputs_were_not_stored_fails_instead_of_completing_empty(
    stack: LocalStack, tmp_path: Path
) -> None:
    """The services record into the stack's store, the driver is pointed at another one: every
    group reads everything, so the clock runs to the end, but the driver's store holds none
    of what it published. drive must not call that run completed (exit 0, no decisions)."""
    run = f"short-{uuid.uuid4().hex[:8]}"
    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    done = subprocess.run(
        [*CLI, "drive", str(SHORT_SCENARIO), "--decisions", str(tmp_path / "d.jsonl"), "--run-id", run, "--quiet"],
        env={**stack.env, "LEDGERLET_STORE": elsewhere},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "were not stored" in done.stderr and "is the recorder running" in done.stderr
    assert not (tmp_path / "d.jsonl").exists()

    async def ended() -> list[tuple[str, str]]:
        store = await open_store(elsewhere)
        try:
            events = await store.read_run(run)
        finally:
            await store.close()
        return [(e.envelope.type, decode_data(e.envelope).outcome) for e in events]

    assert asyncio.run(ended()) == [("RunEnded", "failed")]  # the failure, with its reason, kept
    # the stack's own store has the run, read and decided by every service
    assert asyncio.run(count_events(stack.store_dsn, run)) > 0
