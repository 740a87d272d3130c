"""Runs ``ledgerlet run`` as a user would, as a process of its own, and measures it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_ledgerlet(scenario: Path, out: Path, name: str) -> tuple[float, int, dict[str, int]]:
    """Wall seconds, peak RSS (KiB, the process's own) and decisions by type; the run's
    store and log are ``out/NAME.db`` and ``out/NAME.jsonl`` (a store left from before
    is removed first: a run id is never run twice into one store)."""
    log, db = out / f"{name}.jsonl", out / f"{name}.db"
    for p in out.glob(f"{name}.db*"):
        p.unlink()
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(scenario), "--quiet"]
    cmd += ["--decisions", str(log), "--store", f"sqlite:///{db}", "--run-id", name]
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"{name}: ledgerlet run failed ({status})")
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines():
        kind = json.loads(line)["type"]
        counts[kind] = counts.get(kind, 0) + 1
    return wall, usage.ru_maxrss, counts


def fleet_file(out: Path, nodes: int, pods: int, duration: str, fmt: str, shape: str = "steady") -> Path:
    """``bench/fleet.py``'s scenario, written by a process of its own: a child's peak RSS
    counts what its parent held when it was forked, so the bench itself must stay small
    (building a 5,000-node fleet in it took 9.7 GiB, and every figure said so)."""
    cmd = [sys.executable, str(ROOT / "bench" / "fleet.py"), "--nodes", str(nodes), "--pods", str(pods)]
    cmd += ["--duration", duration, "--format", fmt, "--shape", shape, "--out", str(out.resolve())]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])
