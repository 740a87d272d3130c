"""A service process stops within its stop budget (``LEDGERLET_STOP_BUDGET``) after
SIGTERM whatever it was waiting for: the broker killed or frozen (connections open,
nothing answered), its database frozen, the driver killed mid-run. Past the budget it
exits anyway, exit 0, with a log line naming what it left unfinished; a second SIGTERM
ends it at once. On a broker and a PostgreSQL cluster of the test's own (freezing the
machine's shared one would stop every other user of it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_bus.kafka import KafkaBus
from ledgerlet_services.runtime.catalog import control_loop
from tests.conftest import EXAMPLES
from tests.support import private_pg
from tests.support.brokers import Tansu, tansu
from tests.support.stack import LocalStack

pytestmark = pytest.mark.distributed

#: the budget the tests give (well below the default, to keep them short)
BUDGET = 3.0
#: what the exit may take beyond the budget: the watchdog's log line and os._exit
SLACK = 1.0
SERVICE = "eviction-manager"


def _processes_of(cluster: private_pg.PrivateCluster) -> list[int]:
    """The postmaster and every process it started."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    return [postmaster, *map(int, children)]


@contextlib.contextmanager
def _frozen(pids: list[int]) -> Iterator[None]:
    """SIGSTOP ``pids`` (connections stay open, nothing is answered); SIGCONT after."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def pg() -> Iterator[private_pg.PrivateCluster]:
    if not private_pg.available():
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    with private_pg.private_cluster() as cluster:
        yield cluster


def _start(broker: Tansu, pg: private_pg.PrivateCluster, workdir: Path, budget: float) -> LocalStack:
    dsn = asyncio.run(pg.create_database(f"stop_{uuid.uuid4().hex[:8]}"))
    stack = LocalStack(broker.url, dsn, workdir, extra_env={"LEDGERLET_STOP_BUDGET": str(budget)})
    return stack.start([SERVICE])  # (its loop has turned: it runs, holding its lease)


def _sigterm_and_wait(stack: LocalStack, limit: float) -> tuple[int | None, float]:
    """SIGTERM the service; its exit code (None: still running after ``limit`` s, then
    killed) and the seconds it took."""
    proc = stack.procs[SERVICE]
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code: int | None = proc.wait(limit)
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - signalled
    stack.stop(grace=0)
    return code, took


@pytest.mark.parametrize("gone", ["broker-killed", "broker-frozen", "database-frozen", "driver-killed"])
def test_a_service_stops_within_its_budget_whatever_is_gone(
    gone: str, pg: private_pg.PrivateCluster, tmp_path: Path
) -> None:
    with tansu() as broker:
        stack = _start(broker, pg, tmp_path / "stack", BUDGET)
        drive = stack.drive(EXAMPLES / "memory-pressure.yaml", tmp_path / "d.jsonl", run_id=f"stop-{gone}")
        try:
            _wait_for_input(stack)  # mid-run: the service has read the driver's first records
            assert broker.proc is not None
            if gone == "broker-killed":
                broker.stop()
                code, took = _sigterm_and_wait(stack, BUDGET + 10)
            elif gone == "broker-frozen":
                with _frozen([broker.proc.pid]):
                    code, took = _sigterm_and_wait(stack, BUDGET + 10)
            elif gone == "database-frozen":
                with _frozen(_processes_of(pg)):
                    code, took = _sigterm_and_wait(stack, BUDGET + 10)
            else:
                drive.kill()
                code, took = _sigterm_and_wait(stack, BUDGET + 10)
        finally:
            stack.stop(grace=0)
            drive.kill()
            drive.wait()
    log = stack.log_path(SERVICE).read_text(errors="replace")
    assert code == 0, f"exit {code} after {took:.1f}s:\n{stack.tail(SERVICE)}"
    assert took < BUDGET + SLACK, f"{took:.1f}s after SIGTERM (budget {BUDGET}s):\n{stack.tail(SERVICE)}"
    assert "Traceback" not in log, stack.tail(SERVICE, 60)
    assert f"SIGTERM: stopping (batch, commit, hand-over) within {BUDGET:g}s" in log
    if "exiting anyway" in log:  # the budget ran out: the line names what was left
        assert "unfinished: " in log and "main thread at " in log, stack.tail(SERVICE)


def test_a_second_sigterm_ends_a_stuck_stop_at_once(pg: private_pg.PrivateCluster, tmp_path: Path) -> None:
    budget = 120.0  # (the stop would wait for it: the second signal must not)
    with tansu() as broker:
        stack = _start(broker, pg, tmp_path / "stack", budget)
        proc = stack.procs[SERVICE]
        assert broker.proc is not None
        try:
            with _frozen([broker.proc.pid, *_processes_of(pg)]):
                proc.send_signal(signal.SIGTERM)
                _wait_for_line(stack, "SIGTERM: stopping")
                assert proc.poll() is None, stack.tail(SERVICE)  # stuck: the broker and the database are frozen
                second = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(10)
                took = time.monotonic() - second
        finally:
            stack.stop(grace=0)
    assert code == 128 + signal.SIGTERM, stack.tail(SERVICE)
    assert took < 2.0, f"{took:.1f}s after the second SIGTERM"
    assert "second SIGTERM: exiting at once (unfinished: " in stack.log_path(SERVICE).read_text(), stack.tail(SERVICE)


def _wait_for_input(stack: LocalStack, timeout: float = 60.0) -> None:
    """Until the service has handled and committed some of the driver's records (its
    group's committed offsets, asked of the broker): it is mid-run."""

    async def poll() -> None:
        bus = KafkaBus.from_url(stack.bus_url, client_id="ledgerlet-stop-test")
        await bus.start()
        try:
            kind = control_loop(SERVICE)
            assert kind is not None
            tps = await bus.topic_partitions(list(kind.topics))
            deadline = time.monotonic() + timeout
            while not any((await bus.committed(SERVICE, tps)).values()):
                if stack.procs[SERVICE].poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{SERVICE} committed nothing:\n{stack.tail(SERVICE)}")
                await asyncio.sleep(0.05)
        finally:
            await bus.close()

    asyncio.run(poll())


def _wait_for_line(stack: LocalStack, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in stack.log_path(SERVICE).read_text(errors="replace"):
        proc = stack.procs.get(SERVICE)
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{SERVICE} exited {proc.returncode}:\n{stack.tail(SERVICE)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} after {timeout:g}s:\n{stack.tail(SERVICE)}")
        time.sleep(0.05)
