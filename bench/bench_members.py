"""The per-node services (the stats collector and the eviction manager) split between 1,
2 and 4 members each on the distributed stack (Tansu and the local PostgreSQL, every
service a process of its own): each member's share of the work, measured, since on two
cores the wall time cannot show what scaling out gives.

For each split the same fleet (``bench/fleet.py``) is driven through a fresh stack, and
for each member: the nodes it owns, the observations of them (stored, counted by node:
the collector made them, the eviction manager ran a pass on each), and its CPU seconds
(user + system, from /proc while it still runs). Every member folds the whole cluster
(that part is not shared); the per-node work is. ``--split`` picks the services.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from tests.support.brokers import Tansu  # noqa: E402
from tests.support.stack import LocalStack  # noqa: E402

from bench_distributed import PG, _admin  # noqa: E402
from fleet import fleet  # noqa: E402
from ledgerlet_core.loop.membership import Membership  # noqa: E402
from ledgerlet_services.runtime.catalog import service_names  # noqa: E402

PER_NODE = ("stats-collector", "eviction-manager")
_TICKS = 100  # /proc's clock ticks per second (SC_CLK_TCK on Linux)
#: how long each member's idle polling is measured before the run
IDLE_SECONDS = 10.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


async def observations_stored(dsn: str, run: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM events WHERE run = $1 AND type = 'NodeObserved'", run))
    finally:
        await conn.close()


@dataclass
class Share:
    """One member's work, in CPU s: idle (polling the broker, per second of wall time,
    measured before the run), start-up to the first observation stored (the cluster's
    fold: not shared), then the run (the passes: shared), and the run's wall time."""

    service: str
    member: str
    nodes: int = 0
    observations: int = 0
    idle_per_s: float = 0.0
    load: float = 0.0
    run: float = 0.0
    run_wall: float = 0.0

    @property
    def total(self) -> float:
        return self.load + self.run

    @property
    def run_beyond_idle(self) -> float:
        """The run's CPU less what the member would have spent polling an idle broker as long."""
        return max(self.run - self.idle_per_s * self.run_wall, 0.0)


async def observations_by_node(dsn: str, run: str) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT node, count(*) AS n FROM events WHERE run = $1 AND type = 'NodeObserved' GROUP BY node", run
        )
    finally:
        await conn.close()
    return {r["node"]: r["n"] for r in rows}


def one_split(path: Path, members: int, split: tuple[str, ...], workdir: Path) -> list[Share]:
    """Each member's share of the work, for every per-node service (split between
    ``members`` if in ``split``, else whole)."""
    name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    dsn = f"{PG.rsplit('/', 1)[0]}/{name}"
    broker = Tansu(log_path=workdir / "tansu.log").start()
    env = {"LEDGERLET_MEMBERS": ",".join(f"{s}={members}" for s in split)} if members > 1 else {}
    stack = LocalStack(broker.url, dsn, workdir / f"split-{members}", env)
    run = f"members-{members}-{uuid.uuid4().hex[:6]}"
    counts = {s: members if members > 1 and s in split else 1 for s in PER_NODE}
    try:
        stack.start([n for n in service_names() if n not in (*PER_NODE, "audit-api")])
        keys: dict[str, list[str]] = {}
        for service, n in counts.items():
            if n > 1:
                keys[service] = [stack.start_share(service, i, n) for i in range(1, n + 1)]
            else:
                stack.start([service])
                keys[service] = [service]
        every = [k for ks in keys.values() for k in ks]
        stack.wait_healthy(every)

        def cpu() -> dict[str, float]:
            return {k: cpu_seconds(stack.procs[k].pid) for k in every}

        time.sleep(2.0)  # (settled)
        before, idle_from = cpu(), time.time()
        time.sleep(IDLE_SECONDS)
        idle, idle_wall = cpu(), time.time() - idle_from
        began = time.time()
        drive = stack.drive(path, workdir / f"decisions-{members}.jsonl", run_id=run, timeout=3600)
        while not asyncio.run(observations_stored(dsn, run)):
            if drive.poll() is not None:
                break
            time.sleep(0.2)
        loaded, loaded_at = cpu(), time.time()
        stack.finish(drive, run)
        done, ended = cpu(), time.time()
        print(
            f"  {members} member(s): driven in {ended - began:.1f}s ({loaded_at - began:.1f}s to the first "
            "observation stored)",
            flush=True,
        )
        by_node = asyncio.run(observations_by_node(dsn, run))
    finally:
        stack.stop()
        broker.stop()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    out = []
    for service, ks in keys.items():
        for i, key in enumerate(ks):
            m = Membership(i, len(ks))
            owned = [n for n in by_node if m.owns(n)]
            share = Share(service, key, len(owned), sum(by_node[n] for n in owned))
            share.idle_per_s = (idle[key] - before[key]) / idle_wall
            share.load = loaded[key] - idle[key]
            share.run, share.run_wall = done[key] - loaded[key], ended - loaded_at
            out.append(share)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods-per-node", type=int, default=110)
    ap.add_argument("--duration", default="5m")
    ap.add_argument("--splits", default="1,2,4")
    ap.add_argument("--split", default=",".join(PER_NODE), help="the services to split (default: both)")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    workdir = args.out / "bench-members"
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"fleet-{args.nodes}x{args.pods_per_node}-{args.duration}.json"
    path.write_text(json.dumps(fleet(args.nodes, args.pods_per_node, duration=args.duration)))
    print(f"the fleet: {args.nodes} nodes x {args.pods_per_node} pods, {args.duration}, observed every 10 s")
    split = tuple(s for s in args.split.split(",") if s)
    unknown = set(split) - set(PER_NODE)
    if unknown:
        ap.error(f"--split: {', '.join(sorted(unknown))} cannot be split (can: {', '.join(PER_NODE)})")
    for members in (int(s) for s in args.splits.split(",")):
        rows = one_split(path, members, split, workdir)
        print(
            f"    {'member':<36} {'nodes':>6} {'observations':>12}   CPU s: {'idle/s':>6} {'load':>6} "
            f"{'run':>6} {'run-idle':>8} {'total':>6}"
        )
        for service in PER_NODE:
            mine = [r for r in rows if r.service == service]
            for r in mine:
                print(
                    f"    {r.member:<36} {r.nodes:>6,} {r.observations:>12,}          {r.idle_per_s:>6.3f} "
                    f"{r.load:>6.1f} {r.run:>6.1f} {r.run_beyond_idle:>8.1f} {r.total:>6.1f}"
                )
            print(f"    {service} in all: {sum(r.total for r in mine):.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
