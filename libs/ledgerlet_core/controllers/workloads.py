"""Workload controllers: which pods a ReplicaSet, Deployment, StatefulSet, DaemonSet or
Job wants, and when a gone pod is replaced.

Upstream: ``pkg/controller/replicaset`` (replicas; failed pods are not active, so a
replacement is created at once, under a new name), ``pkg/controller/deployment`` (a
ReplicaSet named ``<deployment>-<pod-template-hash>``), ``pkg/controller/statefulset``
(``<name>-<ordinal>``; a failed pod is deleted and recreated under the same name once it
is gone; OrderedReady creates one ordinal at a time), ``pkg/controller/daemon`` (one pod
per eligible node; failed pods recreated with a back-off of 1 s doubling to 15 min;
DaemonSet pods tolerate the node-condition taints) and ``pkg/controller/job`` (failed pods
replaced with a back-off of 10 s doubling to 6 min, at most ``backoffLimit`` times).

DaemonSet pods are bound to their node directly: upstream adds node affinity for exactly
that node and lets the scheduler bind them, which comes to the same node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from ledgerlet_core.controllers.naming import suffix, template_hash
from ledgerlet_core.model.k8s.defaults import pod_spec_defaults
from ledgerlet_core.model.k8s.objects import (
    Node,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodStatus,
    Taint,
    Toleration,
    Workload,
)
from ledgerlet_core.model.k8s.selection import required_node_affinity
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
    tolerations_tolerate_taint,
)

DAEMON_BACKOFF_INITIAL: Final = 10**9
DAEMON_BACKOFF_MAX: Final = 15 * 60 * 10**9
JOB_BACKOFF_INITIAL: Final = 10 * 10**9
JOB_BACKOFF_MAX: Final = 6 * 60 * 10**9
JOB_BACKOFF_LIMIT: Final = 6

#: ``pkg/controller/daemon/util: AddOrUpdateDaemonPodTolerations``
DAEMON_TOLERATIONS: Final = (
    Toleration(key=TAINT_NODE_NOT_READY, operator="Exists", effect=NO_EXECUTE),
    Toleration(key=TAINT_NODE_UNREACHABLE, operator="Exists", effect=NO_EXECUTE),
    Toleration(key=TAINT_NODE_DISK_PRESSURE, operator="Exists", effect=NO_SCHEDULE),
    Toleration(key=TAINT_NODE_MEMORY_PRESSURE, operator="Exists", effect=NO_SCHEDULE),
    Toleration(key=TAINT_NODE_PID_PRESSURE, operator="Exists", effect=NO_SCHEDULE),
    Toleration(key=TAINT_NODE_UNSCHEDULABLE, operator="Exists", effect=NO_SCHEDULE),
    Toleration(key="node.kubernetes.io/network-unavailable", operator="Exists", effect=NO_SCHEDULE),
)


def owner_key(namespace: str, kind: str, name: str) -> str:
    return f"{namespace}/{kind}/{name}"


def controller_of(pod: Pod) -> OwnerReference | None:
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref
    return pod.metadata.owner_references[0] if pod.metadata.owner_references else None


def replica_set_for(deployment: Workload) -> Workload:
    """The ReplicaSet a Deployment runs its current template with."""
    name = f"{deployment.metadata.name}-{template_hash(deployment.spec.template)}"
    meta = ObjectMeta(
        name=name,
        namespace=deployment.metadata.namespace,
        uid=f"{deployment.metadata.uid}/{name}",
        labels=dict(deployment.spec.template.metadata.labels),
        owner_references=[
            OwnerReference(
                api_version="apps/v1",
                kind="Deployment",
                name=deployment.metadata.name,
                uid=deployment.metadata.uid,
                controller=True,
            )
        ],
    )
    return Workload(kind="ReplicaSet", metadata=meta, spec=deployment.spec)


def pod_from_template(
    owner: Workload,
    name: str,
    *,
    node: str = "",
    extra_tolerations: tuple[Toleration, ...] = (),
    uid_seed: str = "",
    annotations: Mapping[str, str] | None = None,
) -> Pod:
    """A pod as the controller creates it: template labels/annotations, owner reference."""
    template = owner.spec.template
    spec = pod_spec_defaults(template.spec)
    if node:
        spec = msgspec.structs.replace(spec, node_name=node)
    if extra_tolerations:
        have = list(spec.tolerations)
        spec = msgspec.structs.replace(spec, tolerations=[*have, *(t for t in extra_tolerations if t not in have)])
    meta = ObjectMeta(
        name=name,
        namespace=owner.metadata.namespace,
        uid=suffix(uid_seed or name, 32),
        labels=dict(template.metadata.labels),
        annotations={**template.metadata.annotations, **(annotations or {})},
        owner_references=[
            OwnerReference(
                api_version=owner.api_version,
                kind=owner.kind,
                name=owner.metadata.name,
                uid=owner.metadata.uid,
                controller=True,
            )
        ],
    )
    return Pod(metadata=meta, spec=spec, status=PodStatus(phase="Pending"))


def daemon_pod_name(ds: Workload, node: str, attempt: int) -> str:
    return f"{ds.metadata.name}-{suffix(f'{ds.metadata.uid}/{node}/{attempt}')}"


def replica_pod_name(rs: Workload, serial: int) -> str:
    return f"{rs.metadata.name}-{suffix(f'{rs.metadata.uid}/{serial}')}"


def stateful_pod_name(sts: Workload, ordinal: int) -> str:
    return f"{sts.metadata.name}-{ordinal}"


def node_runs_daemon(ds: Workload, node: Node, taints: Iterable[Taint] | None = None) -> bool:
    """``NodeShouldRunDaemonPod``'s predicates: the template's nodeName, nodeSelector and
    required node affinity, and taints (``taints``: the node's live ones, its object's when
    not given)."""
    spec = ds.spec.template.spec
    if spec.node_name and spec.node_name != node.metadata.name:
        return False
    if not required_node_affinity(spec).matches(node.metadata.labels, node.metadata.name):
        return False
    tolerations = [*ds.spec.template.spec.tolerations, *DAEMON_TOLERATIONS]
    live = node.spec.taints if taints is None else taints
    return all(tolerations_tolerate_taint(tolerations, t) for t in live if t.effect in (NO_SCHEDULE, NO_EXECUTE))


def backoff(initial: int, maximum: int, failures: int) -> int:
    """``initial`` doubled for each failure after the first, capped."""
    if failures <= 0:
        return 0
    delay: int = initial * 2 ** (failures - 1)
    return min(delay, maximum)


def replicas(w: Workload) -> int:
    if w.kind == "Job":
        return w.spec.parallelism if w.spec.parallelism is not None else 1
    return w.spec.replicas if w.spec.replicas is not None else 1


def taints_of(node: Node) -> list[Taint]:
    return list(node.spec.taints)


def workload_usage_keys(pod: Pod, owners: Mapping[str, str]) -> list[str]:
    """Usage keys that may describe this pod: its owner, and that owner's owner."""
    ref = controller_of(pod)
    if ref is None:
        return []
    key = owner_key(pod.metadata.namespace, ref.kind, ref.name)
    parent = owners.get(key)
    return [key, parent] if parent else [key]
