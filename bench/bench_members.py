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


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


async def observations_by_node(dsn: str, run: str) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT node, count(*) AS n FROM events WHERE run = $1 AND type = 'NodeObserved' GROUP BY node", run
        )
    finally:
        await conn.close()
    return {r["node"]: r["n"] for r in rows}


def one_split(
    path: Path, members: int, split: tuple[str, ...], workdir: Path
) -> list[tuple[str, str, int, int, float]]:
    """(service, member, nodes owned, observations of them, CPU s) per member of every
    per-node service (split between ``members`` if in ``split``, else whole)."""
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
        stack.wait_healthy([k for ks in keys.values() for k in ks])
        began = time.time()
        stack.finish(stack.drive(path, workdir / f"decisions-{members}.jsonl", run_id=run, timeout=3600), run)
        print(f"  {members} member(s): driven in {time.time() - began:.1f}s", flush=True)
        cpu = {k: cpu_seconds(stack.procs[k].pid) for ks in keys.values() for k in ks}
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
            out.append((service, key, len(owned), sum(by_node[n] for n in owned), cpu[key]))
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
        for service in PER_NODE:
            mine = [r for r in rows if r[0] == service]
            for _, key, nodes, observations, cpu in mine:
                print(f"    {key:<36} {nodes:>6,} nodes {observations:>9,} observations {cpu:8.1f} CPU s")
            print(f"    {service} in all: {sum(r[4] for r in mine):.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
