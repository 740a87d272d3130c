"""The vector cycle decides exactly as the node-by-node one: random clusters (resources,
taints, selectors, cordons, priorities, nominations, disruption budgets, node affinity,
topology spread, inter-pod (anti-)affinity, host ports, images), both cycles, every field
of the result compared."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import LabelSelector, Pod, Taint
from ledgerlet_core.model.k8s.selection import label_selector
from ledgerlet_core.scheduling import records
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import CycleResult, schedule_one
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.preemption import PDB
from ledgerlet_core.scheduling.table import NodeTable
from tests.support.tiers import seeds

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
APPS = ["web", "db", "batch"]
IMAGES = ["nginx:1.25", "redis", "busybox:1", "registry.k8s.io/pause:3.10"]
KEYS = ["zone", "kubernetes.io/hostname", "rack"]


def _selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.7:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
    expr: dict[str, Any] = {"key": "app", "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(APPS, rng.randint(1, 2))
    return {"matchExpressions": [expr]}


def _node_term(rng: random.Random, nodes: int) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.8:
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        key = "size" if op in ("Gt", "Lt") else rng.choice(["zone", "rack"])
        expr: dict[str, Any] = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = rng.sample(ZONES if key == "zone" else ["r1", "r2"], 1)
        elif op in ("Gt", "Lt"):
            expr["values"] = [str(rng.choice([2, 4, 8]))]
        term["matchExpressions"] = [expr]
    if rng.random() < 0.3 or not term:
        term["matchFields"] = [
            {"key": "metadata.name", "operator": rng.choice(["In", "NotIn"]), "values": [f"n{rng.randrange(nodes)}"]}
        ]
    return term


def _affinity_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": _selector(rng), "topologyKey": rng.choice(KEYS)}
    if rng.random() < 0.2:
        term["namespaces"] = ["default", "other"]
    if rng.random() < 0.1:
        term["namespaceSelector"] = {}
    return term


def _scheduling(rng: random.Random, spec: dict[str, Any], nodes: int, extras: float) -> None:
    """Affinity, spread, ports and images, each on some pods."""
    affinity: dict[str, Any] = {}
    if rng.random() < 0.15 * extras:
        na: dict[str, Any] = {}
        if rng.random() < 0.6:
            na["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [_node_term(rng, nodes) for _ in range(rng.randint(1, 2))]
            }
        if rng.random() < 0.6:
            na["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "preference": _node_term(rng, nodes)} for _ in range(rng.randint(0, 2))
            ]
        affinity["nodeAffinity"] = na
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.2 * extras:
            group: dict[str, Any] = {}
            if rng.random() < 0.6:
                group["requiredDuringSchedulingIgnoredDuringExecution"] = [_affinity_term(rng)]
            if rng.random() < 0.6:
                group["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": _affinity_term(rng)}
                    for _ in range(rng.randint(1, 2))
                ]
            affinity[kind] = group
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.25 * extras:
        constraints = []
        for key in rng.sample(KEYS, rng.randint(1, 2)):
            c: dict[str, Any] = {
                "maxSkew": rng.randint(1, 3),
                "topologyKey": key,
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": _selector(rng),
            }
            if rng.random() < 0.3 and c["whenUnsatisfiable"] == "DoNotSchedule":
                c["minDomains"] = rng.randint(1, 5)
            if rng.random() < 0.3:
                c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.3:
                c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.2:
                c["matchLabelKeys"] = ["tier"]
            constraints.append(c)
        spec["topologySpreadConstraints"] = constraints
    container = spec["containers"][0]
    if rng.random() < 0.15 * extras:
        container["ports"] = [
            {"containerPort": 80, "hostPort": rng.choice([80, 8080]), "hostIP": rng.choice(["", "10.0.0.1"])}
        ]
    if rng.random() < 0.5:
        container["image"] = rng.choice(IMAGES)


def make_pod(rng: random.Random, name: str, node: str = "", *, nodes: int = 1, extras: float = 1.0) -> Pod:
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
    _scheduling(rng, spec, nodes, extras)
    labels = {"app": rng.choice(APPS), "tier": rng.choice(["front", "back"])}
    namespace = "other" if rng.random() < 0.1 else "default"
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}}
    pod = apply_defaults(convert({**doc, "spec": spec}, Pod))
    assert isinstance(pod, Pod)
    return pod


def make_cluster(rng: random.Random) -> tuple[list[NodeInfo], dict[str, list[PodInfo]], list[PDB]]:
    nodes = []
    count = rng.randint(1, 40)
    for i in range(count):
        alloc = {"cpu": rng.choice([1, 2, 4, 8]) * 10**9, "memory": rng.choice([2, 4, 8, 16]) * GI}
        alloc["pods"] = rng.choice([3, 5, 10, 110]) * 10**9
        if rng.random() < 0.5:
            alloc["ephemeral-storage"] = rng.choice([10, 50, 100]) * GI
        labels = {"kubernetes.io/hostname": f"n{i}"}
        if rng.random() < 0.9:
            labels["zone"] = rng.choice(ZONES)
        if rng.random() < 0.6:
            labels["rack"] = rng.choice(["r1", "r2", ""])
        if rng.random() < 0.7:
            labels["size"] = str(rng.choice([1, 4, 16]))
        node = NodeInfo(f"n{i}", i, labels, alloc)
        node.taints = rng.sample(TAINTS, rng.choice([0, 0, 0, 1, 2]))
        node.unschedulable = rng.random() < 0.1
        node.images = {name: rng.choice([10, 100, 600]) * 2**20 for name in rng.sample(IMAGES, rng.randint(0, 2))}
        for j in range(rng.randint(0, 6)):
            info = pod_info(make_pod(rng, f"p{i}-{j}", node.name, nodes=count, extras=0.5))
            info.start = rng.randint(0, 100) * 10**9
            info.terminating = rng.random() < 0.05
            node.add(info)
        nodes.append(node)
    nominated: dict[str, list[PodInfo]] = {}
    for k in range(rng.choice([0, 0, 1, 3])):
        info = pod_info(make_pod(rng, f"nominated-{k}", nodes=count))
        info.nominated = rng.choice(nodes).name
        nominated.setdefault(info.nominated, []).append(info)
    pdbs = [
        PDB(f"pdb-{app}", "default", LabelSelector(match_labels={"app": app}), rng.randint(0, 2))
        for app in rng.sample(["web", "db", "batch"], rng.randint(0, 2))
    ]
    return nodes, nominated, pdbs


def vector_parts(nodes: list[NodeInfo]) -> dict[str, Any]:
    """The table and the per-node counts, as the cache keeps them."""
    index = PodIndex()
    index.reset(nodes)
    return {"table": NodeTable.build(nodes), "index": index}


def default_selector(rng: random.Random) -> Any:
    return rng.choice([None, None, label_selector(LabelSelector(match_labels={"app": rng.choice(APPS)}))])


def essentials(r: CycleResult) -> dict[str, Any]:
    post = r.preemption
    top = sorted(r.scores, key=lambda s: -s.total)[:5]
    return {
        "node": r.node,
        "statuses": list(r.statuses.items()),
        "count": len(r.statuses),
        "filtered": records.filtered(r.statuses),
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


@pytest.mark.parametrize("seed", seeds(600, quick=100))
def test_the_vector_cycle_decides_as_the_node_by_node_one(seed: int) -> None:
    rng = random.Random(seed)
    nodes, nominated, pdbs = make_cluster(rng)
    pod = pod_info(make_pod(rng, "pending", nodes=len(nodes)))
    if rng.random() < 0.2:
        pod.nominated = rng.choice(nodes).name
    settings = SchedulerConfig(percentage_of_nodes_to_score=rng.choice([0, 0, 10, 50, 100]))
    start = rng.randrange(len(nodes))
    kw: dict[str, Any] = {"now": 200 * 10**9, "start_index": start, "default_selector": default_selector(rng)}
    plain = schedule_one(pod, nodes, nominated, pdbs, settings, **kw)
    vector = schedule_one(pod, nodes, nominated, pdbs, settings, **vector_parts(nodes), **kw)
    assert essentials(vector) == essentials(plain)


def test_a_fractional_byte_keeps_the_cycle_node_by_node() -> None:
    node = NodeInfo("n0", 0, {}, {"cpu": 4 * 10**9, "memory": 4 * GI + 1, "pods": 110 * 10**9})
    assert not NodeTable.build([node]).exact


@pytest.mark.parametrize("seed", seeds(200, quick=40))
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


@pytest.mark.parametrize("seed", seeds(100, quick=20))
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


def _place_alike(
    shape: Any, attempt: int, start: int, nodes: Any, table: Any, index: Any, settings: SchedulerConfig
) -> int:
    """Schedule a pod of ``shape`` both ways, check they agree, bind it where they put it
    (its row refreshed and indexed as the cache does); the next cycle's start index."""
    import dataclasses

    pod = dataclasses.replace(shape, key=f"default/placed-{attempt}", name=f"placed-{attempt}", uid=f"u{attempt}")
    kw: dict[str, Any] = {"now": 200 * 10**9, "start_index": start}
    plain = schedule_one(pod, nodes, {}, [], settings, **kw)
    vector = schedule_one(pod, nodes, {}, [], settings, table=table, index=index, **kw)
    assert essentials(vector) == essentials(plain)
    if plain.node:
        row = table.index[plain.node]
        nodes[row].add(pod)
        table.refresh(row, nodes[row])
        index.added(pod, row)
    return int(plain.next_start)


