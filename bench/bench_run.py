"""The embedded run: virtual seconds per wall second for a 100-node, 3,000-pod, one-hour
scenario (every node observed every 10 s: 36,100 housekeeping passes), and the time to
load it."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import EventStore
from scenarios import write


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--duration", default="1h")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    path = write(
        args.out / f"bench-{args.nodes}x{args.pods_per_node}.yaml",
        args.nodes,
        args.pods_per_node,
        duration=args.duration,
    )
    text = path.read_text()
    began = time.perf_counter()
    scenario = load_scenario(text, str(path))
    load = time.perf_counter() - began
    db = args.out / "bench-run.db"
    for p in args.out.glob("bench-run.db*"):
        p.unlink()
    store = await EventStore.open(f"sqlite:///{db}")
    try:
        result = await run_embedded(scenario, store)
    finally:
        await store.close()
    virtual = scenario.duration / 1e9
    passes = result.service_events.get("eviction-manager", 0)
    print(
        f"scenario: {args.nodes} nodes, {args.nodes * args.pods_per_node:,} pods, {args.duration} "
        f"({len(text) / 1e6:.1f} MB of YAML, loaded in {load:.2f}s)"
    )
    print(
        f"embedded run: {result.wall_seconds:.1f}s wall for {virtual:,.0f}s virtual = "
        f"{virtual / result.wall_seconds:,.0f} virtual s per wall s; {result.events_stored:,} events stored "
        f"({result.events_stored / result.wall_seconds:,.0f}/s), {len(result.decisions)} decisions, "
        f"{passes:,} events handled by the eviction manager"
    )


if __name__ == "__main__":
    asyncio.run(main())
