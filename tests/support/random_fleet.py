"""Small random fleets for the property tests that hold the column path to the per-node
one: usage that crosses thresholds, recrosses them and hovers at them; hard and soft
thresholds with grace periods, minimum reclaim, memory, disk, inodes and pids; image GC
and dead containers; containers over their memory limits (OOM kills) and pods over their
local-storage limits; the three filesystem layouts; nodes and pods added, deleted,
powered off and on mid-run."""

from __future__ import annotations

import random
from typing import Any

Mi = 1 << 20
Gi = 1 << 30


def _series(rng: random.Random, base: int, peak: int, seconds: int) -> Any:
    """A usage series of one of the shapes real workloads take around a threshold."""
    shape = rng.choice(["constant", "ramp", "cross-and-back", "hover", "step"])
    if shape == "constant":
        return base
    if shape == "ramp":
        return [[0, base], [rng.randrange(60, seconds), peak]]
    if shape == "cross-and-back":
        up = rng.randrange(30, seconds // 2)
        return [[0, base], [up, peak], [up + rng.randrange(30, 200), base]]
    if shape == "step":
        at = rng.randrange(10, seconds)
        return [[0, base], [at, base], [at, peak]]
    # hover: a zigzag a little above and below a level, a point every few passes
    level = (base + peak) // 2
    swing = max((peak - base) // 20, 1)
    return [[t, level + (swing if (t // 25) % 2 else -swing)] for t in range(0, seconds + 1, 25)]


def random_fleet(seed: int, *, nodes: int = 5, seconds: int = 600) -> dict[str, Any]:
    rng = random.Random(seed)
    hard: dict[str, str] = {
        "memory.available": rng.choice(["100Mi", "300Mi", "5%"]),
        "nodefs.available": rng.choice(["10%", "3Gi"]),
        "nodefs.inodesFree": "5%",
        "imagefs.available": rng.choice(["15%", "2Gi"]),
    }
    if rng.random() < 0.5:
        hard["pid.available"] = str(rng.choice([200, 500]))
    config: dict[str, Any] = {
        "housekeepingInterval": "10s",
        "evictionHard": hard,
        "evictionPressureTransitionPeriod": rng.choice(["30s", "1m", "5m"]),
        "kernelMemcgNotification": rng.random() < 0.25,
        "imageGCHighThresholdPercent": rng.choice([60, 85]),
        "imageGCLowThresholdPercent": 50,
        "imageMinimumGCAge": "30s",
    }
    if rng.random() < 0.5:
        config["evictionSoft"] = {"memory.available": "800Mi", "nodefs.available": "25%"}
        config["evictionSoftGracePeriod"] = {"memory.available": "30s", "nodefs.available": "40s"}
        config["evictionMaxPodGracePeriod"] = 20
    if rng.random() < 0.5:
        config["evictionMinimumReclaim"] = {"memory.available": "200Mi", "nodefs.available": "1Gi"}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    ]
    usage: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    names = [f"n{i}" for i in range(nodes)]
    for name in names:
        memory = rng.choice([4, 6, 8]) * Gi
        disk = rng.choice([20, 40]) * Gi
        layout = rng.choice(["single", "single", "dedicated-imagefs", "split-imagefs"])
        annotations = {} if layout == "single" else {"ledgerlet/filesystems": layout}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "annotations": annotations},
                "status": {"capacity": {"cpu": "8", "memory": str(memory), "ephemeral-storage": str(disk)}},
            }
        )
        node_usage: dict[str, Any] = {
            "capacity": {"memory": memory, "nodefs": disk, "pids": 4096},
            "system": {
                "memory": _series(rng, Gi // 2, Gi, seconds),
                "nodefs": _series(rng, 4 * Gi, disk // 2, seconds),
                "pids": 300,
            },
        }
        if rng.random() < 0.5:
            node_usage["capacity"]["nodefsInodes"] = 200_000
        if layout != "single":
            node_usage["imageFs"] = {"capacity": 30 * Gi, "inodes": 100_000}
        if rng.random() < 0.5:
            node_usage["images"] = [
                {"name": "app:v1", "size": 2 * Gi, "inUse": False},
                {"name": f"old:{name}", "size": rng.choice([3, 8]) * Gi, "inUse": False},
            ]
            node_usage["deadContainers"] = {"count": 3, "bytes": Gi}
        if rng.random() < 0.3:
            node_usage["inactiveFile"] = 200 * Mi
        usage[f"node/{name}"] = node_usage
        for p in range(rng.randrange(3, 7)):
            pod = f"{name}-p{p}"
            resources: dict[str, Any] = {"requests": {"memory": f"{rng.choice([64, 256])}Mi"}}
            if rng.random() < 0.3:
                resources["limits"] = {"memory": f"{rng.choice([300, 900])}Mi"}
            if rng.random() < 0.15:
                resources.setdefault("limits", {})["ephemeral-storage"] = "1Gi"
            spec: dict[str, Any] = {
                "nodeName": name,
                "containers": [{"name": "c", "image": "app:v1", "resources": resources}],
            }
            if rng.random() < 0.3:
                spec["priorityClassName"] = "high"
            if rng.random() < 0.2:
                spec["restartPolicy"] = "Never"
            objects.append(
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": "t"}, "spec": spec}
            )
            usage[f"t/{pod}"] = {
                "memory": _series(rng, 50 * Mi, memory // 3, seconds),
                "logs": _series(rng, 10 * Mi, disk // 3, seconds),
                "rootfs": _series(rng, 5 * Mi, 2 * Gi, seconds),
                "pids": _series(rng, 10, 2000, seconds),
                "inodes": _series(rng, 100, 120_000, seconds),
            }
    # what happens mid-run
    late = rng.choice(names)
    events.append(
        {
            "at": rng.randrange(20, seconds // 2),
            "apply": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "late", "namespace": "t"},
                "spec": {"nodeName": late, "containers": [{"name": "c", "image": "app:v1"}]},
            },
        }
    )
    usage["t/late"] = {"memory": _series(rng, 100 * Mi, 2 * Gi, seconds), "logs": 50 * Mi}
    victim = rng.choice(names)
    events.append(
        {"at": rng.randrange(30, seconds), "delete": {"kind": "Pod", "namespace": "t", "name": f"{victim}-p0"}}
    )
    off = rng.choice(names)
    down = rng.randrange(60, seconds // 2)
    events.append({"at": down, "powerOff": {"node": off}})
    events.append({"at": down + rng.randrange(30, 120), "powerOn": {"node": off}})
    if rng.random() < 0.5:
        events.append({"at": rng.randrange(200, seconds), "delete": {"kind": "Node", "name": rng.choice(names)}})
    events.sort(key=lambda e: e["at"])
    return {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": f"random-fleet-{seed}"},
        "spec": {
            "duration": f"{seconds}s",
            "kubeletConfig": config,
            "objects": objects,
            "usage": usage,
            "events": events,
        },
    }
