"""End to end through Kafka and PostgreSQL: does the distributed stack keep up?

Every service runs as its own process (``ledgerlet service NAME``) on a Kafka-protocol
broker (Tansu, in memory) and the local PostgreSQL; ``ledgerlet drive`` feeds a
generated cluster of DaemonSet pods in, observed every 10 s of virtual time. One node in
ten runs out of memory after two minutes, so the eviction manager evicts a pod there on
every pass from then on.

Reported: wall seconds per 10 s of virtual time once started (under 10 s keeps up), node
observations per second from the collector to the store, and latency, from the
collector publishing an observation (its Kafka timestamp) to the store holding it, and
to the store holding a decision taken on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from tests.support.brokers import Tansu  # noqa: E402
from tests.support.stack import LocalStack  # noqa: E402

from ledgerlet_core.contracts.observed import OBSERVED_BATCH, observed_index  # noqa: E402
from ledgerlet_services.runtime.topic_specs import OBSERVATIONS  # noqa: E402
from process_memory import PeakMemory, postgres_backends  # noqa: E402
from scenarios import daemonset_cluster  # noqa: E402

PG = "postgresql://postgres@127.0.0.1:5432/postgres"


class _Head(msgspec.Struct):
    id: str
    t: int
    type: str = ""
    data: msgspec.Raw = msgspec.Raw(b"null")


_HEAD = msgspec.json.Decoder(_Head)  # skips the rest of the envelope


def scenario(nodes: int, pods: int, duration: str) -> dict[str, Any]:
    spec = daemonset_cluster(nodes, pods, duration=duration)
    # one node in ten: system memory grows from 2m on until the node is under memory pressure
    for n in range(0, nodes, 10):
        spec["spec"]["usage"][f"node/node-{n:05d}"]["system"]["memory"] = [[0, "4Gi"], [120, "4Gi"], [200, "161Gi"]]
    return spec


class ObservationClock:
    """Reads the observations topic as another consumer group would, noting when each
    observation was published (Kafka's record timestamp) and its virtual time."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.published: dict[str, float] = {}
        self.by_instant: dict[int, list[float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    async def _run(self) -> None:
        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=f"bench-probe-{uuid.uuid4().hex[:6]}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=50,
            max_partition_fetch_bytes=16 * 1024 * 1024,
        )
        await consumer.start()
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=200, max_records=20_000)
                for msgs in batches.values():
                    for m in msgs:
                        head = _HEAD.decode(m.value)
                        ts = m.timestamp / 1000
                        # (a tick's observations travel as one batch: each member counts)
                        ids = observed_index(head.data).ids if head.type == OBSERVED_BATCH else [head.id]
                        for i in ids:
                            self.published[i] = ts
                        self.by_instant.setdefault(head.t, []).extend([ts] * len(ids))
        finally:
            await consumer.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def stored_times(dsn: str, run: str) -> tuple[dict[str, float], list[tuple[str, list[str], float]]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT event_id, extract(epoch from recorded_at) AS at FROM events "
            "WHERE run = $1 AND type = 'NodeObserved'",
            run,
        )
        observations = {r["event_id"]: float(r["at"]) for r in rows}
        rows = await conn.fetch(  # (observations stored a tick at a time: each member)
            "SELECT m.event_id, extract(epoch from e.recorded_at) AS at FROM observation_members m "
            "JOIN events e ON e.position = m.position WHERE m.run = $1",
            run,
        )
        observations.update({r["event_id"]: float(r["at"]) for r in rows})
        rows = await conn.fetch(
            "SELECT type, causes, extract(epoch from recorded_at) AS at FROM events "
            "WHERE run = $1 AND kind = 'decision'",
            run,
        )
        decisions = [(r["type"], json.loads(r["causes"]), float(r["at"])) for r in rows]
    finally:
        await conn.close()
    return observations, decisions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=110)
    ap.add_argument("--duration", default="4m")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    args.out.mkdir(exist_ok=True)
    path = args.out / f"bench-distributed-{args.nodes}x{args.pods_per_node}.json"
    path.write_text(json.dumps(scenario(args.nodes, args.pods_per_node, args.duration)))
    workdir = args.out / "bench-distributed"
    workdir.mkdir(exist_ok=True)
    name = f"ledgerlet_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    dsn = f"{PG.rsplit('/', 1)[0]}/{name}"
    broker = Tansu(log_path=workdir / "tansu.log").start()
    stack = LocalStack(broker.url, dsn, workdir)
    clock = ObservationClock(broker.bootstrap, OBSERVATIONS)
    run = f"bench-{uuid.uuid4().hex[:8]}"

    driver: list[subprocess.Popen[bytes]] = []

    def processes() -> dict[str, int]:
        """Every process of the stack: the services, the driver, the broker, PostgreSQL's backends."""
        procs = [*stack.procs.items(), *(("drive", d) for d in driver)]
        found = {label: p.pid for label, p in procs if p.poll() is None}
        if broker.proc is not None and broker.proc.poll() is None:
            found["broker (Tansu)"] = broker.proc.pid
        for pid in postgres_backends(name):
            found[f"postgres backend {pid}"] = pid
        return found

    memory = PeakMemory(processes)
    try:
        stack.start()
        clock.start()
        memory.start()
        began = time.time()
        drive = stack.drive(path, workdir / "decisions.jsonl", run_id=run, timeout=3600)
        driver.append(drive)
        while drive.poll() is None:
            time.sleep(5)
            steps = sorted(clock.by_instant)
            print(
                f"  {time.time() - began:6.0f}s wall: virtual {steps[-1] / 1e9 if steps else 0:5.0f}s, "
                f"{len(clock.published):,} observations",
                flush=True,
            )
        stack.finish(drive, run)
        wall = time.time() - began
        memory.stop()
        time.sleep(2)
        clock.stop()
        observations, decisions = asyncio.run(stored_times(dsn, run))
    finally:
        stack.stop()
        broker.stop()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    report(args, clock, observations, decisions, wall)
    print("\n".join(memory.lines()))


