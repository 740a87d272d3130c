"""One Ctrl-C (or SIGTERM) stops `ledgerlet run` cleanly, wherever it lands: every service
stops, the run is stored as failed ("interrupted by SIGINT"), the store is closed and the
process exits within seconds with 128 + the signal's number, saying how to complete the
run. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledgerlet_store.runs import FAILED, run_states, runs
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow


async def _started(dsn: str, run: str) -> bool:
    if dsn.startswith("sqlite") and not Path(dsn.removeprefix("sqlite:///")).exists():
        return False
    try:
        async with await open_store(dsn, migrate=False) as store:  # (the run migrates it)
            return run in {r for r, _ in await runs(store)}
    except Exception:  # not created yet
        return False


async def _state(dsn: str, run: str) -> tuple[str, str]:
    async with await open_store(dsn) as store:
        found = {s.run: s for s in await run_states(store)}[run]
    return found.status, found.reason


async def _count(dsn: str, run: str) -> int:
    async with await open_store(dsn, migrate=False) as store:
        return await store.count(run)


async def _kill_when_partly_stored(proc: subprocess.Popen[str], dsn: str, run: str, most: int) -> int:
    """SIGKILL ``proc`` at the first or second burst the recorder stores of ``run`` (chosen at
    random), or as soon as more than ``most`` events are stored; return how many were."""
    bursts, seen = random.choice((1, 2)), 0
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        try:
            async with await open_store(dsn, migrate=False) as store:
                while proc.poll() is None and time.monotonic() < deadline:
                    stored = await store.count(run)
                    if stored > seen:
                        bursts, seen = bursts - 1, stored
                    if stored and (bursts == 0 or stored > most):
                        proc.kill()
                        return stored
                    await asyncio.sleep(0.01)
        except Exception:  # (the run has not created the store yet)
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_cleanly(sig: signal.Signals, store_dsn: str, tmp_path: Path) -> None:
    long = tmp_path / "long.yaml"  # over a minute of work (24 h took 3 s): the signal lands mid-run
    long.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", "duration: 720h"))
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(long), "--quiet", "--run-id", "cut"]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", store_dsn]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not asyncio.run(_started(store_dsn, "cut")):  # (before that, Python's own handling)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(random.uniform(0.0, 2.0))  # the first steps, or well into the run
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 15
    assert proc.returncode == 128 + int(sig), out + err
    assert "Traceback" not in err
    said = " ".join(err.split())  # (to standard error, as every message but the answer)
    assert f"interrupted by {sig.name}; run cut is incomplete" in said and "--run-id cut" in said
    assert not (tmp_path / "d.jsonl").exists()  # no log of a run that did not finish
    assert asyncio.run(_state(store_dsn, "cut")) == (FAILED, f"interrupted by {sig.name}")


def test_kill_9_leaves_an_incomplete_run_that_running_again_completes(store_dsn: str, tmp_path: Path) -> None:
    """SIGKILL gives no chance to clean up: the store holds part of the run and no end.
    Running the same scenario with the same run id completes it, with the log of a run
    that was never interrupted."""
    scenario = tmp_path / "eight-hours.yaml"
    scenario.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", "duration: 8h"))

    def run(dsn: str, log: Path) -> subprocess.Popen[str]:
        cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(scenario), "--quiet", "--run-id", "cut"]
        cmd += ["--decisions", str(log), "--store", dsn]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    clean_dsn = f"sqlite:///{tmp_path / 'clean.db'}"
    clean = run(clean_dsn, tmp_path / "clean.jsonl")
    assert clean.wait(timeout=300) == 0, clean.communicate()
    whole = asyncio.run(_count(clean_dsn, "cut"))

    # The recorder stores in bursts, and the process lives on a moment after the end is
    # stored (it writes the log): a fixed delay once killed a run that had completed. So the
    # kill lands while the store holds part of the run, at most half of it.
    killed = run(store_dsn, tmp_path / "killed.jsonl")
    stored = asyncio.run(_kill_when_partly_stored(killed, store_dsn, "cut", whole // 2))
    killed.wait(timeout=30)
    status, _ = asyncio.run(_state(store_dsn, "cut"))
    assert status in ("running", "abandoned")  # (abandoned once two minutes pass)
    assert stored <= asyncio.run(_count(store_dsn, "cut")) < whole

    resumed = run(store_dsn, tmp_path / "resumed.jsonl")
    assert resumed.wait(timeout=300) == 0, resumed.communicate()
    assert asyncio.run(_state(store_dsn, "cut"))[0] == "completed"
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


@pytest.mark.parametrize("after", [0.3, 1.5, 3.0, 4.5, 6.0])
def test_ctrl_c_before_the_run_begins_ends_without_a_traceback(after: float, tmp_path: Path) -> None:
    """Before the run's own handlers are in place (a large file takes seconds to read, then
    the store opens), Ctrl-C used to end in Python's KeyboardInterrupt traceback, or in
    the SQLite driver's thread answering a loop already closed. Wherever it lands (read,
    store opening, or the run), the process says it stopped and exits 130; at 0.3 s, and
    on a busy machine later too, it lands while Python is still importing the command
    line (once a KeyboardInterrupt traceback from the importer)."""
    pods = "".join(
        f"    - {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}, namespace: bulk}}, "
        f"spec: {{containers: [{{name: c, image: x}}]}}}}\n"
        for i in range(40_000)
    )
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    at = text.index("  usage:")
    big = tmp_path / "big.yaml"
    big.write_text(text[:at] + pods + text[at:])
    store = tmp_path / "e.db"
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(big), "--quiet"]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{store}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)  # reading the 40,000 pods (about 4 s), opening the store, or running
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "stopped" in err


def _wait_until_caught(proc: subprocess.Popen[str], sig: signal.Signals, timeout: float = 30.0) -> None:
    """Until the process has a handler for ``sig`` (its SigCgt mask in /proc says so)."""
    deadline = time.monotonic() + timeout
    status = Path(f"/proc/{proc.pid}/status")
    while time.monotonic() < deadline:
        caught = next((line.split()[1] for line in status.read_text().splitlines() if line.startswith("SigCgt:")), "0")
        if int(caught, 16) & (1 << (sig - 1)):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError(f"no handler for {sig.name} after {timeout} s")


def _bulk_scenario(tmp_path: Path, pods: int = 40_000) -> Path:
    """memory-pressure.yaml with ``pods`` more pods: seconds of reading before the run."""
    bulk = "".join(
        f"    - {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}, namespace: bulk}}, "
        f"spec: {{containers: [{{name: c, image: x}}]}}}}\n"
        for i in range(pods)
    )
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    at = text.index("  usage:")
    big = tmp_path / "big.yaml"
    big.write_text(text[:at] + bulk + text[at:])
    return big


@pytest.mark.parametrize("after", [0.15, 0.4, 1.5, 3.0, 6.0])
@pytest.mark.parametrize("entry", ["module", "script"])
def test_sigterm_at_any_time_ends_with_143_and_a_message(after: float, entry: str, tmp_path: Path) -> None:
    """SIGTERM while Python loads the command line, while the scenario is read, the store
    opens or the run goes on: 143 and a message, never the signal's silent default (the
    process killed by the signal, as it was during start-up) nor a traceback."""
    big = _bulk_scenario(tmp_path)
    script = Path(sys.executable).parent / "ledgerlet"
    head = [str(script)] if entry == "script" else [sys.executable, "-m", "ledgerlet_services.app.cli"]
    cmd = [*head, "run", str(big), "--quiet"]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{tmp_path / 'e.db'}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    began = time.monotonic()
    # (no program can answer a signal before its first line runs: on a busy machine the
    # interpreter alone may take longer than 0.15 s to get there, and the signal then
    # killed the process, a failure of the test, not of ledgerlet)
    _wait_until_caught(proc, signal.SIGTERM)
    time.sleep(max(0.0, after - (time.monotonic() - began)))
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, out + err)
    assert "Traceback" not in err and "stopped" in err and "SIGTERM" in err, err
    assert not (tmp_path / "d.jsonl").exists()
