"""Members moving between the processes of a pool mid-run, at fleet scale: how long a
move takes and what it costs the run (runtime/pool.py).

On Tansu and the local PostgreSQL, every service a process of its own, the eviction
manager's ``--members`` members are hosted by a pool: one process at first (all of them);
part way through a second joins, and the first hands half over (each checkpointed where it
stands, then taken and loaded by the second); later the first is killed with SIGKILL and
the second takes the rest (from their newest snapshots and what their groups committed
since). Reported per move: how long the hand-over took (to a point the state could be
checkpointed, and the checkpoint), the gap until the new host took the member, and its
rebuild (what it read back, in how long); and the run's wall time against the same run
with the members left where they started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from tests.support.brokers import Tansu  # noqa: E402
from tests.support.stack import LocalStack  # noqa: E402

from bench_distributed import PG, _admin  # noqa: E402
from bench_members import observations_stored  # noqa: E402
from fleet import fleet  # noqa: E402
from ledgerlet_core.model.duration import parse_duration  # noqa: E402
from ledgerlet_services.runtime.catalog import service_names  # noqa: E402

SERVICE = "eviction-manager"
_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
_HANDING = re.compile(_STAMP + r".*: handing member (\d+) of \d+ over$", re.M)
_HANDED = re.compile(_STAMP + r".*: handed member (\d+) of \d+ over$", re.M)
_CHECKPOINTED = re.compile(r"\.member-(\d+)-of-\d+: handed over with a checkpoint$", re.M)
_TOOK = re.compile(_STAMP + r".*: took member (\d+) of \d+$", re.M)
_REBUILT = re.compile(
    _STAMP + r".*\.member-(\d+)-of-\d+: rebuilt state from (a snapshot and )?(\d+) events of (\d+) records "
    r"\(\d+ runs ended\) in ([\d.]+) s$",
    re.M,
)


def _at(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


@dataclass
class Move:
    member: int
    how: str  # "handed over", "handed over (no checkpoint)" or "host killed"
    handing_s: float | None  # hand-over asked -> lease let go (None: killed)
    gap_s: float  # lease let go (or the kill) -> taken by the new host
    rebuild_s: float
    from_snapshot: bool
    records_read: int


def _wait_for(stack: LocalStack, name: str, pattern: re.Pattern[str], count: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while len(pattern.findall(stack.log_path(name).read_text(errors="replace"))) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: {pattern.pattern} not seen {count}x:\n{stack.tail(name, 40)}")
        time.sleep(0.1)


def one_run(path: Path, members: int, observations: int, workdir: Path, *, move: bool) -> tuple[float, list[Move]]:
    """Drive the fleet with the eviction manager's ``members`` in a pool; with ``move``,
    a second process joins at a third of the observations and the first is killed at two
    thirds. The run's wall seconds and the moves."""
    name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    dsn = f"{PG.rsplit('/', 1)[0]}/{name}"
    broker = Tansu(log_path=workdir / "tansu.log").start()
    run = f"pool-{uuid.uuid4().hex[:6]}"
    stack = LocalStack(broker.url, dsn, workdir / run, {"LEDGERLET_MEMBERS": f"{SERVICE}={members}"})
    killed_at = 0.0
    try:
        stack.start([n for n in service_names() if n not in (SERVICE, "audit-api")])
        first = stack.start_pooled(SERVICE, "a", members)
        stack.wait_healthy([first])
        _wait_for(stack, first, _REBUILT, members)
        began = time.time()
        drive = stack.drive(path, workdir / "decisions.jsonl", run_id=run, timeout=3600)
        second = ""
        if move:
            while asyncio.run(observations_stored(dsn, run)) < observations // 3:
                time.sleep(0.2)
            second = stack.start_pooled(SERVICE, "b", members)
            _wait_for(stack, second, _REBUILT, members // 2)
            print(f"  a second process joined at {time.time() - began:.1f} s", flush=True)
            while asyncio.run(observations_stored(dsn, run)) < 2 * observations // 3:
                time.sleep(0.2)
            if drive.poll() is not None:
                raise RuntimeError("the run ended before the kill: give it a longer --duration")
            killed_at = time.time()
            stack.kill(first)
            print(f"  the first killed at {killed_at - began:.1f} s", flush=True)
        stack.finish(drive, run, timeout=3600)
        wall = time.time() - began
        moves = _moves(stack, first, second, killed_at) if move else []
    finally:
        stack.stop()
        broker.stop()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return wall, moves


def _moves(stack: LocalStack, first: str, second: str, killed_at: float) -> list[Move]:
    gave = stack.log_path(first).read_text(errors="replace")
    took = stack.log_path(second).read_text(errors="replace")
    checkpointed = {int(m) for m in _CHECKPOINTED.findall(gave)}
    handing = {int(m): _at(s) for s, m in _HANDING.findall(gave)}
    handed = {int(m): _at(s) for s, m in _HANDED.findall(gave)}
    taken = {int(m): _at(s) for s, m in _TOOK.findall(took)}  # (the last time each was taken)
    rebuilt = {int(m): (snap, int(rec), float(sec)) for _, m, snap, _, rec, sec in _REBUILT.findall(took)}
    out = []
    for member in sorted(taken, key=taken.__getitem__):
        snap, records, seconds = rebuilt[member]
        if member in handed:
            out.append(
                Move(
                    member,
                    "handed over" if member in checkpointed else "handed over (no checkpoint)",
                    handed[member] - handing[member],
                    taken[member] - handed[member],
                    seconds,
                    bool(snap),
                    records,
                )
            )
        else:
            out.append(Move(member, "host killed", None, taken[member] - killed_at, seconds, bool(snap), records))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods-per-node", type=int, default=110)
    ap.add_argument("--duration", default="15m")
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    workdir = args.out / "bench-pool"
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"fleet-{args.nodes}x{args.pods_per_node}-{args.duration}.json"
    data = fleet(args.nodes, args.pods_per_node, duration=args.duration)
    path.write_text(json.dumps(data))
    observations = args.nodes * (parse_duration(args.duration) // 10**9 // 10)  # (one pass every 10 s)
    print(
        f"the fleet: {args.nodes} nodes x {args.pods_per_node} pods, {args.duration}; the eviction manager's "
        f"{args.members} members in a pool"
    )
    still, _ = one_run(path, args.members, observations, workdir, move=False)
    print(f"  members left where they started: {still:.1f} s", flush=True)
    moving, moves = one_run(path, args.members, observations, workdir, move=True)
    print(f"  members moved twice: {moving:.1f} s ({moving - still:+.1f} s)")
    print(f"    {'member':>6} {'how':<27} {'handing s':>9} {'gap s':>6} {'rebuild s':>9} {'from':<9} {'records':>8}")
    for m in moves:
        handing = f"{m.handing_s:.2f}" if m.handing_s is not None else "-"
        source = "snapshot" if m.from_snapshot else "history"
        print(
            f"    {m.member:>6} {m.how:<27} {handing:>9} {m.gap_s:>6.2f} {m.rebuild_s:>9.2f} {source:<9} "
            f"{m.records_read:>8,}"
        )


if __name__ == "__main__":
    main()
