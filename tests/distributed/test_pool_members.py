"""The three members of the eviction manager, and of the stats collector, hosted by a
pool of processes on Tansu and PostgreSQL (``ledgerlet service NAME --pool 3``,
runtime/pool.py), members moving mid-run: a process added mid-run takes a member the
first one hands over (with a checkpoint of its state), and when the first is then killed
with SIGKILL the one left takes every member. The run decides what the embedded run
decides (ordered by node for the eviction manager), byte for byte: nothing lost, nothing
twice."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_core.contracts.order import ORDER_BY_NODE, ORDER_BY_STEP
from ledgerlet_services.runtime.catalog import service_names
from tests.conftest import fresh_pg_database
from tests.distributed.test_faults import SCENARIO
from tests.services.run_helpers import run_file
from tests.support.events import assert_same_events, count_events, stored_events, wait_until_stored
from tests.support.stack import LocalStack

MEMBERS = 3
#: the pooled service, and the order its split gives the run (a split eviction manager
#: has it ordered by node; collector members keep the order by step: catalog.order_scheme_for)
POOLED = {"eviction-manager": ORDER_BY_NODE, "stats-collector": ORDER_BY_STEP}


@pytest.fixture(params=sorted(POOLED))
def service(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stack(service: str, kafka_bootstrap: str, pg_server: str, tmp_path: Path) -> Iterator[LocalStack]:
    with fresh_pg_database() as dsn:
        s = LocalStack(
            f"kafka://{kafka_bootstrap}?namespace=pool{uuid.uuid4().hex[:8]}",
            dsn,
            tmp_path / "stack",
            {"LEDGERLET_MEMBERS": f"{service}={MEMBERS}"},
        )
        s.start([n for n in service_names() if n not in (service, "audit-api")])
        try:
            yield s
        finally:
            s.stop()


def _wait_for_line(stack: LocalStack, process: str, text: str, count: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while stack.log_path(process).read_text(errors="replace").count(text) < count:
        assert time.monotonic() < deadline, f"{process} never logged {text!r} {count}x:\n{stack.tail(process, 60)}"
        time.sleep(0.05)


def test_members_move_between_the_processes_of_a_pool_mid_run_and_nothing_is_lost(
    service: str, stack: LocalStack, tmp_path: Path
) -> None:
    run = f"pool-{uuid.uuid4().hex[:8]}"
    embedded_dsn = f"sqlite:///{tmp_path / 'embedded.db'}"
    embedded_log, _ = asyncio.run(run_file(SCENARIO, embedded_dsn, run=run, order_scheme=POOLED[service]))
    total = asyncio.run(count_events(embedded_dsn, run))

    first = stack.start_pooled(service, "a", MEMBERS)
    stack.wait_healthy([first])
    _wait_for_line(stack, first, "took member", MEMBERS)  # alone: it hosts all three
    out = tmp_path / "distributed.jsonl"
    drive = stack.drive(SCENARIO, out, run_id=run)
    try:
        wait_until_stored(stack.store_dsn, run, int(total * 0.2), drive)
        second = stack.start_pooled(service, "b", MEMBERS)  # joins: the share is 2 of 3 now
        _wait_for_line(stack, first, "handed member")  # (one of its three, with a checkpoint)
        _wait_for_line(stack, second, "took member")
        wait_until_stored(stack.store_dsn, run, int(total * 0.6), drive)
        stored_at_kill = asyncio.run(count_events(stack.store_dsn, run))
        assert stack.kill(first) == -9  # its leases go with its sessions: the second takes all
        _wait_for_line(stack, second, "took member", MEMBERS)
        stack.finish(drive, run)
    finally:
        if drive.poll() is None:
            drive.kill()

    assert stored_at_kill < total  # (the kill came while the run went on)
    distributed_log = [json.loads(line) for line in out.read_text().splitlines()]
    assert_same_events(asyncio.run(stored_events(embedded_dsn, run)), asyncio.run(stored_events(stack.store_dsn, run)))
    assert distributed_log == embedded_log
    gave, took = stack.log_path(first).read_text(), stack.log_path(second).read_text()
    handed = re.findall(r"handed member (\d) of 3 over", gave)
    assert len(handed) == 1
    # the member handed over came with a checkpoint of what it had committed: the second
    # read nothing back for it (the two taken after the kill, what came after their newest)
    assert f"member-{handed[0]}-of-3: handed over with a checkpoint" in gave
    assert f"member-{handed[0]}-of-3: rebuilt state from a snapshot and 0 events of 0 records" in took
    assert len(re.findall(r"took member (\d) of 3", took)) == MEMBERS
