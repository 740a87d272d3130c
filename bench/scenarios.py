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
