"""Does the embedded run keep up with 5,000 nodes observed every 10 s of virtual time?

5,000 nodes x 110 pods (110 DaemonSets), each node observed every 10 s: after start-up,
the wall time per 10 s of virtual time must stay under 10 s. Start-up (creating the
550,000 pods) is reported on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from scenarios import daemonset_cluster


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=110)
    ap.add_argument("--duration", default="2m")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    text = json.dumps(daemonset_cluster(args.nodes, args.pods_per_node, duration=args.duration))
    began = time.perf_counter()
    scenario = load_scenario(text, "generated")
    load = time.perf_counter() - began
    for p in args.out.glob("bench-keepup.db*"):
        p.unlink()
    ticks: list[tuple[int, float]] = []
    store = await open_store(f"sqlite:///{args.out / 'bench-keepup.db'}")
    start = time.perf_counter()
    try:
        result = await run_embedded(
            scenario, store, progress=lambda now: ticks.append((now, time.perf_counter() - start))
        )
    finally:
        await store.close()
    steady = [(now, w) for now, w in ticks if now >= 20 * 10**9]
    per10 = (steady[-1][1] - steady[0][1]) / ((steady[-1][0] - steady[0][0]) / 10**10)
    startup = next(w for now, w in ticks if now >= 10 * 10**9)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"keep-up: {args.nodes:,} nodes x {args.pods_per_node} pods ({args.nodes * args.pods_per_node:,} pods), "
        f"one observation per node every 10 s: {per10:.2f} s wall per 10 s virtual "
        f"({args.nodes * 10 / per10 / 10:,.0f} observations/s; {'keeps up' if per10 < 10 else 'FALLS BEHIND'}); "
        f"start-up {startup:.0f} s, load {load:.1f} s, {result.events_stored:,} events stored, peak RSS {rss:,.0f} MiB"
    )


if __name__ == "__main__":
    asyncio.run(main())
