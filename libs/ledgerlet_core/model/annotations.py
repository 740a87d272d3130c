"""The annotations through which a scenario tells ledgerlet what Kubernetes objects do not say.

* ``ledgerlet/filesystems`` on a Node: its filesystem layout (scenario spec §1);
* ``ledgerlet/exit-after`` on a Pod: seconds it takes to exit on SIGTERM (default 0);
* ``ledgerlet/workload`` on a created Pod: the workload whose ``usage`` entry it follows
  (a Deployment, for its ReplicaSet's pods);
* ``ledgerlet/manifest-priority`` on a static Pod: the priority its manifest gave (set when
  the scenario is loaded: the object is the mirror pod, which admission resolved).
"""

from __future__ import annotations

import math
from typing import Final

from ledgerlet_core.model.k8s.objects import Pod

FILESYSTEMS_ANNOTATION: Final = "ledgerlet/filesystems"
EXIT_AFTER_ANNOTATION: Final = "ledgerlet/exit-after"
WORKLOAD_ANNOTATION: Final = "ledgerlet/workload"
#: on a static pod: its manifest's ``spec.priority`` before the mirror pod's admission ("" unset)
MANIFEST_PRIORITY_ANNOTATION: Final = "ledgerlet/manifest-priority"


#: the longest ``ledgerlet/exit-after`` (a year: far beyond any grace period, and a time
#: every clock of a run can still add to)
MAX_EXIT_AFTER_SECONDS: Final = 365 * 24 * 3600


def exit_after_problem(raw: str) -> str | None:
    """Why a ``ledgerlet/exit-after`` value cannot be used, or None: it must be a number of
    seconds from 0 to :data:`MAX_EXIT_AFTER_SECONDS` (checked where objects enter a run,
    so that no value the loader accepts can fail the run later)."""
    try:
        value = float(raw)
    except ValueError:
        return f'Invalid value: "{raw}": must be a number of seconds'
    if not math.isfinite(value) or not 0 <= value <= MAX_EXIT_AFTER_SECONDS:
        return f'Invalid value: "{raw}": must be a number of seconds from 0 to {MAX_EXIT_AFTER_SECONDS}'
    return None


def exit_after_seconds(pod: Pod) -> float:
    """``ledgerlet/exit-after``: how long the pod takes to exit on SIGTERM (default 0)."""
    raw = pod.metadata.annotations.get(EXIT_AFTER_ANNOTATION, "0")
    if exit_after_problem(raw) is not None:
        return 0.0  # (refused where the object entered; never reached)
    return float(raw)


def kubelet_priority(pod: Pod) -> int:
    """The priority the kubelet's own copy of the pod has: the API's, except for a static
    pod, whose manifest never went through priority admission (unset: 0)."""
    if MANIFEST_PRIORITY_ANNOTATION in pod.metadata.annotations:
        raw = pod.metadata.annotations[MANIFEST_PRIORITY_ANNOTATION]
        return int(raw) if raw.lstrip("-").isdigit() else 0
    return pod.spec.priority or 0
