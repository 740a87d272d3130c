"""Generated benchmark scenarios (written to out/, never committed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def cluster(nodes: int, pods_per_node: int, *, duration: str = "1h", pressure_every: int = 10) -> dict[str, Any]:
    """``nodes`` closed-loop nodes, ``pods_per_node`` pods each; every ``pressure_every``-th node's
    batch job leaks memory past the hard threshold during the hour, so evictions happen."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10000}
    ]
    usage: dict[str, Any] = {}
    for n in range(nodes):
        node = f"node-{n:04d}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node},
                "status": {"capacity": {"cpu": "32", "memory": "64Gi", "pods": "110", "ephemeral-storage": "200Gi"}},
            }
        )
        usage[f"node/{node}"] = {
            "system": {"memory": "2Gi", "nodefs": "40Gi", "pids": 500},
            "images": [{"name": "app:v1", "size": "500Mi", "inUse": True}, {"name": "old:v0", "size": "2Gi"}],
        }
        for i in range(pods_per_node):
            name = f"{node}-app-{i:03d}"
            spec: dict[str, Any] = {
                "nodeName": node,
                "containers": [
                    {
                        "name": "app",
                        "image": "app:v1",
                        "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
                    }
                ],
            }
            if i % 3 == 0:
                spec["priorityClassName"] = "high"
            objects.append(
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "bench"}, "spec": spec}
            )
            leak = n % pressure_every == 0 and i == pods_per_node - 1
            usage[f"bench/{name}"] = {
                "memory": [[0, "1500Mi"], [1800, "30Gi"]] if leak else [[0, "900Mi"], [3600, "1300Mi"]],
                "logs": [[0, "10Mi"], [3600, "200Mi"]],
                "rootfs": "20Mi",
                "pids": 40,
            }
    return {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": f"bench-{nodes}x{pods_per_node}"},
        "spec": {
            "duration": duration,
            "kubeletConfig": {"evictionHard": {"memory.available": "1Gi", "nodefs.available": "10%"}},
            "objects": objects,
            "usage": usage,
        },
    }


def write(path: Path, nodes: int, pods_per_node: int, **kw: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.dump(
            cluster(nodes, pods_per_node, **kw), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False
        )
    )
    return path


def daemonset_cluster(nodes: int, pods_per_node: int, *, duration: str = "2m") -> dict[str, Any]:
    """``nodes`` nodes running ``pods_per_node`` DaemonSets each (one pod per node per
    DaemonSet): large clusters written compactly, as the scenario spec intends."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{n:05d}"},
            "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "500Gi"}},
        }
        for n in range(nodes)
    ]
    usage: dict[str, Any] = {
        f"node/node-{n:05d}": {
            "system": {"memory": "4Gi", "nodefs": "50Gi", "pids": 800},
            "images": [{"name": "app:v1", "size": "500Mi", "inUse": True}],
        }
        for n in range(nodes)
    }
    for d in range(pods_per_node):
        name = f"svc-{d:03d}"
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "app:v1",
                                    "resources": {
                                        "requests": {"cpu": "50m", "memory": "1Gi"},
                                        "limits": {"memory": "4Gi"},
                                    },
                                }
                            ]
                        },
                    }
                },
            }
        )
        usage[f"bench/DaemonSet/{name}"] = {
            "memory": [[0, "900Mi"], [3600, "1100Mi"]],
            "logs": [[0, "10Mi"], [3600, "200Mi"]],
            "rootfs": "20Mi",
            "pids": 12,
        }
    return {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": f"daemonsets-{nodes}x{pods_per_node}"},
        "spec": {
            "duration": duration,
            "kubeletConfig": {"evictionHard": {"memory.available": "1Gi"}},
            "objects": objects,
            "usage": usage,
        },
    }


# -- scheduler_perf shapes (bench_scheduling.py) ------------------------------------------------
def _sched_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def _pod(
    name: str, node: str, cpu: str, *, namespace: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}],
            **spec,
        },
    }


def _rs(
    name: str, replicas: int, cpu: str, *, namespace: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name, **(labels or {})}},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}],
                    **spec,
                },
            },
        },
    }


def scheduling_basic(nodes: int, init: int, measure: int) -> dict[str, Any]:
    objects = [_sched_node(f"n{i}") for i in range(nodes)]
    objects += [_pod(f"init-{i}", f"n{i % nodes}", "100m") for i in range(init)]
    if measure:
        objects.append(_rs("measured", measure, "100m"))
    return _scenario("scheduling-basic", objects, "1s")


#: scheduler_perf's zones for TopologySpreading (``labelNodePrepareStrategy``)
ZONES = ("moon-1", "moon-2", "moon-3")
ZONE_KEY = "topology.kubernetes.io/zone"


def topology_spreading(nodes: int, init: int, measure: int, *, preferred: bool = False) -> dict[str, Any]:
    """scheduler_perf ``TopologySpreading`` (``preferred``: ``PreferredTopologySpreading``):
    nodes in three zones, ``init`` default pods bound, then ``measure`` pods labelled
    color=blue with a zone spread constraint of maxSkew 5 over the blue pods
    (``pod-with-topology-spreading.yaml``: DoNotSchedule; the preferred one: ScheduleAnyway)."""
    objects = [_sched_node(f"n{i}", {ZONE_KEY: ZONES[i % len(ZONES)]}) for i in range(nodes)]
    objects += [_pod(f"init-{i}", f"n{i % nodes}", "100m") for i in range(init)]
    if measure:
        spread = {
            "maxSkew": 5,
            "topologyKey": ZONE_KEY,
            "whenUnsatisfiable": "ScheduleAnyway" if preferred else "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
        objects.append(_rs("spreading", measure, "100m", labels={"color": "blue"}, topologySpreadConstraints=[spread]))
    name = "preferred-topology-spreading" if preferred else "topology-spreading"
    return _scenario(name, objects, "1s")


def pod_anti_affinity(nodes: int, init: int, measure: int) -> dict[str, Any]:
    """scheduler_perf ``SchedulingPodAntiAffinity``: nodes with unique hostnames, ``init``
    pods in sched-0 and ``measure`` pods in sched-1, each labelled color=green with a
    required anti-affinity to green pods of both namespaces on the same host
    (``pod-with-pod-anti-affinity.yaml``); the initial ones bound one per node."""
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-1", "sched-0"],
    }
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    green = {"color": "green", "name": "test"}
    objects = [_sched_node(f"n{i}") for i in range(nodes)]
    objects += [
        _pod(f"init-{i}", f"n{i % nodes}", "100m", namespace="sched-0", labels=green, affinity=affinity)
        for i in range(init)
    ]
    if measure:
        objects.append(_rs("anti-affinity", measure, "100m", namespace="sched-1", labels=green, affinity=affinity))
    return _scenario("scheduling-pod-anti-affinity", objects, "1s")


def preemption_basic(nodes: int, measure: int) -> dict[str, Any]:
    objects: list[dict[str, Any]] = [_sched_node(f"n{i}") for i in range(nodes)]
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
    objects: list[dict[str, Any]] = [_sched_node(f"n{i}") for i in range(nodes)]
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