def report(
    args: argparse.Namespace,
    clock: ObservationClock,
    observations: dict[str, float],
    decisions: list[tuple[str, list[str], float]],
    wall: float,
) -> None:
    instants = sorted(t for t in clock.by_instant if t >= 20 * 10**9)  # after start-up
    firsts = [min(clock.by_instant[t]) for t in instants]
    per10 = [
        (b - a) / ((tb - ta) / 1e10) for a, b, ta, tb in zip(firsts, firsts[1:], instants, instants[1:], strict=False)
    ]
    slowest = sorted(zip(per10, instants[1:], strict=False), reverse=True)[:5]
    print("  slowest steps: " + ", ".join(f"{w:.1f} s at {t / 1e9:.0f} s" for w, t in slowest))
    steady_obs = sum(len(clock.by_instant[t]) for t in instants[1:])
    obs_rate = steady_obs / (firsts[-1] - firsts[0]) if len(firsts) > 1 else 0.0
    to_store = [observations[i] - ts for i, ts in clock.published.items() if i in observations]
    to_decision = [
        at - clock.published[c] for _type, causes, at in decisions for c in causes[:1] if c in clock.published
    ]
    pods = args.nodes * args.pods_per_node
    print(
        f"distributed (Kafka + PostgreSQL, {args.nodes:,} nodes x {args.pods_per_node} pods = {pods:,} pods): "
        f"{statistics.median(per10):.2f} s wall per 10 s virtual (worst {max(per10):.2f}; "
        f"{'keeps up' if max(per10) < 10 else 'FALLS BEHIND'}), {obs_rate:,.0f} observations/s "
        f"({obs_rate * args.pods_per_node:,.0f} pod rows/s); {wall:.0f} s in all"
    )
    print(
        f"  observation -> stored: p50 {percentile(to_store, 0.5) * 1000:,.0f} ms, "
        f"p99 {percentile(to_store, 0.99) * 1000:,.0f} ms ({len(to_store):,} observations)"
    )
    if to_decision:
        print(
            f"  observation -> stored decision: p50 {percentile(to_decision, 0.5) * 1000:,.0f} ms, "
            f"p99 {percentile(to_decision, 0.99) * 1000:,.0f} ms ({len(to_decision):,} decisions)"
        )


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(PG)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


if __name__ == "__main__":
    main()
