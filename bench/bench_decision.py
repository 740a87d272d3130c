"""One eviction decision for a node with 110 pods, as a pure function call.

The pass that costs most: a hard memory threshold is met, every pod is ranked
(exceeds-requests, priority, usage) and one is chosen, with its message. Target: median
under 1 ms.
"""

from __future__ import annotations

import statistics
import time

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.manager import EvictionState, synchronize
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    NodeStats,
    PodReference,
    PodStats,
    RuntimeStats,
    Summary,
)

Mi = 1 << 20
Gi = 1 << 30


def node_with(pods: int) -> tuple[list[Pod], Summary]:
    objs: list[Pod] = []
    stats: list[PodStats] = []
    for i in range(pods):
        raw = {
            "kind": "Pod",
            "metadata": {"name": f"p{i:03d}", "namespace": "bench", "uid": f"u{i}"},
            "spec": {
                "nodeName": "n1",
                "priority": (i % 7) * 100,
                "containers": [
                    {
                        "name": "app",
                        "resources": {"requests": {"memory": f"{200 + i % 5 * 100}Mi"}, "limits": {"memory": "2Gi"}},
                    }
                ],
            },
        }
        pod = apply_defaults(convert(raw, Pod))
        objs.append(pod)  # type: ignore[arg-type]
        ws = (150 + (i * 37) % 400) * Mi
        stats.append(
            PodStats(
                pod_ref=PodReference(name=f"p{i:03d}", namespace="bench", uid=f"u{i}"),
                containers=[
                    ContainerStats(
                        name="app",
                        memory=MemoryStats(working_set_bytes=ws),
                        rootfs=FsStats(used_bytes=10 * Mi),
                        logs=FsStats(used_bytes=5 * Mi),
                    )
                ],
                memory=MemoryStats(working_set_bytes=ws),
            )
        )
    fs = FsStats(available_bytes=100 * Gi, capacity_bytes=200 * Gi, inodes_free=10**6, inodes=2 * 10**6)
    summary = Summary(
        node=NodeStats(
            node_name="n1",
            memory=MemoryStats(available_bytes=300 * Mi, working_set_bytes=63 * Gi),
            fs=fs,
            runtime=RuntimeStats(image_fs=fs, container_fs=fs),
            system_containers=[
                ContainerStats(name="pods", memory=MemoryStats(available_bytes=300 * Mi, working_set_bytes=60 * Gi))
            ],
        ),
        pods=stats,
    )
    return objs, summary


def main() -> None:
    pods, summary = node_with(110)
    config = resolve_kubelet_config({"evictionHard": {"memory.available": "1Gi", "nodefs.available": "10%"}})
    times = []
    for _ in range(2000):
        began = time.perf_counter()
        result = synchronize(
            now=0, config=config, layout="single", state=EvictionState(), summary=summary, active_pods=pods
        )
        times.append(time.perf_counter() - began)
    assert result.eviction is not None and len(result.eviction.ranking) == 110
    times.sort()
    print(
        f"eviction decision, 110 pods: median {statistics.median(times) * 1e3:.3f} ms, "
        f"p99 {times[int(len(times) * 0.99)] * 1e3:.3f} ms ({len(times)} runs; target: median under 1 ms)"
    )


if __name__ == "__main__":
    main()
