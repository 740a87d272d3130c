"""A loop that fails ends the run promptly with exit 1 and a one-line reason: never a hang.

Regression: the recorder was cancelled in the middle of a SQLite write when a loop
failed; the store's connection was left waiting and the process never exited.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FAILING_RUN = """
import sys
from ledgerlet_services.loops.controller_manager import ControllerManager

def fail(self, env, data, out):
    raise RuntimeError("injected failure")

ControllerManager._applied = fail
from ledgerlet_services.app.cli import main
sys.exit(main(["run", sys.argv[1], "--decisions", sys.argv[2], "--store", sys.argv[3], "--quiet"]))
"""


def test_a_failing_loop_ends_the_run_with_exit_1_and_writes_no_log(tmp_path: Path) -> None:
    scenario = ROOT / "tests/golden/scenarios/workloads-and-operator-actions.yaml"
    log = tmp_path / "out.jsonl"
    res = subprocess.run(
        [sys.executable, "-c", FAILING_RUN, str(scenario), str(log), f"sqlite:///{tmp_path / 's.db'}"],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: the run itself ends in about a second
        cwd=ROOT,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "controller-manager stopped: RuntimeError('injected failure')" in res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert not log.exists()


async def test_a_run_leaves_no_task_behind(tmp_path: Path) -> None:
    """Regression: a consumer cancelled while waiting for records left a task re-acquiring
    the bus's lock for ever, and ``asyncio.run`` never returned after the run."""
    import asyncio

    from ledgerlet_core.scenario.load import load_scenario
    from ledgerlet_services.runtime.embedded import run_embedded
    from ledgerlet_store.store import open_store

    scenario = load_scenario((ROOT / "examples/memory-pressure.yaml").read_text(), "memory-pressure.yaml")
    store = await open_store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        await run_embedded(scenario, store, run="tidy")
    finally:
        await store.close()
    await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert left == []


async def test_a_slowed_run_completes_with_the_same_log(tmp_path: Path) -> None:
    """Virtual time never waits on the wall clock: with every loop a service runner of its
    own on the bus (as the distributed stack runs them), each slowed down, and a 0.2 s
    idle timeout (the first step takes longer than that in all), the run still ends, and
    decides exactly what it decides at full speed."""
    import time

    from ledgerlet_bus.memory import MemoryBus
    from ledgerlet_core.contracts.decision_log import encode_records, to_records
    from ledgerlet_core.scenario.load import load_scenario
    from ledgerlet_services.runtime import shell
    from ledgerlet_services.runtime.embedded import run_embedded
    from ledgerlet_store.store import open_store
    from tests.golden.cases import golden_path

    original = shell.ServiceRunner._handle

    def slowed(self: shell.ServiceRunner, *args: object, **kw: object) -> object:
        time.sleep(0.005)  # a slow machine: the loop blocks, as a long pass would
        return original(self, *args, **kw)  # type: ignore[arg-type]

    scenario = load_scenario((ROOT / "examples/memory-pressure.yaml").read_text(), "examples/memory-pressure.yaml")
    store = await open_store(f"sqlite:///{tmp_path / 'slow.db'}")
    shell.ServiceRunner._handle = slowed  # type: ignore[method-assign]
    try:
        result = await run_embedded(scenario, store, run="golden", idle_timeout=0.2, bus=MemoryBus())
    finally:
        shell.ServiceRunner._handle = original  # type: ignore[method-assign]
        await store.close()
    assert result.wall_seconds > 1.0  # it did run slowly
    log = encode_records(to_records([d.envelope for d in result.decisions], scenario.start))
    assert log == golden_path("memory-pressure").read_bytes()


FAILING_AT = """
import sys
from ledgerlet_services.loops import base

victim, at = sys.argv[4], int(sys.argv[5])
handled = [0]
original = base.Loop.handler

def handler(self, event_type):
    found = original(self, event_type)
    if found is None or self.name != victim:
        return found
    method, decode, when = found

    def failing(env, data, out):
        handled[0] += 1
        if handled[0] == at:
            raise RuntimeError("injected failure")
        return method(env, data, out)

    return failing, decode, when

base.Loop.handler = handler
from ledgerlet_services.app.cli import main
sys.exit(main(["run", sys.argv[1], "--decisions", sys.argv[2], "--store", sys.argv[3], "--quiet", "--run-id", "f"]))
"""

LOOPS = ["stats-collector", "eviction-manager", "shutdown-manager", "scheduler", "controller-manager"]


@pytest.mark.parametrize("seed", range(3))
def test_a_failure_anywhere_ends_the_run_promptly_on_either_store(seed: int, store_dsn: str, tmp_path: Path) -> None:
    """A loop failing at a random event (drawn from the seed), on SQLite and PostgreSQL:
    exit 1 within seconds, a one-line reason, no log, and the run stored as failed."""
    import asyncio
    import random
    import time

    from ledgerlet_store.runs import FAILED, run_states
    from ledgerlet_store.store import open_store

    rnd = random.Random(seed)
    victim, at = rnd.choice(LOOPS), rnd.randint(1, 40)
    scenario = ROOT / "tests/golden/scenarios/workloads-and-operator-actions.yaml"
    log = tmp_path / "out.jsonl"
    began = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", FAILING_AT, str(scenario), str(log), store_dsn, victim, str(at)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert time.monotonic() - began < 60
    assert res.returncode == 1, (victim, at, res.stdout + res.stderr)
    assert f"{victim} stopped: RuntimeError('injected failure')" in " ".join(res.stderr.split())
    assert "Traceback" not in res.stdout + res.stderr
    assert not log.exists()

    async def state() -> tuple[str, str]:
        async with await open_store(store_dsn) as store:
            found = {s.run: s for s in await run_states(store)}["f"]
        return found.status, found.reason

    status, reason = asyncio.run(state())
    assert status == FAILED and "injected failure" in reason
