"""Effective pod requests and limits.

Upstream: ``staging/src/k8s.io/component-helpers/resource/helpers.go``
(``PodRequests``, ``PodLimits``, ``AggregateContainerRequests``) and, for the kubelet's
eviction ranking, ``pkg/api/v1/resource/helpers.go: GetResourceRequestQuantity``.

Two overhead rules coexist upstream and both are kept:
* the scheduler and quota (``PodRequests``) add ``spec.overhead`` unconditionally;
* eviction ranking (``GetResourceRequestQuantity``) adds it only when the container
  total is non-zero, so a BestEffort pod with a RuntimeClass overhead still requests 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ledgerlet_core.model.k8s.objects import Container, Pod, ResourceList
from ledgerlet_core.model.quantity import Format, Quantity

#: Resources pod-level ``spec.resources`` may set (PodLevelResources).
POD_LEVEL_RESOURCES = ("cpu", "memory")

_BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def resource_format(name: str) -> Format:
    """Memory and storage print in BinarySI, everything else in DecimalSI (upstream)."""
    return Format.BINARY_SI if name in _BINARY_RESOURCES or name.startswith("hugepages-") else Format.DECIMAL_SI


def is_sidecar(container: Container) -> bool:
    """A restartable init container (``restartPolicy: Always``)."""
    return container.restart_policy == "Always"


def _add(total: dict[str, int], resources: ResourceList) -> None:
    for name, q in resources.items():
        total[name] = total.get(name, 0) + q.nanos


def _max_into(target: dict[str, int], candidate: dict[str, int]) -> None:
    for name, v in candidate.items():
        if v > target.get(name, 0):
            target[name] = v


def aggregate_containers(pod: Pod, pick: Callable[[Container], ResourceList]) -> dict[str, int]:
    """``AggregateContainerRequests`` in nanos: max(regular + sidecars, init peaks).

    Each ordinary init container needs its own amount plus the sidecars started before
    it; every sidecar keeps running beside the regular containers.
    """
    total: dict[str, int] = {}
    for c in pod.spec.containers:
        _add(total, pick(c))
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for c in pod.spec.init_containers:
        own = pick(c)
        if is_sidecar(c):
            _add(total, own)
            _add(sidecars, own)
            candidate = dict(sidecars)
        else:
            candidate = dict(sidecars)
            _add(candidate, own)
        _max_into(peak, candidate)
    _max_into(total, peak)
    return total


def _requests(c: Container) -> ResourceList:
    return c.resources.requests


def _limits(c: Container) -> ResourceList:
    return c.resources.limits


def _pod_level(pod: Pod, which: str) -> ResourceList:
    res = pod.spec.resources
    if res is None:
        return {}
    values = res.requests if which == "requests" else res.limits
    return {k: v for k, v in values.items() if k in POD_LEVEL_RESOURCES}


def quantities(nanos: dict[str, int]) -> ResourceList:
    """Nanos by resource name as quantities in each resource's format."""
    return {name: Quantity(v, resource_format(name)) for name, v in sorted(nanos.items())}


def pod_requests(pod: Pod, *, include_overhead: bool = True, pod_level_resources: bool = True) -> ResourceList:
    """``PodRequests``: what the scheduler and quota charge for a pod."""
    total = aggregate_containers(pod, _requests)
    if pod_level_resources:
        for name, q in _pod_level(pod, "requests").items():
            total[name] = q.nanos
    if include_overhead and pod.spec.overhead:
        _add(total, pod.spec.overhead)
    return quantities(total)


def pod_limits(pod: Pod, *, pod_level_resources: bool = True) -> ResourceList:
    """``PodLimits``: overhead is added only to resources that already have a limit."""
    total = aggregate_containers(pod, _limits)
    if pod_level_resources:
        for name, q in _pod_level(pod, "limits").items():
            total[name] = q.nanos
    if pod.spec.overhead:
        for name, q in pod.spec.overhead.items():
            if total.get(name, 0) != 0:
                total[name] += q.nanos
    return quantities(total)


def kubelet_request(pod: Pod, resource: str, *, pod_level_resources: bool = True) -> Quantity:
    """``GetResourceRequestQuantity``: the request eviction ranking compares usage with.

    Overhead counts only when the pod requests something of that resource already.
    """
    value = 0
    if pod_level_resources and resource in _pod_level(pod, "requests"):
        value = _pod_level(pod, "requests")[resource].nanos
    else:
        value = aggregate_containers(pod, _requests).get(resource, 0)
    if value != 0 and pod.spec.overhead and resource in pod.spec.overhead:
        value += pod.spec.overhead[resource].nanos
    return Quantity(value, resource_format(resource))


def container_request(container: Container, resource: str) -> Quantity:
    q = container.resources.requests.get(resource)
    return q if q is not None else Quantity(0, resource_format(resource))


def sum_resources(lists: Iterable[ResourceList]) -> ResourceList:
    total: dict[str, int] = {}
    for resources in lists:
        _add(total, resources)
    return quantities(total)
