"""Workload controllers: pods created from templates, and evicted pods replaced as owners do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store

NODE = "{apiVersion: v1, kind: Node, metadata: {name: %s, labels: {disk: %s}}, status: {capacity: {memory: 8Gi}}}"

SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: controllers}
spec:
  duration: 3m
  kubeletConfig: {evictionHard: {memory.available: 1Gi}}
  objects:
    - %(n1)s
    - %(n2)s
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: shop}
      spec: {replicas: 3, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web}]}}}
    - apiVersion: apps/v1
      kind: DaemonSet
      metadata: {name: agent, namespace: ops}
      spec:
        template:
          metadata: {labels: {app: agent}}
          spec: {nodeSelector: {disk: ssd}, containers: [{name: agent}]}
    - apiVersion: apps/v1
      kind: StatefulSet
      metadata: {name: db, namespace: shop}
      spec: {replicas: 2, template: {spec: {containers: [{name: db}]}}}
    - apiVersion: v1
      kind: Pod
      metadata:
        name: db-0
        namespace: shop
        annotations: {ledgerlet/exit-after: "15"}
        ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, controller: true}]
      spec: {nodeName: n1, containers: [{name: db}]}
    - apiVersion: apps/v1
      kind: ReplicaSet
      metadata: {name: cache, namespace: shop}
      spec: {replicas: 1, template: {spec: {containers: [{name: cache}]}}}
    - apiVersion: v1
      kind: Pod
      metadata:
        name: cache-old
        namespace: shop
        ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: cache, controller: true}]
      spec: {nodeName: n2, containers: [{name: cache}]}
  usage:
    node/n1: {system: {memory: 1Gi}}
    node/n2: {system: {memory: 1Gi}}
    shop/db-0: {memory: [[0, 1Gi], [60, 7Gi]]}
    shop/cache-old: {memory: [[0, 1Gi], [90, 7Gi]]}
"""


async def run(tmp_path: Path) -> tuple[list[Any], list[Any]]:
    text = SCENARIO % {"n1": NODE % ("n1", "ssd"), "n2": NODE % ("n2", "hdd")}
    scenario = load_scenario(text, "c.yaml")
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = await open_store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        result = await run_embedded(scenario, store)
        created = await store.read_by_type(["ObjectCreated"], run=result.run)
        return [c.envelope for c in created], [d.envelope for d in result.decisions]
    finally:
        await store.close()


async def test_workloads_create_their_pods_and_replace_evicted_ones(tmp_path: Path) -> None:
    created, decisions = await run(tmp_path)
    at_start = [(e.pod, decode_data(e).object["spec"].get("nodeName", "")) for e in created if e.t == 0]
    names = [p for p, _ in at_start]
    web = [n for n in names if n.startswith("shop/web-")]
    assert len(web) == 3 and len({n.rsplit("-", 1)[0] for n in web}) == 1  # web-<template hash>-<suffix>
    assert all(len(n.rsplit("-", 1)[1]) == 5 for n in web)
    assert ("ops/" + "agent", "n1") in [(p.rsplit("-", 1)[0], n) for p, n in at_start]  # only the ssd node
    assert not any(p.startswith("ops/agent") and n == "n2" for p, n in at_start)
    # StatefulSet, OrderedReady: db-0 exists and runs, so db-1 is created (then scheduled)
    assert "shop/db-1" in names and "shop/db-0" not in names
    assert "shop/cache-old" not in names and not any(n.startswith("shop/cache-") for n in names)

    # the first eviction and replacement of each pod (the replacements are scheduled and evicted in turn)
    evicted: dict[str, int] = {}
    replaced: dict[str, tuple[int, Any]] = {}
    for d in decisions:
        if d.type == "PodEvicted":
            evicted.setdefault(d.pod, d.t)
        elif d.type == "PodReplaced":
            replaced.setdefault(d.pod, (d.t, decode_data(d)))
    # a StatefulSet pod is recreated under its own name once the old one is gone: it would take
    # 15s to exit, but a hard eviction's 1s grace cuts that short
    t, db = replaced["shop/db-0"]
    assert db.replacement == "shop/db-0" and db.owner == "StatefulSet/db" and t == evicted["shop/db-0"] + 10**9
    # a ReplicaSet replaces a failed pod at once, under a new name
    t, cache = replaced["shop/cache-old"]
    assert cache.replacement.startswith("shop/cache-") and cache.replacement != "shop/cache-old"
    assert t == evicted["shop/cache-old"] and cache.owner == "ReplicaSet/cache"
    # the scheduler placed it on the only node without a memory-pressure taint yet; that node's
    # kubelet refused it (its own condition is already True), and the next replacement came a
    # second later and found both nodes tainted
    by_pod = [(d.t, d.type) for d in decisions if d.pod == cache.replacement]
    assert (evicted["shop/cache-old"], "PodScheduled") in by_pod and (
        evicted["shop/cache-old"],
        "PodRejected",
    ) in by_pod
    t_next, again = replaced[cache.replacement]
    assert t_next == t + 10**9
    unschedulable = next(d for d in decisions if d.pod == again.replacement and d.type == "PodUnschedulable")
    assert decode_data(unschedulable).message == (
        "0/2 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/memory-pressure: }. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_controllers_are_deterministic(tmp_path: Path) -> None:
    a = await run(tmp_path / "a")
    b = await run(tmp_path / "b")
    assert [(e.t, e.type, e.pod) for e in a[0]] == [(e.t, e.type, e.pod) for e in b[0]]
    assert [(e.t, e.type, e.pod) for e in a[1]] == [(e.t, e.type, e.pod) for e in b[1]]
