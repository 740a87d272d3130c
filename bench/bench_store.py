"""Event-store append throughput: SQLite (embedded default) and PostgreSQL.

Appends realistic envelopes (decisions and compact observations) in batches of 5,000,
the recorder's batch size, through the store's public ``append_batch``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from pathlib import Path

import asyncpg

from ledgerlet_core.contracts.decisions import NodeReclaimed
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_store.store import EventStore


def envelopes(n: int, run: str) -> list[Envelope]:
    return [
        make_envelope(
            NodeReclaimed(signal="nodefs.available", action="GarbageCollectContainers", bytes_freed=i),
            run=run,
            t=i * 10**9,
            order=[1, 0, 20, i],
            stream=f"node/node-{i % 5000:04d}",
            node=f"node-{i % 5000:04d}",
        )
        for i in range(n)
    ]


async def measure(dsn: str, n: int, batch: int) -> float:
    store = await EventStore.open(dsn)
    try:
        events = envelopes(n, uuid.uuid4().hex)
        began = time.perf_counter()
        for i in range(0, n, batch):
            await store.append_batch(events[i : i + batch])
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
    for p in args.out.glob("bench-store.db*"):
        p.unlink()
    sqlite = await measure(f"sqlite:///{db}", args.events, args.batch)
    print(f"store append, SQLite:     {sqlite:>10,.0f} events/s  ({args.events:,} events, batches of {args.batch:,})")
    name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(args.pg)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        base = args.pg.rsplit("/", 1)[0]
        pg = await measure(f"{base}/{name}", args.events, args.batch)
        print(f"store append, PostgreSQL: {pg:>10,.0f} events/s  ({args.events:,} events, batches of {args.batch:,})")
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