@pytest.mark.parametrize("seed", seeds(100, quick=20))
def test_kept_score_columns_decide_as_fresh_ones_while_pods_bind(seed: int) -> None:
    """Pods of a few recurring shapes placed one after another, each bound where the cycle
    put it (rows refreshed as the cache refreshes them): the vector cycle, which keeps
    each row's resource scores until its node changes, against the node-by-node one."""

    rng = random.Random(9000 + seed)
    nodes, _, _ = make_cluster(rng)
    parts = vector_parts(nodes)
    table, index = parts["table"], parts["index"]
    settings = SchedulerConfig(percentage_of_nodes_to_score=rng.choice([0, 50, 100]))
    shapes = [pod_info(make_pod(rng, f"shape-{k}", nodes=len(nodes))) for k in range(2)]
    start = 0
    for attempt in range(10):
        start = _place_alike(rng.choice(shapes), attempt, start, nodes, table, index, settings)


@pytest.mark.parametrize("seed", seeds(60, quick=12))
def test_per_domain_counts_kept_while_pods_come_and_go_are_fresh_ones(seed: int) -> None:
    """Pods placed one after another and others removed, the cache's index moved by each:
    the vector cycle (InterPodAffinity's PreFilter reading the index's counts per domain,
    kept from one pod to the next) decides as the node-by-node one, and every kept count
    per domain equals one summed afresh."""

    rng = random.Random(12000 + seed)
    nodes, _, _ = make_cluster(rng)
    parts = vector_parts(nodes)
    table, index = parts["table"], parts["index"]
    settings = SchedulerConfig(percentage_of_nodes_to_score=rng.choice([0, 50, 100]))
    shapes = [pod_info(make_pod(rng, f"shape-{k}", nodes=len(nodes))) for k in range(3)]
    start = 0
    for attempt in range(12):
        start = _place_alike(rng.choice(shapes), attempt, start, nodes, table, index, settings)
        row = rng.randrange(len(nodes))
        if nodes[row].pods and rng.random() < 0.5:
            gone = nodes[row].remove(rng.choice(list(nodes[row].pods)))
            assert gone is not None
            table.refresh(row, nodes[row])
            index.removed(gone, row)
        fresh = PodIndex()
        fresh.reset(nodes)
        for term in index.terms():
            key = term[2].topology_key
            d = table.domains(key)
            kept = index.per_domain(d, key, term=term).tolist()
            assert kept == (fresh.per_domain(d, key, term=term).tolist() if term in fresh.terms() else [0] * d.n)
            match = (term[2].match,)
            assert index.per_domain(d, key, match).tolist() == fresh.per_domain(d, key, match).tolist()


