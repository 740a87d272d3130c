"""Event-store append throughput: SQLite (embedded default) and PostgreSQL.

Appends realistic envelopes (decisions and compact observations) in batches of 5,000,
the recorder's batch size, through the store's public ``append_batch``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path

import asyncpg
import msgspec

from ledgerlet_core.contracts.decisions import NodeReclaimed
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import TimerSet
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_store.store import open_store

#: a derived observation as the recorder stores it (node-level stats, ~1 KB)
OBSERVATION = json.dumps(
    {
        "node": "NODE",
        "summary": {
            "node": {
                "nodeName": "NODE",
                "memory": {"availableBytes": 3221225472, "workingSetBytes": 5368709120, "rssBytes": 4831838208},
                "fs": {"availableBytes": 64424509440, "capacityBytes": 107374182400, "inodesFree": 6000000},
                "runtime": {"imageFs": {"availableBytes": 64424509440, "capacityBytes": 107374182400}},
                "rlimit": {"maxpid": 4194304, "curproc": 812},
                "systemContainers": [{"name": "pods", "memory": {"workingSetBytes": 4294967296}}],
            }
        },
        "source": "usage",
        "runtime": {"layout": "shared", "images": 14, "deadContainers": 3},
        "podsOmitted": True,
    }
).encode()


def envelopes(n: int, run: str, *, mix: str) -> list[Envelope]:
    """``mix="recorder"``: what the recorder stores at scale (observations, then clock
    bookkeeping and decisions); ``"decisions"``: decisions only, every one indexed."""
    out: list[Envelope] = []
    for i in range(n):
        node = f"node-{i % 5000:04d}"
        t = (i // 5000) * 10 * 10**9
        if mix == "decisions" or i % 100 == 0:
            out.append(
                make_envelope(
                    NodeReclaimed(signal="nodefs.available", action="GarbageCollectContainers", bytes_freed=i),
                    run=run,
                    t=t,
                    order=[1, 0, 20, i],
                    stream=f"pod/default/pod-{i}",
                    node=node,
                    pod=f"default/pod-{i}",
                )
            )
        elif i % 25 == 0:
            out.append(
                make_envelope(TimerSet(at=t, owner="x", phase=1), run=run, t=t, order=[1, 1, 10, i], stream="clock")
            )
        else:
            env = make_envelope(
                TimerSet(at=t, owner="x", phase=1), run=run, t=t, order=[1, 0, 10, i], stream=f"node/{node}", node=node
            )
            out.append(
                msgspec.structs.replace(env, type="NodeObserved", kind="internal", data=msgspec.Raw(OBSERVATION))
            )
    return out


async def measure(dsn: str, n: int, batch: int, mix: str) -> float:
    store = await open_store(dsn)
    try:
        events = envelopes(n, uuid.uuid4().hex, mix=mix)
        began = time.perf_counter()
        # two appends in flight, as the recorder has them: one prepares while one writes
        pending: asyncio.Task[int] | None = None
        for i in range(0, n, batch):
            task = asyncio.create_task(store.append_batch(events[i : i + batch]))
            if pending is not None:
                await pending
            pending = task
        if pending is not None:
            await pending
        return n / (time.perf_counter() - began)
    finally:
        await store.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    args.out.mkdir(exist_ok=True)
    db = args.out / "bench-store.db"
    for mix in ("recorder", "decisions"):
        for p in args.out.glob("bench-store.db*"):
            p.unlink()
        sqlite = await measure(f"sqlite:///{db}", args.events, args.batch, mix)
        name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(args.pg)
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            base = args.pg.rsplit("/", 1)[0]
            pg = await measure(f"{base}/{name}", args.events, args.batch, mix)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()
        what = f"({args.events:,} events, {mix} mix, batches of {args.batch:,})"
        print(f"store append, SQLite:     {sqlite:>10,.0f} events/s  {what}")
        print(f"store append, PostgreSQL: {pg:>10,.0f} events/s  {what}")


if __name__ == "__main__":
    asyncio.run(main())
