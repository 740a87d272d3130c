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
import time
from pathlib import Path
from typing import Any

import yaml

from ledgerlet_core.scenario import load_scenario
from ledgerlet_services.embedded import run_embedded
from ledgerlet_store.store import EventStore


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def _pod(name: str, node: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}],
            **spec,
        },
    }


def _rs(name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}],
                    **spec,
                },
            },
        },
    }


def scheduling_basic(nodes: int, init: int, measure: int) -> dict[str, Any]:
    objects = [_node(f"n{i}") for i in range(nodes)]
    objects += [_pod(f"init-{i}", f"n{i % nodes}", "100m") for i in range(init)]
    if measure:
        objects.append(_rs("measured", measure, "100m"))
    return _scenario("scheduling-basic", objects, "1s")


def preemption_basic(nodes: int, measure: int) -> dict[str, Any]:
    objects: list[dict[str, Any]] = [_node(f"n{i}") for i in range(nodes)]
    objects.append(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10}
    )
    objects += [
        _pod(f"low-{i}-{j}", f"n{i}", "900m", terminationGracePeriodSeconds=0) for i in range(nodes) for j in range(4)
    ]
    if measure:
        objects.append(_rs("high", measure, "3", priorityClassName="high", terminationGracePeriodSeconds=0))
    return _scenario("preemption-basic", objects, "30s")


def shutdown_110(nodes: int, shut: bool) -> dict[str, Any]:
    table = [
        {"priority": p, "shutdownGracePeriodSeconds": s}
        for p, s in ((0, 30), (1000, 30), (10000, 30), (100000, 20), (2000000000, 10))
    ]
    objects: list[dict[str, Any]] = [_node(f"n{i}") for i in range(nodes)]
    for p, _ in ((1000, 0), (10000, 0), (100000, 0)):
        objects.append(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{p}"}, "value": p}
        )
    classes = ["", "p1000", "p10000", "p100000", "system-node-critical"]
    for i in range(nodes):
        for j in range(110):
            pod = _pod(f"pod-{i}-{j}", f"n{i}", "10m")
            pod["metadata"]["annotations"] = {"ledgerlet/exit-after": str(j % 7)}
            if classes[j % 5]:
                pod["spec"]["priorityClassName"] = classes[j % 5]
            objects.append(pod)
    events = [{"at": "10s", "shutdown": {"node": f"n{i}"}} for i in range(nodes)] if shut else []
    return _scenario("shutdown-110", objects, "3m", {"shutdownGracePeriodByPodPriority": table}, events)


def _scenario(
    name: str,
    objects: list[dict[str, Any]],
    duration: str,
    kubelet: dict[str, Any] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": name},
        "spec": {"duration": duration, "kubeletConfig": kubelet or {}, "objects": objects, "events": events or []},
    }


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
