"""API-server defaulting for the objects ledgerlet reads.

Upstream: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_Pod``, ``SetDefaults_PodSpec``,
``SetDefaults_Container``), ``pkg/apis/scheduling/v1/defaults.go:
SetDefaults_PriorityClass``. Applied once, when an object enters the scenario.

A Node gets the labels its kubelet registers it with when the object does not carry them
(``pkg/kubelet/kubelet_node_status.go: initialNode``): ``kubernetes.io/hostname`` (its
name) and ``kubernetes.io/os`` (linux: ledgerlet's kubelets are Linux ones). Topology
spreading and inter-pod affinity over hostnames, and node selectors on the OS, read them.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ledgerlet_core.model.k8s.objects import (
    NAMESPACED_KINDS,
    AnyObject,
    Container,
    Node,
    ObjectMeta,
    Pod,
    PodSpec,
    PriorityClass,
    ResourceRequirements,
    Workload,
)

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: Final = 30
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_NAMESPACE: Final = "default"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_OS: Final = "kubernetes.io/os"


def _container_defaults(c: Container) -> Container:
    """A limit without a request makes the request equal to the limit."""
    res = c.resources
    missing = {k: v for k, v in res.limits.items() if k not in res.requests}
    if not missing:
        return c
    requests = {**res.requests, **missing}
    return msgspec.structs.replace(c, resources=ResourceRequirements(requests=requests, limits=res.limits))


def pod_spec_defaults(spec: PodSpec) -> PodSpec:
    changes: dict[str, object] = {}
    containers = [_container_defaults(c) for c in spec.containers]
    if any(a is not b for a, b in zip(containers, spec.containers, strict=True)):
        changes["containers"] = containers
    inits = [_container_defaults(c) for c in spec.init_containers]
    if any(a is not b for a, b in zip(inits, spec.init_containers, strict=True)):
        changes["init_containers"] = inits
    if spec.termination_grace_period_seconds is None:
        changes["termination_grace_period_seconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.restart_policy:
        changes["restart_policy"] = "Always"
    if not spec.scheduler_name:
        changes["scheduler_name"] = DEFAULT_SCHEDULER_NAME
    return msgspec.structs.replace(spec, **changes) if changes else spec


def _meta_defaults(kind: str, meta: ObjectMeta) -> ObjectMeta:
    if kind in NAMESPACED_KINDS and not meta.namespace:
        return msgspec.structs.replace(meta, namespace=DEFAULT_NAMESPACE)
    return meta


def apply_defaults(obj: AnyObject) -> AnyObject:
    """The object as the API server would store it."""
    meta = _meta_defaults(obj.kind, obj.metadata)
    if meta is not obj.metadata:
        obj = msgspec.structs.replace(obj, metadata=meta)
    if isinstance(obj, Pod):
        spec = pod_spec_defaults(obj.spec)
        if spec is not obj.spec:
            obj = msgspec.structs.replace(obj, spec=spec)
    elif isinstance(obj, Workload):
        template = obj.spec.template
        spec = pod_spec_defaults(template.spec)
        if spec is not template.spec:
            obj = msgspec.structs.replace(
                obj, spec=msgspec.structs.replace(obj.spec, template=msgspec.structs.replace(template, spec=spec))
            )
    elif isinstance(obj, Node):
        labels = obj.metadata.labels
        if LABEL_HOSTNAME not in labels or LABEL_OS not in labels:
            registered = {LABEL_HOSTNAME: obj.metadata.name, LABEL_OS: "linux", **labels}
            obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, labels=registered))
    elif isinstance(obj, PriorityClass) and obj.preemption_policy is None:
        obj = msgspec.structs.replace(obj, preemption_policy="PreemptLowerPriority")
    return obj
