"""Peak resident memory of the processes a benchmark starts (Linux's /proc).

Each process's own peak (``VmHWM``) is read while it lives, sampled every few seconds
(a process that has ended takes its peak with it), and the stack's total is the largest
sum of the processes' resident memory (``VmRSS``) seen at one sample: what the machine
had to hold at once. PostgreSQL's backends for the run's database are counted with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

KIB = 1024


def _status_kib(pid: int, field: str) -> int | None:
    """``field`` (VmRSS, VmHWM) of ``/proc/PID/status`` in KiB; None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def postgres_backends(database: str) -> list[int]:
    """The PostgreSQL server processes serving ``database`` (their command line names it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("postgres:") and f" {database} " in f" {cmd} ":
            pids.append(int(entry.name))
    return pids


class PeakMemory:
    """Samples the processes ``processes()`` names (label -> pid) every ``every`` seconds."""

    def __init__(self, processes: Callable[[], Mapping[str, int]], every: float = 2.0) -> None:
        self.processes = processes
        self.every = every
        #: each process's peak resident memory, KiB
        self.peaks: dict[str, int] = {}
        #: the largest sum of resident memory at one sample, KiB
        self.total_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="peak-memory")

    def start(self) -> PeakMemory:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.sample()
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def sample(self) -> None:
        total = 0
        for label, pid in dict(self.processes()).items():
            rss = _status_kib(pid, "VmRSS")
            hwm = _status_kib(pid, "VmHWM")
            if rss is None or hwm is None:
                continue
            total += rss
            self.peaks[label] = max(self.peaks.get(label, 0), hwm)
        self.total_peak = max(self.total_peak, total)

    def lines(self) -> list[str]:
        """One line per process, largest first, then the stack's total."""
        rows = sorted(self.peaks.items(), key=lambda kv: -kv[1])
        out = [f"  peak RSS {label:<28} {kib / KIB:8,.0f} MiB" for label, kib in rows]
        out.append(f"  peak RSS of the whole stack at once   {self.total_peak / KIB:8,.0f} MiB")
        return out
