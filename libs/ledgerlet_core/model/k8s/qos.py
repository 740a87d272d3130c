"""Pod QoS class and container oom_score_adj.

Upstream: ``pkg/apis/core/v1/helper/qos/qos.go: ComputePodQOS`` (per-container
classification, newest mainline) and ``pkg/kubelet/qos/policy.go:
GetContainerOOMScoreAdjust``.
"""

from __future__ import annotations

from typing import Final

from ledgerlet_core.model.k8s.objects import Container, Pod, ResourceList, ResourceRequirements
from ledgerlet_core.model.k8s.priority import is_critical_pod
from ledgerlet_core.model.k8s.resources import aggregate_containers, is_sidecar

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"

KUBELET_OOM_SCORE_ADJ: Final = -999
KUBE_PROXY_OOM_SCORE_ADJ: Final = -999
GUARANTEED_OOM_SCORE_ADJ: Final = -997
BEST_EFFORT_OOM_SCORE_ADJ: Final = 1000

_COMPUTE = ("cpu", "memory")


def _resource_qos(res: ResourceRequirements) -> str:
    """``resourceQOS``: the class one set of requests/limits earns on its own."""
    if not res.requests and not res.limits:
        return BEST_EFFORT
    zero = equal = 0
    for name in _COMPUTE:
        req = res.requests.get(name)
        lim = res.limits.get(name)
        r = req.nanos if req is not None else 0
        lv = lim.nanos if lim is not None else 0
        if r != lv:
            return BURSTABLE
        if r == 0:
            zero += 1
        else:
            equal += 1
    if equal == len(_COMPUTE):
        return GUARANTEED
    if zero == len(_COMPUTE):
        return BEST_EFFORT
    return BURSTABLE


def compute_pod_qos(pod: Pod, *, pod_level_resources: bool = True) -> str:
    """``ComputePodQOS``: per-container classes combined into the pod's class."""
    if pod_level_resources and pod.spec.resources is not None:
        return _resource_qos(pod.spec.resources)
    classes = {_resource_qos(c.resources) for c in (*pod.spec.init_containers, *pod.spec.containers)}
    if not classes or classes == {BEST_EFFORT}:
        return BEST_EFFORT
    if classes == {GUARANTEED}:
        return GUARANTEED
    return BURSTABLE


def pod_qos(pod: Pod) -> str:
    """``GetPodQOS``: ``status.qosClass`` when the API server set it, else computed."""
    return pod.status.qos_class or compute_pod_qos(pod)


def _burstable_adj(memory_request: int, memory_capacity: int) -> int:
    return 1000 - (1000 * memory_request) // memory_capacity


def _requests_of(c: Container) -> ResourceList:
    return c.resources.requests


def _memory_request_bytes(container: Container) -> int:
    q = container.resources.requests.get("memory")
    return q.value() if q is not None else 0


def container_oom_score_adj(pod: Pod, container: Container, memory_capacity: int) -> int:
    """``GetContainerOOMScoreAdjust`` for a container of ``pod`` on a node of that memory."""
    if is_critical_pod(pod) and pod.spec.priority_class_name == "system-node-critical":
        return GUARANTEED_OOM_SCORE_ADJ
    qos = pod_qos(pod)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    share = 0
    if pod.spec.resources is not None and "memory" in pod.spec.resources.requests:
        # remainingPodMemReqPerContainer: the pod-level request not claimed by containers,
        # shared out evenly.
        count = len(pod.spec.containers) + len(pod.spec.init_containers)
        aggregated = -(-aggregate_containers(pod, _requests_of).get("memory", 0) // 10**9)
        share = (pod.spec.resources.requests["memory"].value() - aggregated) // max(count, 1)
    adj = _burstable_adj(_memory_request_bytes(container) + share, memory_capacity)
    if is_sidecar(container) and pod.spec.containers:
        smallest = min(_memory_request_bytes(c) for c in pod.spec.containers)
        adj = min(adj, _burstable_adj(smallest + share, memory_capacity))
    if adj < 3:
        return 3
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:
        return BEST_EFFORT_OOM_SCORE_ADJ - 1
    return adj
