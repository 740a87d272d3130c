"""Every row of the fleet-at-array-speed table, on both usage shapes, with peak RSS.

Each figure comes from ``ledgerlet run`` (or ``ledgerlet replay``) as a process of its own,
as a user runs it, on a fleet written by ``bench/fleet.py``:

* 5,000 nodes x 110 bound pods: the load-only run (0 s: read, check, fold, store the
  cluster), and 10 minutes with one node in five crossing a hard threshold once;
* 100 nodes x 30 pods x 1 hour, one node in five crossing: times real time;
* ``ledgerlet replay --verify`` (full) of that hour: stored events read and re-derived
  per second, as the command reports it;
* PreemptionBasic at 500 nodes and SchedulingBasic at 5,000 (run - load-only baseline,
  bench/bench_scheduling.py's shapes).

Shapes: ``steady`` (healthy pods' usage constant: quiet nodes stay quiet) and ``changing``
(every pod's memory wobbles and its logs grow on every pass: real nodes are never quiet).
The README's targets hold on ``changing``. ``--nodes`` scales the 5,000-node rows down for
a quick look; the results go to ``OUT/bench-fleet-table/results.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_scheduling import measured
from measure import ROOT, fleet_file, run_ledgerlet
from scenarios import preemption_basic, scheduling_basic

GIB = 1024.0

#: (row, target, better): a figure and the README's target for it
TARGETS: dict[str, tuple[float, str]] = {
    "fleet_load_s": (10.0, "<"),
    "fleet_load_rss_mib": (2 * GIB, "<"),
    "fleet_10m_s": (30.0, "<"),
    "fleet_10m_rss_mib": (3 * GIB, "<"),
    "hour_x_real_time": (2000.0, ">="),
    "hour_rss_mib": (200.0, "<"),
    "verify_events_per_s": (100_000.0, ">="),
    "preemption_basic_pods_per_s": (570.0, ">="),
    "scheduling_basic_pods_per_s": (2000.0, ">="),
}


def _run(scenario: Path, out: Path, name: str, runs: int) -> tuple[float, float]:
    """Median wall seconds and the largest peak RSS (MiB) of ``runs`` runs."""
    walls, rss = [], 0.0
    for _ in range(runs):
        wall, peak_kib, _ = run_ledgerlet(scenario, out, name)
        walls.append(wall)
        rss = max(rss, peak_kib / 1024)
    return statistics.median(walls), rss


_VERIFIED = re.compile(r"\(([\d,]+) events/s\)")


def _verify(out: Path, name: str, runs: int) -> float:
    """``replay --verify`` of run ``name`` in ``out/NAME.db``: events/s as it reports them."""
    rates = []
    for _ in range(runs):
        cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "replay", "--verify"]
        cmd += ["--store", f"sqlite:///{out / f'{name}.db'}", "--run", name]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        found = _VERIFIED.search(done.stdout + done.stderr)
        if found is None:
            raise SystemExit(f"replay --verify said no rate: {done.stdout}{done.stderr}")
        rates.append(float(found.group(1).replace(",", "")))
    return statistics.median(rates)


def _shape_rows(out: Path, shape: str, nodes: int, runs: int) -> dict[str, float]:
    got: dict[str, float] = {}
    load = fleet_file(out, nodes, 110, "0s", "json", shape)
    ten = fleet_file(out, nodes, 110, "10m", "json", shape)
    hour = fleet_file(out, 100, 30, "1h", "json", shape)
    got["fleet_load_s"], got["fleet_load_rss_mib"] = _run(load, out, f"load-{shape}", runs)
    print(f"  [{shape}] {nodes} x 110 load-only: {got['fleet_load_s']:.1f}s", flush=True)
    got["fleet_10m_s"], got["fleet_10m_rss_mib"] = _run(ten, out, f"ten-{shape}", runs)
    print(f"  [{shape}] {nodes} x 110 x 10 min: {got['fleet_10m_s']:.1f}s", flush=True)
    wall, got["hour_rss_mib"] = _run(hour, out, f"hour-{shape}", max(runs, 3))
    got["hour_x_real_time"] = 3600 / wall
    got["verify_events_per_s"] = _verify(out, f"hour-{shape}", max(runs, 3))
    print(f"  [{shape}] 100 x 30 x 1 h: {wall:.2f}s, verified at {got['verify_events_per_s']:,.0f} ev/s", flush=True)
    return got


def _scheduling(out: Path, scale: float, runs: int) -> dict[str, float]:
    small, large = max(int(500 * scale), 10), max(int(5000 * scale), 10)
    pre = measured(
        f"preemptionbasic-{small}",
        preemption_basic(small, 0),
        preemption_basic(small, small),
        out,
        "PodScheduled",
        runs,
    )
    basic = measured(
        f"schedulingbasic-{large}",
        scheduling_basic(large, large, 0),
        scheduling_basic(large, large, 2 * large),
        out,
        "PodScheduled",
        runs,
    )
    return {"preemption_basic_pods_per_s": pre["rate"], "scheduling_basic_pods_per_s": basic["rate"]}


def _verdict(key: str, value: float) -> str:
    target, way = TARGETS[key]
    met = value < target if way == "<" else value >= target
    return f"{'met' if met else 'MISSED'} (target {way} {target:,.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000, help="nodes of the large fleet (default 5,000)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each large figure (median; the hour runs 3)")
    ap.add_argument("--shape", choices=("steady", "changing", "both"), default="both")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    out: Path = (args.out / "bench-fleet-table").resolve()
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    shapes = ("steady", "changing") if args.shape == "both" else (args.shape,)
    results: dict[str, Any] = {"nodes": args.nodes, "date": time.strftime("%Y-%m-%d")}
    for shape in shapes:
        results[shape] = _shape_rows(out, shape, args.nodes, args.runs)
    results["scheduling"] = _scheduling(out, args.nodes / 5000, max(args.runs, 1))
    (out / "results.json").write_text(json.dumps(results, indent=2))
    scaled = "" if args.nodes == 5000 else " (the targets are the 5,000-node fleet's)"
    print(f"\nfleet table ({args.nodes:,}-node fleet{scaled}; {time.perf_counter() - began:.0f}s in all)")
    for shape in shapes:
        for key, value in results[shape].items():
            print(f"  {shape:8} {key:30} {value:>12,.1f}  {_verdict(key, value)}")
    for key, value in results["scheduling"].items():
        print(f"  {'':8} {key:30} {value:>12,.1f}  {_verdict(key, value)}")


if __name__ == "__main__":
    main()
