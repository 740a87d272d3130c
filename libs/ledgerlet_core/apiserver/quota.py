"""ResourceQuota admission for pods, with overhead, and PriorityClass scopes.

Upstream: ``pkg/quota/v1/evaluator/core/pods.go: PodUsageFunc`` (requests via
``PodRequests`` with overhead, limits via ``PodLimits``, ``pods``/``count/pods``),
``podMatchesScopeFunc`` (BestEffort, NotBestEffort, PriorityClass with its operators),
and ``plugin/pkg/admission/resourcequota/controller.go: checkRequest`` (its "exceeded
quota" message).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ledgerlet_core.apiserver.priority_admission import AdmissionError
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Pod, ResourceQuota, ScopedResourceSelectorRequirement
from ledgerlet_core.model.k8s.resources import pod_limits, pod_requests, resource_format
from ledgerlet_core.model.quantity import NANO, Quantity

_COMPUTE = ("cpu", "memory", "ephemeral-storage")


def pod_usage(pod: Pod) -> dict[str, int]:
    """What a pod charges against quota, in nanos."""
    reqs = pod_requests(pod)
    lims = pod_limits(pod)
    out = {"pods": NANO, "count/pods": NANO}
    for name in _COMPUTE:
        if name in reqs and reqs[name].nanos:
            out[f"requests.{name}"] = reqs[name].nanos
            out[name] = reqs[name].nanos
        if name in lims and lims[name].nanos:
            out[f"limits.{name}"] = lims[name].nanos
    for name, q in reqs.items():
        if name not in _COMPUTE and q.nanos:
            out[f"requests.{name}"] = q.nanos
    return out


def _scope_matches(req: ScopedResourceSelectorRequirement, pod: Pod) -> bool:
    scope = req.scope_name
    if scope == "BestEffort":
        return pod.status.qos_class == "BestEffort"
    if scope == "NotBestEffort":
        return pod.status.qos_class != "BestEffort"
    if scope == "PriorityClass":
        name = pod.spec.priority_class_name
        op = req.operator
        if op == "Exists":
            return bool(name)
        if op == "DoesNotExist":
            return not name
        if op == "In":
            return name in req.values
        if op == "NotIn":
            return name not in req.values
        return False
    if scope in ("Terminating", "NotTerminating"):
        # Terminating = activeDeadlineSeconds set, which ledgerlet does not model: none are
        return scope == "NotTerminating"
    return True


def quota_matches(quota: ResourceQuota, pod: Pod) -> bool:
    """Every scope and every scope-selector requirement must match."""
    if quota.metadata.namespace and quota.metadata.namespace != (pod.metadata.namespace or "default"):
        return False
    reqs = [ScopedResourceSelectorRequirement(scope_name=s, operator="Exists") for s in quota.spec.scopes]
    if quota.spec.scope_selector is not None:
        reqs += quota.spec.scope_selector.match_expressions
    return all(_scope_matches(r, pod) for r in reqs)


def _fmt(name: str, nanos: int) -> str:
    base = name.split(".", 1)[1] if "." in name else name
    return str(Quantity(nanos, resource_format(base)))


def check_quota(
    pod: Pod, quotas: Iterable[ResourceQuota], used: Mapping[str, Mapping[str, int]]
) -> AdmissionError | None:
    """Refuse the pod if any matching quota would go over ``hard`` (``used``: by quota key).
    No quota that matches: nothing to work out (a fleet's pods mostly meet none)."""
    matching = [q for q in sorted(quotas, key=lambda q: q.metadata.name) if quota_matches(q, pod)]
    if not matching:
        return None
    usage = pod_usage(pod)
    for quota in matching:
        key = object_key(quota.metadata.namespace, quota.metadata.name)
        now = used.get(key, {})
        over = sorted(
            name
            for name, hard in quota.spec.hard.items()
            if name in usage and now.get(name, 0) + usage[name] > hard.nanos
        )
        if over:
            requested = ",".join(f"{n}={_fmt(n, usage[n])}" for n in over)
            in_use = ",".join(f"{n}={_fmt(n, now.get(n, 0))}" for n in over)
            limited = ",".join(f"{n}={quota.spec.hard[n]}" for n in over)
            return AdmissionError(
                f'pods "{pod.metadata.name}" is forbidden: exceeded quota: {quota.metadata.name}, '
                f"requested: {requested}, used: {in_use}, limited: {limited}",
                "spec",
            )
    return None
