"""ImageLocality: prefer nodes that already hold the pod's images.

Upstream ``framework/plugins/imagelocality/image_locality.go``: for each init and regular
container whose image (``:latest`` added when untagged) the node holds, the image's size
scaled by the share of nodes holding it; the sum clamped to [23 MiB, 1000 MiB x containers]
and scaled to 0..100. A node's images are its ``status.images`` (every name of each) or,
for a node the scenario declares a machine for, the images of its ``usage`` entry. Recorded
where it gives some node more than 0 (where it gives every node 0 it changes no total).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.scheduling.plugins.base import ScoreNodes
from ledgerlet_core.scheduling.table import Int64s

if TYPE_CHECKING:
    from ledgerlet_core.model.k8s.selection import Selector
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "ImageLocality"
MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB
MAX_NODE_SCORE: Final = 100


def scaled(size: int, holders: int, total_nodes: int) -> int:
    """``scaledImageScore``: ``int64(float64(size) * spread)``."""
    return int(float(size) * (float(holders) / float(total_nodes)))


def score(
    images: Sequence[str], containers: int, node_images: Mapping[str, int], holders: Mapping[str, int], total_nodes: int
) -> int:
    """``calculatePriority(sumImageScores(...), containers)``."""
    total = 0
    for name in images:
        size = node_images.get(name)
        if size is not None:
            total += scaled(size, holders.get(name, 0), total_nodes)
    return priority(total, containers)


def priority(total: int, containers: int) -> int:
    """``calculatePriority``: clamped to [23 MiB, 1000 MiB x containers], scaled to 100
    (Go's integer division: toward zero)."""
    high = MAX_CONTAINER_THRESHOLD * containers
    if total < MIN_THRESHOLD:
        total = MIN_THRESHOLD
    elif total > high:
        total = high
    num, den = MAX_NODE_SCORE * (total - MIN_THRESHOLD), high - MIN_THRESHOLD
    return abs(num) // abs(den) * (1 if (num >= 0) == (den > 0) else -1)


def holders(nodes_images: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """How many nodes hold each image (``ImageStateSummary.NumNodes``)."""
    out: dict[str, int] = {}
    for images in nodes_images:
        for name in images:
            out[name] = out.get(name, 0) + 1
    return out


# -- the plugin's two forms ----------------------------------------------------------------------
def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    images = pod.sched.images
    if not images:
        return None
    held = holders([n.images for n in all_nodes])
    out = [score(images, pod.sched.num_containers, n.images, held, len(all_nodes)) for n in feasible]
    return out if any(out) else None


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    """Once per distinct image set."""
    images, table = pod.sched.images, nodes.table
    if not images or not any(table.image_sets):
        return None
    held = table.holders()
    total = len(table.names)
    by_set = np.array(
        [score(images, pod.sched.num_containers, s, held, total) for s in table.image_sets],
        np.int64,
    )
    out = by_set[table.image_set[nodes.rows]]
    return out if out.any() else None
