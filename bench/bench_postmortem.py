"""Post-mortem figures on PostgreSQL: "why was this pod evicted" latency on a store
holding 10 million events, and verified replay's rate.

A real run is recorded once (closed-loop nodes, memory leaks that end in evictions),
then copied inside PostgreSQL under new run ids until the store holds ``--events``.
Explanations are asked for evicted pods of random runs, through the same code the
API and ``ledgerlet explain`` use. Replay verifies the original run from PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.replay import replay_run
from ledgerlet_services.audit.queries import Audit
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from scenarios import cluster

COLUMNS = "run, stream, version, type, kind, schema_version, t, order_key, node, pod, causes, data, recorded_at"


async def fill(dsn: str, base: str, target: int) -> int:
    """Copy run ``base`` under new run ids until the table holds ``target`` events."""
    conn = await asyncpg.connect(dsn)
    try:
        total = await conn.fetchval("SELECT count(*) FROM events")
        copies = 0
        began = time.perf_counter()
        while total < target:
            run = f"copy-{copies:05d}"
            copies += 1
            n = await conn.execute(
                f"""INSERT INTO events (event_id, {COLUMNS})
                    SELECT md5($2 || event_id)::uuid::text, $2, $2 || substr(stream, length(run) + 1),
                           version, type, kind, schema_version, t, order_key, node, pod, causes, data, recorded_at
                    FROM events WHERE run = $1""",
                base,
                run,
            )
            total += int(n.split()[-1])
            # a batch row's pods are found through batch_members: the copy's rows point at
            # the copied batch (its new position), so reads by pod (explain) find a copied
            # run's inputs; reads by member id do not (the copied batch's data and causes
            # keep the original ids), and nothing here reads a copy that way
            await conn.execute(
                """INSERT INTO batch_members (event_id, run, type, t, order_key, node, pod, position)
                   SELECT md5($2 || m.event_id)::uuid::text, $2, m.type, m.t, m.order_key, m.node, m.pod, copy.position
                   FROM batch_members m
                   JOIN events original ON original.position = m.position
                   JOIN events copy ON copy.event_id = md5($2 || original.event_id)::uuid::text
                   WHERE m.run = $1""",
                base,
                run,
            )
            if copies % 10 == 0:
                rate = total / (time.perf_counter() - began)
                print(f"  {total:>11,} events ({copies} copies, {rate:,.0f}/s)", flush=True)
        await conn.execute("ANALYZE events")
        await conn.execute("ANALYZE batch_members")
        return copies
    finally:
        await conn.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    name = f"ledgerlet_bench_pm_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(args.pg)
    await admin.execute(f'CREATE DATABASE "{name}"')
    dsn = f"{args.pg.rsplit('/', 1)[0]}/{name}"
    try:
        spec = cluster(args.nodes, 30, duration="30m", pressure_every=5)
        for n in range(0, args.nodes, 5):  # one node in five: the system's memory grows until pods must go
            spec["spec"]["usage"][f"node/node-{n:04d}"]["system"]["memory"] = [[0, "2Gi"], [600, "2Gi"], [1500, "40Gi"]]
        scenario = load_scenario(json.dumps(spec), "bench-postmortem.json")
        async with await open_store(dsn) as store:
            began = time.perf_counter()
            result = await run_embedded(scenario, store, run="base")
            print(f"recorded base run: {result.events_stored:,} events in {time.perf_counter() - began:.1f}s")
            print(f"verifying the base run from PostgreSQL ({result.events_stored:,} events) ...", flush=True)
            replay = await replay_run(store, "base")
            mismatches = replay.mismatches()
            assert not mismatches, mismatches[:3]
            rec = replay.recorded
            replay_rate = replay.events_per_second
            print(
                f"verified replay: {replay.stored_events:,} events, inputs read {rec.read_seconds:.2f}s, "
                f"re-derived and compared {replay.derive_seconds:.2f}s: "
                f"{replay_rate:,.0f} events/s end to end"
            )
            quick = await replay_run(store, "base", quick=True)
            assert not quick.mismatches(), quick.mismatches()[:3]
            took = quick.recorded.read_seconds + quick.derive_seconds
            print(
                f"quick verified replay (--quick): {quick.quiet_count:,} quiet nodes not observed again, "
                f"{quick.compared:,} decisions and internal events compared in {took:.2f}s "
                f"(full: {replay.compared:,} in {rec.read_seconds + replay.derive_seconds:.2f}s), "
                f"{quick.events_per_second:,.0f} stored events/s"
            )
        print(f"filling to {args.events:,} events ...", flush=True)
        copies = await fill(dsn, "base", args.events)
        async with await open_store(dsn, migrate=False) as store:
            total = await store.count()
            audit = Audit(store)
            evicted = [e.envelope.pod for e in await store.read_by_type(["PodEvicted"], run="base")]
            assert evicted, "the base run evicted nothing: nothing to explain"
            rng = random.Random(7)
            runs = ["base"] + [f"copy-{i:05d}" for i in range(copies)]
            for _ in range(20):  # warm the connection pool and caches
                await audit.explain(rng.choice(runs), rng.choice(evicted) or "")
            times = []
            for _ in range(args.queries):
                run, pod = rng.choice(runs), rng.choice(evicted) or ""
                t0 = time.perf_counter()
                exp = await audit.explain(run, pod)
                times.append((time.perf_counter() - t0) * 1000)
                assert exp.outcome is not None and exp.outcome["type"] == "PodEvicted"
        times.sort()
        p50 = statistics.median(times)
        p99 = times[int(len(times) * 0.99) - 1]
        print(
            f"why was this pod evicted (PostgreSQL, {total:,} events, {len(evicted)} evicted pods x {len(runs)} runs): "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms over {len(times)} explanations (target p99 < 50 ms)"
        )
        print(f"verified replay from PostgreSQL: {replay_rate:,.0f} events/s (target >= 100,000)")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench-postmortem.json").write_text(
            json.dumps(
                {"events": total, "explain_p50_ms": p50, "explain_p99_ms": p99, "replay_events_per_s": replay_rate},
                indent=2,
            )
        )
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
