"""How long a control loop takes to restart on the distributed stack, with and without
snapshots, as the runs it has served pile up, and in the middle of a run.

Every service runs as its own process on a Kafka-protocol broker (Tansu, in memory) and
the local PostgreSQL, with the default snapshot interval. The same generated cluster is
driven again and again; after 1, 5 and 10 runs the stats collector and the eviction
manager are killed (SIGKILL) and started again, once loading their snapshot and once
with snapshots off (``LEDGERLET_SNAPSHOT_RECORDS=0``: the group's whole history is read
back). Reported per restart: wall seconds until the service has rebuilt its state (from
the process's start: Python's imports and the broker's connection included), the
seconds the rebuild itself took and how many records it read back; and the snapshots' size and
save time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from tests.support.brokers import Tansu  # noqa: E402
from tests.support.stack import LocalStack  # noqa: E402

from bench_distributed import PG, _admin, scenario  # noqa: E402
from ledgerlet_core.model.duration import parse_duration  # noqa: E402

SERVICES = ("stats-collector", "eviction-manager")
_REBUILT = re.compile(
    r"rebuilt state from (a snapshot and )?(\d+) events of (\d+) records \(\d+ runs ended\) in ([\d.]+) s"
)
_SAVED = re.compile(r"snapshot of (\d+) records saved \((\d+) KiB in ([\d.]+) s\)")


def rebuilds(stack: LocalStack, name: str) -> list[tuple[str, str, str, str]]:
    return _REBUILT.findall(stack.log_path(name).read_text(errors="replace"))


def restart(stack: LocalStack, name: str, *, snapshots: bool) -> dict[str, Any]:
    """Kill and start ``name``; the wall seconds until it has rebuilt its state and is
    handling again (its log says so), how long the rebuild took and what it read back."""
    stack.extra_env["LEDGERLET_SNAPSHOT_RECORDS"] = "20000" if snapshots else "0"
    before = len(rebuilds(stack, name))
    stack.kill(name)
    began = time.perf_counter()
    stack.start_service(name)
    while len(found := rebuilds(stack, name)) == before:
        if time.perf_counter() - began > 600:
            raise TimeoutError(f"{name} did not rebuild its state:\n{stack.tail(name)}")
        time.sleep(0.02)
    wall = time.perf_counter() - began
    snap, _events, records, seconds = found[-1]
    return {
        "service": name,
        "snapshots": snapshots,
        "loaded": bool(snap),
        "wall": wall,
        "rebuild": float(seconds),
        "records": int(records),
    }


async def observed(dsn: str, run: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM events WHERE run = $1 AND type = 'NodeObserved'", run))
    finally:
        await conn.close()


def mid_run(stack: LocalStack, path: Path, workdir: Path, dsn: str, expected: int) -> list[dict[str, Any]]:
    """Restart the eviction manager while a run is under way: with its snapshot at 40 %
    of the run, from its history at 70 % (it folds the run so far again)."""
    run = f"mid-{uuid.uuid4().hex[:6]}"
    drive = stack.drive(path, workdir / f"{run}.jsonl", run_id=run, timeout=3600)
    rows = []
    for fraction, snapshots in ((0.4, True), (0.7, False)):
        while asyncio.run(observed(dsn, run)) < expected * fraction:
            if drive.poll() is not None:
                raise RuntimeError("the run ended before the restart")
            time.sleep(0.2)
        rows.append({"at": fraction, **restart(stack, "eviction-manager", snapshots=snapshots)})
    stack.finish(drive, run, timeout=3600)
    stack.extra_env["LEDGERLET_SNAPSHOT_RECORDS"] = "20000"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--duration", default="5m")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    args.out.mkdir(exist_ok=True)
    path = args.out / f"bench-restart-{args.nodes}x{args.pods_per_node}.json"
    path.write_text(json.dumps(scenario(args.nodes, args.pods_per_node, args.duration)))
    workdir = args.out / "bench-restart"
    shutil.rmtree(workdir, ignore_errors=True)  # (the services' logs are read back)
    workdir.mkdir()
    name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    dsn = f"{PG.rsplit('/', 1)[0]}/{name}"
    broker = Tansu(log_path=workdir / "tansu.log").start()
    stack = LocalStack(broker.url, dsn, workdir)
    checkpoints = sorted({1, args.runs // 2, args.runs} - {0})
    rows: list[dict[str, Any]] = []
    try:
        stack.start()
        for i in range(1, args.runs + 1):
            run = f"restart-{i}-{uuid.uuid4().hex[:6]}"
            began = time.perf_counter()
            stack.finish(stack.drive(path, workdir / f"{run}.jsonl", run_id=run, timeout=3600), run, timeout=3600)
            print(f"  run {i}/{args.runs}: {time.perf_counter() - began:.1f} s", flush=True)
            if i in checkpoints:
                for service in SERVICES:
                    for snapshots in (True, False):
                        row = {"runs": i, **restart(stack, service, snapshots=snapshots)}
                        rows.append(row)
                        print(
                            f"    {service:16} {'snapshot' if snapshots else 'history ':8}: ready in "
                            f"{row['wall']:5.2f} s, rebuild {row['rebuild']:5.2f} s, "
                            f"{row['records']:7,} records read back",
                            flush=True,
                        )
                    restart(stack, service, snapshots=True)  # back to snapshots for the runs to come
        ticks = parse_duration(args.duration) // (10 * 10**9)
        under_way = mid_run(stack, path, workdir, dsn, args.nodes * ticks)
        for row in under_way:
            print(
                f"  mid-run, at {row['at']:.0%}: eviction-manager {'snapshot' if row['snapshots'] else 'history'}: "
                f"ready in {row['wall']:.2f} s, rebuild {row['rebuild']:.2f} s, {row['records']:,} records read back",
                flush=True,
            )
        saves = [
            (int(r), int(k), float(s))
            for service in SERVICES
            for r, k, s in _SAVED.findall(stack.log_path(service).read_text(errors="replace"))
        ]
    finally:
        stack.stop()
        broker.stop()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    biggest = max((k for _, k, _ in saves), default=0)
    slowest = max((s for _, _, s in saves), default=0.0)
    print(f"snapshots: {len(saves)} saved, largest {biggest:,} KiB, slowest save {slowest:.3f} s")
    print("| runs served | service | restart with snapshot | restart from history |")
    print("|---|---|---|---|")
    for i in checkpoints:
        for service in SERVICES:
            a = next(r for r in rows if r["runs"] == i and r["service"] == service and r["snapshots"])
            b = next(r for r in rows if r["runs"] == i and r["service"] == service and not r["snapshots"])
            print(
                f"| {i} | {service} | {a['wall']:.2f} s ({a['records']:,} records) "
                f"| {b['wall']:.2f} s ({b['records']:,} records) |"
            )
    (args.out / "bench-restart.json").write_text(
        json.dumps({"restarts": rows, "mid_run": under_way, "saves": saves}, indent=1)
    )


if __name__ == "__main__":
    main()
