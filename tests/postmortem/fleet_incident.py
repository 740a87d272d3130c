"""A fleet incident for the report's tests: bench/fleet.py's fleet, its nodes put in node
pools by label, and its pressured nodes crossing their thresholds at different minutes
(memory on some, node disk on the others), so that the summary has groups to make."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
#: the pool labels put on the nodes: (label, value) by node index modulo 4
POOLS = (
    ("karpenter.sh/nodepool", "general"),
    ("karpenter.sh/nodepool", "general"),
    ("karpenter.sh/nodepool", "batch"),
    ("karpenter.sh/nodepool", "spot"),
)


def _bench_fleet() -> Any:
    spec = importlib.util.spec_from_file_location("bench_fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fleet_incident(nodes: int, pods: int, minutes: int = 10) -> dict[str, Any]:
    """The scenario document. Node n is in pool ``POOLS[n % 4]``; every fifth node has one
    pod that grows until its node crosses ``memory.available<100Mi`` (even fifths) or
    ``nodefs.available<10%`` (odd fifths), reaching it at a minute that depends on n."""
    seconds = minutes * 60
    doc: dict[str, Any] = _bench_fleet().fleet(nodes, pods, duration=f"{minutes}m", pressured_every=5)
    spec = doc["spec"]
    spec["start"] = "2026-03-02T14:00:00Z"
    index = {}
    for obj in spec["objects"]:
        if obj["kind"] == "Node":
            n = int(obj["metadata"]["name"].rsplit("-", 1)[1])
            index[obj["metadata"]["name"]] = n
            label, value = POOLS[n % len(POOLS)]
            obj["metadata"]["labels"][label] = value
    for key, entry in spec["usage"].items():
        if key.startswith("node/"):
            continue
        node = key.split("/", 1)[1].rsplit("-p", 1)[0]
        n = index[node]
        if n % 5:
            continue
        # reached at 20 % to 80 % of the run, one of seven steps by node
        at = seconds * (2 + (n // 5) % 7) // 10
        if isinstance(entry.get("memory"), list) and entry["memory"][-1][1] == "2250Mi":
            entry["memory"] = [[0, "40Mi"], [at, "7Gi"]]
        elif isinstance(entry.get("logs"), list) and entry["logs"][-1][1] == "30Gi":
            entry["logs"] = [[0, "20Mi"], [at, "30Gi"]]
    return doc
