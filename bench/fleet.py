"""The README's fleet, generated (written to out/, never committed).

``nodes`` nodes (8 CPU, 8Gi, 40Gi ephemeral-storage, 110 pods), each with ``pods`` bound
pods written as explicit Pod objects with their own ``usage``; housekeeping every 10 s;
one node in five crosses a hard threshold once during the run, alternately
``memory.available<100Mi`` (one pod's memory grows) and ``nodefs.available<10%`` (one
pod's logs grow). Run as a script it writes the scenario as JSON and as flow-style YAML.

Two usage shapes (``shape``): ``steady``, healthy pods use the same every pass; and
``changing``, as real nodes are never quiet: every pod's logs grow and its memory
wobbles (a few linear pieces with their own phase), so every pod's stats differ on every
pass and no quiet-node shortcut applies.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import msgspec
import yaml

SHAPES = ("steady", "changing")


def fleet(
    nodes: int = 5000, pods: int = 110, *, duration: str = "10m", pressured_every: int = 5, shape: str = "steady"
) -> dict[str, Any]:
    """The scenario as a document; ``pressured_every``-th nodes cross a threshold once."""
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r} is not one of {SHAPES}")
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"tier-{t}"}, "value": t}
        for t in (1, 2)
    ]
    usage: dict[str, Any] = {}
    seconds = _seconds(duration)
    for n in range(nodes):
        node = f"node-{n:05d}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node, "zone": f"z{n % 3}"}},
                "status": {"capacity": {"cpu": "8", "memory": "8Gi", "ephemeral-storage": "40Gi", "pods": "110"}},
            }
        )
        usage[f"node/{node}"] = {"system": {"memory": "1Gi", "nodefs": "12Gi", "pids": 400}}
        pressured = n % pressured_every == 0
        grower = (pods - 1) // 3 * 3  # a priority-0 pod: the one the kubelet ranks first
        for i in range(pods):
            name = f"{node}-p{i:03d}"
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": f"team-{i % 10}", "labels": {"app": f"app-{i % 20}"}},
                    "spec": {
                        "nodeName": node,
                        **({"priorityClassName": f"tier-{i % 3}"} if i % 3 else {}),
                        "containers": [
                            {
                                "name": "app",
                                "image": f"registry.local/app-{i % 20}:v1",
                                "resources": {
                                    "requests": {"cpu": "50m", "memory": "64Mi"},
                                    "limits": {"memory": "256Mi"},
                                },
                            }
                        ],
                    },
                }
            )
            entry: dict[str, Any] = {"memory": f"{40 + i % 10}Mi", "logs": "20Mi", "rootfs": "10Mi", "pids": 8}
            if shape == "changing":
                entry["memory"] = _wobble(40 + i % 10, i, seconds)
                entry["logs"] = [[0, "20Mi"], [seconds, f"{20 + 10 + i % 7}Mi"]]
            if pressured and i == grower:
                # the crossing comes half-way through the run, then stays
                if (n // pressured_every) % 2 == 0:
                    # no memory limit on this one, so the node, not the container, runs short
                    entry["memory"] = [[0, "40Mi"], [seconds // 2, "2250Mi"]]
                    del objects[-1]["spec"]["containers"][0]["resources"]["limits"]
                else:
                    entry["logs"] = [[0, "20Mi"], [seconds // 2, "30Gi"]]
            usage[f"team-{i % 10}/{name}"] = entry
    return {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": f"fleet-{nodes}x{pods}"},
        "spec": {
            "duration": duration,
            "kubeletConfig": {
                "housekeepingInterval": "10s",
                "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
            },
            "objects": objects,
            "usage": usage,
        },
    }


def _wobble(base_mi: int, phase: int, seconds: int) -> list[list[Any]]:
    """Memory that goes up and down by a few MiB in four linear pieces, each pod's in its
    own phase: a different value every pass."""
    quarter = max(seconds // 4, 1)
    highs = [(phase + k) % 4 for k in range(5)]
    return [[k * quarter, f"{base_mi * 1024 + 1536 * h + 7 * phase}Ki"] for k, h in enumerate(highs)]


def _seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return int(duration[:-1]) * units[duration[-1]]


def write(out: Path, nodes: int, pods: int, duration: str, *, fmt: str, shape: str = "steady") -> Path:
    """Write the fleet as ``json`` (msgspec), flow-style ``yaml`` or block-style
    ``block.yaml`` (as kubectl writes YAML); returns the path."""
    out.mkdir(parents=True, exist_ok=True)
    doc = fleet(nodes, pods, duration=duration, shape=shape)
    suffix = "" if shape == "steady" else f"-{shape}"
    path = out / f"fleet-{nodes}x{pods}-{duration}{suffix}.{fmt}"
    if fmt == "json":
        path.write_bytes(msgspec.json.encode(doc))
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        flow = fmt == "yaml"
        path.write_text(yaml.dump(doc, Dumper=dumper, default_flow_style=flow, sort_keys=flow, width=1 << 30))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--duration", default="10m")
    ap.add_argument("--format", choices=("json", "yaml", "block.yaml"), default="json")
    ap.add_argument("--shape", choices=SHAPES, default="steady")
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    print(write(args.out, args.nodes, args.pods, args.duration, fmt=args.format, shape=args.shape))


if __name__ == "__main__":
    main()
