"""Scheduler throughput in the embedded mode, in scheduler_perf's shapes, and the time to
decide and log a graceful shutdown of a 110-pod node in 5 priority groups.

* SchedulingBasic: N nodes (4 CPU, 32Gi, 110 pods), init pods bound, then a ReplicaSet of
  measured pods (100m / 500Mi) that the scheduler places.
* PreemptionBasic: N nodes each holding four 900m low-priority pods (grace 0), then
  N high-priority pods of 3 CPU: every one preempts three pods and binds on its nominee.

Pods/s = measured pods / (wall time of the run with them - wall time without them), so
loading the scenario and starting the services is not counted. A cProfile of the
scheduler's share is printed with ``--profile``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import EventStore

sys.path.insert(0, str(Path(__file__).parent))
from scenarios import preemption_basic, scheduling_basic, shutdown_110


def _remove(out: Path) -> None:
    for p in out.glob("bench-scheduling.db*"):
        p.unlink()


async def timed(
    doc: dict[str, Any], out: Path, profile: cProfile.Profile | None = None
) -> tuple[float, dict[str, int]]:
    scenario = load_scenario(yaml.safe_dump(doc), "bench.yaml")
    db = out / "bench-scheduling.db"
    _remove(out)
    store = await EventStore.open(f"sqlite:///{db}")
    try:
        began = time.perf_counter()
        if profile is not None:
            profile.enable()
        result = await run_embedded(scenario, store, run="bench")
        if profile is not None:
            profile.disable()
        wall = time.perf_counter() - began
        counts: dict[str, int] = {}
        for d in result.decisions:
            counts[d.envelope.type] = counts.get(d.envelope.type, 0) + 1
        return wall, counts
    finally:
        await store.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init", type=int, default=1000)
    ap.add_argument("--measure", type=int, default=10000)
    ap.add_argument("--preemption-nodes", type=int, default=500)
    ap.add_argument("--shutdown-nodes", type=int, default=20)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    base, _ = await timed(scheduling_basic(args.nodes, args.init, 0), args.out)
    prof = cProfile.Profile() if args.profile else None
    full, counts = await timed(scheduling_basic(args.nodes, args.init, args.measure), args.out, prof)
    scheduled = counts.get("PodScheduled", 0)
    rate = scheduled / max(full - base, 1e-9)
    print(
        f"SchedulingBasic {args.nodes} nodes, {args.init} init, {args.measure} measured: {scheduled} scheduled in "
        f"{full - base:.2f}s -> {rate:,.0f} pods/s (target >= 810)"
    )
    if prof is not None:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)

    n = args.preemption_nodes
    base, _ = await timed(preemption_basic(n, 0), args.out)
    full, counts = await timed(preemption_basic(n, n), args.out)
    scheduled, preempted = counts.get("PodScheduled", 0), counts.get("PodPreempted", 0)
    rate = scheduled / max(full - base, 1e-9)
    print(
        f"PreemptionBasic {n} nodes, {4 * n} low, {n} high: {scheduled} scheduled, {preempted} preempted in "
        f"{full - base:.2f}s -> {rate:,.0f} pods/s (target >= 570)"
    )

    k = args.shutdown_nodes
    base, _ = await timed(shutdown_110(k, False), args.out)
    full, counts = await timed(shutdown_110(k, True), args.out)
    per = (full - base) / k
    print(
        f"Graceful shutdown of a 110-pod node in 5 priority groups: {counts.get('NodeShutdownCompleted', 0)} "
        f"shutdowns, {counts.get('PodTerminated', 0)} pods stopped, {per * 1000:.1f} ms wall per shutdown"
    )


if __name__ == "__main__":
    asyncio.run(main())