@pytest.mark.parametrize("seed", seeds(100, quick=20))
def test_the_table_built_at_once_is_the_table_built_row_by_row(seed: int) -> None:
    """``NodeTable.build`` fills every column at once: the same columns and interned sets
    as refreshing each row in turn."""
    nodes, _, _ = make_cluster(random.Random(seed))
    built = NodeTable.build(nodes)
    by_rows = NodeTable.build([])
    by_rows.names = [n.name for n in nodes]
    by_rows.index = {name: i for i, name in enumerate(by_rows.names)}
    resources = sorted({k for n in nodes for k in (*n.allocatable, *n.requested)} - {"pods"})
    size = len(nodes)
    by_rows.alloc = {r: np.zeros(size, np.int64) for r in resources}
    by_rows.requested = {r: np.zeros(size, np.int64) for r in resources}
    for column in ("nonzero_cpu", "nonzero_memory", "pods", "allowed_pods", "taint_set", "port_set"):
        setattr(by_rows, column, np.zeros(size, np.int64))
    by_rows.unschedulable = np.zeros(size, np.bool_)
    by_rows.label_set = np.full(size, -1, np.int64)
    by_rows.image_set = np.full(size, -1, np.int64)
    for i, node in enumerate(nodes):
        by_rows.refresh(i, node)
    assert built.exact == by_rows.exact
    for name in ("alloc", "requested"):
        assert {r: v.tolist() for r, v in getattr(built, name).items()} == {
            r: v.tolist() for r, v in getattr(by_rows, name).items()
        }
    for column in (
        "nonzero_cpu", "nonzero_memory", "pods", "allowed_pods", "unschedulable", "taint_set", "label_set",
        "port_set", "image_set",
    ):  # fmt: skip
        assert getattr(built, column).tolist() == getattr(by_rows, column).tolist(), column
        assert getattr(built, column).dtype == getattr(by_rows, column).dtype, column
    for sets in ("taint_sets", "label_sets", "port_sets", "image_sets"):
        assert getattr(built, sets) == getattr(by_rows, sets), sets
