"""Priority constants, built-in PriorityClasses and critical pods.

Upstream: ``pkg/apis/scheduling/types.go``, ``pkg/apis/scheduling/v1/helpers.go:
systemPriorityClasses``, ``pkg/kubelet/types/pod_update.go: IsCriticalPod``,
``IsStaticPod``, ``IsMirrorPod``.
"""

from __future__ import annotations

from typing import Final

from ledgerlet_core.model.k8s.objects import ObjectMeta, Pod, PriorityClass

DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_CLUSTER_CRITICAL: Final = "system-cluster-critical"
SYSTEM_NODE_CRITICAL: Final = "system-node-critical"
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"

CONFIG_SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
API_SOURCE: Final = "api"


def system_priority_classes() -> list[PriorityClass]:
    """The two classes the API server creates at bootstrap (neither is a global default)."""
    return [
        PriorityClass(
            metadata=ObjectMeta(name=SYSTEM_NODE_CRITICAL),
            value=SYSTEM_CRITICAL_PRIORITY + 1000,
            description="Used for system critical pods that must not be moved from their current node.",
            preemption_policy="PreemptLowerPriority",
        ),
        PriorityClass(
            metadata=ObjectMeta(name=SYSTEM_CLUSTER_CRITICAL),
            value=SYSTEM_CRITICAL_PRIORITY,
            description="Used for system critical pods that must run in the cluster, but can be moved to "
            "another node if necessary.",
            preemption_policy="PreemptLowerPriority",
        ),
    ]


def pod_priority(pod: Pod) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority``, or 0 when unset."""
    p = pod.spec.priority
    return p if p is not None else DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS


def is_static_pod(pod: Pod) -> bool:
    source = pod.metadata.annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SOURCE


def is_mirror_pod(pod: Pod) -> bool:
    return CONFIG_MIRROR_ANNOTATION in pod.metadata.annotations


def is_critical_pod_priority(priority: int) -> bool:
    return priority >= SYSTEM_CRITICAL_PRIORITY


def is_critical_pod(pod: Pod) -> bool:
    """``IsCriticalPod``: static, mirror, or priority at least system-cluster-critical."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    return pod.spec.priority is not None and is_critical_pod_priority(pod.spec.priority)
