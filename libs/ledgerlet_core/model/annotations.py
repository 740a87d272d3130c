"""The annotations through which a scenario tells ledgerlet what Kubernetes objects do not say.

* ``ledgerlet/filesystems`` on a Node: its filesystem layout (scenario spec §1);
* ``ledgerlet/exit-after`` on a Pod: seconds it takes to exit on SIGTERM (default 0);
* ``ledgerlet/workload`` on a created Pod: the workload whose ``usage`` entry it follows
  (a Deployment, for its ReplicaSet's pods).
"""

from __future__ import annotations

from typing import Final

from ledgerlet_core.model.k8s.objects import Pod

FILESYSTEMS_ANNOTATION: Final = "ledgerlet/filesystems"
EXIT_AFTER_ANNOTATION: Final = "ledgerlet/exit-after"
WORKLOAD_ANNOTATION: Final = "ledgerlet/workload"


def exit_after_seconds(pod: Pod) -> float:
    """``ledgerlet/exit-after``: how long the pod takes to exit on SIGTERM (default 0)."""
    raw = pod.metadata.annotations.get(EXIT_AFTER_ANNOTATION, "0")
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return max(value, 0.0)
