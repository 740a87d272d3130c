"""The annotations through which a scenario tells ledgerlet what Kubernetes objects do not say.

* ``ledgerlet/filesystems`` on a Node: its filesystem layout (scenario spec §1);
* ``ledgerlet/exit-after`` on a Pod: seconds it takes to exit on SIGTERM (default 0);
* ``ledgerlet/workload`` on a created Pod: the workload whose ``usage`` entry it follows
  (a Deployment, for its ReplicaSet's pods);
* ``ledgerlet/manifest-priority`` on a static Pod: the priority its manifest gave (set when
  the scenario is loaded: the object is the mirror pod, which admission resolved).
"""

from __future__ import annotations

from typing import Final

from ledgerlet_core.model.k8s.objects import Pod

FILESYSTEMS_ANNOTATION: Final = "ledgerlet/filesystems"
EXIT_AFTER_ANNOTATION: Final = "ledgerlet/exit-after"
WORKLOAD_ANNOTATION: Final = "ledgerlet/workload"
#: on a static pod: its manifest's ``spec.priority`` before the mirror pod's admission ("" unset)
MANIFEST_PRIORITY_ANNOTATION: Final = "ledgerlet/manifest-priority"


def exit_after_seconds(pod: Pod) -> float:
    """``ledgerlet/exit-after``: how long the pod takes to exit on SIGTERM (default 0)."""
    raw = pod.metadata.annotations.get(EXIT_AFTER_ANNOTATION, "0")
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return max(value, 0.0)


def kubelet_priority(pod: Pod) -> int:
    """The priority the kubelet's own copy of the pod has: the API's, except for a static
    pod, whose manifest never went through priority admission (unset: 0)."""
    if MANIFEST_PRIORITY_ANNOTATION in pod.metadata.annotations:
        raw = pod.metadata.annotations[MANIFEST_PRIORITY_ANNOTATION]
        return int(raw) if raw.lstrip("-").isdigit() else 0
    return pod.spec.priority or 0
