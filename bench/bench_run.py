"""The embedded run's rate: 100 nodes x 30 pods for one virtual hour, the fleet of
``bench/fleet.py`` at that size (every node observed every 10 s: 36,100 housekeeping
passes; one node in five is made to cross a hard threshold, and at 30 pods a node only
the disk half of them does: 10 evict), as ``ledgerlet
run`` in a process of its own.

Reported: the median of ``--runs`` runs of the hour and of the load-only baseline (the
same scenario for 0 s: read, start, fold and store the cluster, the first pass), the
closed loop's wall time as their difference, virtual seconds per wall second (target:
1,000), and the peak RSS of each (target: < 300 MiB).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from measure import fleet_file, run_ledgerlet


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--duration", default="1h")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    out: Path = args.out / "bench-run"
    out.mkdir(parents=True, exist_ok=True)
    full = fleet_file(out, args.nodes, args.pods_per_node, args.duration, "json")
    base = fleet_file(out, args.nodes, args.pods_per_node, "0s", "json")
    virtual = {"s": 1, "m": 60, "h": 3600}[args.duration[-1]] * int(args.duration[:-1])
    runs, bases = [], []
    for i in range(args.runs):
        bases.append(run_ledgerlet(base, out, f"base-{i}"))
        runs.append(run_ledgerlet(full, out, f"run-{i}"))
        print(f"  run {i + 1}: {runs[-1][0]:.2f}s, load-only {bases[-1][0]:.2f}s", flush=True)
    wall = statistics.median(r[0] for r in runs)
    baseline = statistics.median(b[0] for b in bases)
    loop = max(wall - baseline, 1e-9)
    evicted = runs[0][2].get("PodEvicted", 0)
    print(f"scenario: {args.nodes} nodes, {args.nodes * args.pods_per_node:,} pods, {args.duration} virtual")
    print(
        f"ledgerlet run (median of {args.runs}): {wall:.2f}s, load-only {baseline:.2f}s; the closed loop "
        f"{loop:.2f}s = {virtual / loop:,.0f} virtual s per wall s (target 1,000); {evicted} evictions"
    )
    print(
        f"peak RSS: {max(r[1] for r in runs) / 1024:.0f} MiB (target < 300), "
        f"load-only {max(b[1] for b in bases) / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
