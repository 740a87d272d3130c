"""The vector cycle decides exactly as the node-by-node one: random clusters (resources,
taints, selectors, cordons, priorities, nominations, disruption budgets), both cycles,
every field of the result compared."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import LabelSelector, Pod, Taint
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import CycleResult, schedule_one
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.preemption import PDB
from ledgerlet_core.scheduling.vector import NodeTable

GI = 2**30 * 10**9  # memory in nanos
TAINTS = [
    Taint(key="dedicated", value="infra", effect="NoSchedule"),
    Taint(key="gpu", effect="NoExecute"),
    Taint(key="spot", value="yes", effect="PreferNoSchedule"),
    Taint(key="old", effect="PreferNoSchedule"),
]
TOLERATIONS: list[dict[str, Any]] = [
    {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
    {"key": "gpu", "operator": "Exists"},
    {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"},
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
ZONES = ["a", "b", "c"]


def make_pod(rng: random.Random, name: str, node: str = "") -> Pod:
    requests: dict[str, str] = {}
    if rng.random() < 0.9:
        requests["cpu"] = f"{rng.choice([0, 50, 100, 250, 500, 1000, 1500, 3000])}m"
    if rng.random() < 0.9:
        requests["memory"] = f"{rng.choice([0, 64, 128, 512, 1024, 3000, 8000])}Mi"
    if rng.random() < 0.2:
        requests["ephemeral-storage"] = f"{rng.choice([1, 5, 20])}Gi"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests}}],
        "priority": rng.choice([0, 10, 100, 1000]),
    }
    if node:
        spec["nodeName"] = node
    if rng.random() < 0.3:
        spec["tolerations"] = rng.sample(TOLERATIONS, rng.randint(1, 3))
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice(ZONES)}
    if rng.random() < 0.1:
        spec["preemptionPolicy"] = "Never"
    labels = {"app": rng.choice(["web", "db", "batch"])}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels}}
    pod = apply_defaults(convert({**doc, "spec": spec}, Pod))
    assert isinstance(pod, Pod)
    return pod


def make_cluster(rng: random.Random) -> tuple[list[NodeInfo], dict[str, list[PodInfo]], list[PDB]]:
    nodes = []
    for i in range(rng.randint(1, 40)):
        alloc = {"cpu": rng.choice([1, 2, 4, 8]) * 10**9, "memory": rng.choice([2, 4, 8, 16]) * GI}
        alloc["pods"] = rng.choice([3, 5, 10, 110]) * 10**9
        if rng.random() < 0.5:
            alloc["ephemeral-storage"] = rng.choice([10, 50, 100]) * GI
        node = NodeInfo(f"n{i}", i, {"zone": rng.choice(ZONES)}, alloc)
        node.taints = rng.sample(TAINTS, rng.choice([0, 0, 0, 1, 2]))
        node.unschedulable = rng.random() < 0.1
        for j in range(rng.randint(0, 6)):
            info = pod_info(make_pod(rng, f"p{i}-{j}", node.name))
            info.start = rng.randint(0, 100) * 10**9
            info.terminating = rng.random() < 0.05
            node.add(info)
        nodes.append(node)
    nominated: dict[str, list[PodInfo]] = {}
    for k in range(rng.choice([0, 0, 1, 3])):
        info = pod_info(make_pod(rng, f"nominated-{k}"))
        info.nominated = rng.choice(nodes).name
        nominated.setdefault(info.nominated, []).append(info)
    pdbs = [
        PDB(f"pdb-{app}", "default", LabelSelector(match_labels={"app": app}), rng.randint(0, 2))
        for app in rng.sample(["web", "db", "batch"], rng.randint(0, 2))
    ]
    return nodes, nominated, pdbs


def essentials(r: CycleResult) -> dict[str, Any]:
    post = r.preemption
    top = sorted(r.scores, key=lambda s: -s.total)[:5]
    return {
        "node": r.node,
        "statuses": list(r.statuses.items()),
        "feasible": r.feasible,
        "reasons": r.reasons,
        "message": r.message,
        "why": r.why,
        "next": r.next_start,
        "evaluated": r.evaluated,
        "top": [(s.node, s.total, s.plugins) for s in top],
        "preemption": None
        if post is None
        else (
            post.nominate,
            post.message,
            [v.key for v in post.victims],
            [(c.node, [v.key for v in c.victims], c.pdb_violations) for c in post.candidates],
            post.decided_by,
            post.tied,
            post.examined,
        ),
    }


@pytest.mark.parametrize("seed", range(300))
def test_the_vector_cycle_decides_as_the_node_by_node_one(seed: int) -> None:
    rng = random.Random(seed)
    nodes, nominated, pdbs = make_cluster(rng)
    pod = pod_info(make_pod(rng, "pending"))
    if rng.random() < 0.2:
        pod.nominated = rng.choice(nodes).name
    settings = SchedulerConfig(percentage_of_nodes_to_score=rng.choice([0, 0, 10, 50, 100]))
    start = rng.randrange(len(nodes))
    kw: dict[str, Any] = {"now": 200 * 10**9, "start_index": start}
    plain = schedule_one(pod, nodes, nominated, pdbs, settings, **kw)
    vector = schedule_one(pod, nodes, nominated, pdbs, settings, table=NodeTable.build(nodes), **kw)
    assert essentials(vector) == essentials(plain)


def test_a_fractional_byte_keeps_the_cycle_node_by_node() -> None:
    node = NodeInfo("n0", 0, {}, {"cpu": 4 * 10**9, "memory": 4 * GI + 1, "pods": 110 * 10**9})
    assert not NodeTable.build([node]).exact


@pytest.mark.parametrize("seed", range(200))
def test_victims_by_arithmetic_are_the_dry_runs_victims(seed: int) -> None:
    from ledgerlet_core.scheduling.preemption import select_victims_on_node

    rng = random.Random(1000 + seed)
    nodes, _, pdbs = make_cluster(rng)
    pod = pod_info(make_pod(rng, "preemptor"))
    pod.priority = rng.choice([100, 1000, 5000])
    for node in nodes:
        fast = select_victims_on_node(pod, node, pdbs, (), 50 * 10**9)
        slow = select_victims_on_node(pod, node, pdbs, (), 50 * 10**9, arithmetic=False)
        if isinstance(slow, tuple):
            assert isinstance(fast, tuple)
            assert ([v.key for v in fast[0]], fast[1]) == ([v.key for v in slow[0]], slow[1])
        else:
            assert fast == slow


@pytest.mark.parametrize("seed", range(100))
def test_kept_dry_runs_decide_as_fresh_ones_while_nodes_change(seed: int) -> None:
    """Preemption with kept dry runs, attempt after attempt as pods come and go, against
    preemption that runs every dry run afresh."""
    from ledgerlet_core.scheduling.preemption import DryRuns

    rng = random.Random(5000 + seed)
    nodes, nominated, pdbs = make_cluster(rng)
    kept = DryRuns()
    settings = SchedulerConfig()
    for attempt in range(6):
        pod = pod_info(make_pod(rng, f"preemptor-{attempt % 2}"))  # the same name comes back
        pod.priority = rng.choice([100, 1000])
        kw: dict[str, Any] = {"now": rng.choice([0, 10]) * 10**9, "start_index": 0}
        fresh = schedule_one(pod, nodes, nominated, pdbs, settings, **kw)
        cached = schedule_one(pod, nodes, nominated, pdbs, settings, dry_runs=kept, **kw)
        assert essentials(cached) == essentials(fresh)
        node = rng.choice(nodes)  # something changes between attempts
        if node.pods and rng.random() < 0.5:
            node.remove(rng.choice(list(node.pods)))
        else:
            node.add(pod_info(make_pod(rng, f"arrival-{attempt}", node.name)))
