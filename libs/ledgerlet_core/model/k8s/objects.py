"""The Kubernetes objects ledgerlet reads, in their normal YAML/JSON shape.

Field names follow the API (camelCase on the wire, snake_case here); unknown fields are
ignored, missing optional ones take the API server's defaults
(``pkg/apis/core/v1/defaults.go: SetDefaults_Pod`` and friends, applied in
:mod:`ledgerlet_core.model.k8s.defaults`). Only the fields some control loop reads are modelled.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import msgspec

from ledgerlet_core.model.quantity import Quantity

ResourceList = dict[str, Quantity]


class _K8s(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class OwnerReference(_K8s, kw_only=True):
    api_version: str = ""
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_K8s, kw_only=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    generation: int = 0


class LabelSelectorRequirement(_K8s, kw_only=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_K8s, kw_only=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class ResourceRequirements(_K8s, kw_only=True):
    requests: ResourceList = {}
    limits: ResourceList = {}
    #: dynamic resource claims the container uses (DRA): read only to say they are not modelled
    claims: list[dict[str, Any]] = []


class ContainerPort(_K8s, kw_only=True):
    container_port: int = 0
    #: 0: no host port (a ``hostNetwork`` pod's ports are its host's: see the scheduler's NodePorts)
    host_port: int = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")
    name: str = ""


class Container(_K8s, kw_only=True):
    name: str
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    # On an init container, "Always" makes it a sidecar (restartable init container).
    restart_policy: str | None = None
    ports: list[ContainerPort] = []
    #: read only to say it is not modelled (a started pod counts as Ready)
    readiness_probe: dict[str, Any] | None = None


class Toleration(_K8s, kw_only=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Taint(_K8s, kw_only=True):
    key: str
    value: str = ""
    effect: str
    time_added: str | None = None


class EmptyDirVolumeSource(_K8s, kw_only=True):
    medium: str = ""
    size_limit: Quantity | None = None


class PersistentVolumeClaimVolumeSource(_K8s, kw_only=True):
    claim_name: str
    read_only: bool = False


class Volume(_K8s, kw_only=True):
    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: dict[str, Any] | None = None
    config_map: dict[str, Any] | None = None
    git_repo: dict[str, Any] | None = None
    secret: dict[str, Any] | None = None
    downward_api: dict[str, Any] | None = msgspec.field(default=None, name="downwardAPI")
    projected: dict[str, Any] | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    csi: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    # in-tree disks the scheduler's VolumeRestrictions and volume limits read (not modelled)
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    cinder: dict[str, Any] | None = None


class NodeSelectorRequirement(_K8s, kw_only=True):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(_K8s, kw_only=True):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_K8s, kw_only=True):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_K8s, kw_only=True):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_K8s, kw_only=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    #: None and [] differ upstream: an empty list still runs the score (every node 0)
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(_K8s, kw_only=True):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_K8s, kw_only=True):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_K8s, kw_only=True):
    """``podAffinity`` and ``podAntiAffinity`` have the same shape."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_K8s, kw_only=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(_K8s, kw_only=True):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PodSchedulingGate(_K8s, kw_only=True):
    name: str = ""


class PodResourceClaim(_K8s, kw_only=True):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSpec(_K8s, kw_only=True):
    containers: list[Container] = []
    init_containers: list[Container] = []
    node_name: str = ""
    node_selector: dict[str, str] = {}
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    runtime_class_name: str | None = None
    overhead: ResourceList | None = None
    tolerations: list[Toleration] = []
    termination_grace_period_seconds: int | None = None
    restart_policy: str = ""
    scheduler_name: str = ""
    volumes: list[Volume] = []
    # Pod-level resources (PodLevelResources feature); None when the pod does not set them.
    resources: ResourceRequirements | None = None
    affinity: Affinity | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    scheduling_gates: list[PodSchedulingGate] = []
    #: dynamic resource claims (DRA): read only to say they are not modelled
    resource_claims: list[PodResourceClaim] = []
    host_network: bool = False
    readiness_gates: list[dict[str, Any]] = []


class PodCondition(_K8s, kw_only=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodStatus(_K8s, kw_only=True):
    phase: str = ""
    qos_class: str = ""
    start_time: str | None = None
    nominated_node_name: str = ""
    reason: str = ""
    message: str = ""
    conditions: list[PodCondition] = []


class Pod(_K8s, kw_only=True):
    KIND: ClassVar[str] = "Pod"
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        """``namespace/name``, as the decision log writes pods. Interned: every loop keeps
        its pods by key, and a fleet's 550,000 keys are one string each, not one per loop."""
        return sys.intern(f"{self.metadata.namespace}/{self.metadata.name}")


class NodeCondition(_K8s, kw_only=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class NodeSpec(_K8s, kw_only=True):
    taints: list[Taint] = []
    unschedulable: bool = False


class ContainerImage(_K8s, kw_only=True):
    names: list[str] = []
    size_bytes: int = 0


class NodeStatus(_K8s, kw_only=True):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    conditions: list[NodeCondition] = []
    #: the images its runtime holds, as the kubelet reports them (ImageLocality)
    images: list[ContainerImage] = []


class Node(_K8s, kw_only=True):
    KIND: ClassVar[str] = "Node"
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class PriorityClass(_K8s, kw_only=True):
    KIND: ClassVar[str] = "PriorityClass"
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0  # omitted: 0, as the API server decodes it
    global_default: bool = False
    description: str = ""
    preemption_policy: str | None = None


class Overhead(_K8s, kw_only=True):
    pod_fixed: ResourceList = {}


class RuntimeClassScheduling(_K8s, kw_only=True):
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []


class RuntimeClass(_K8s, kw_only=True):
    KIND: ClassVar[str] = "RuntimeClass"
    api_version: str = "node.k8s.io/v1"
    kind: str = "RuntimeClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    handler: str
    overhead: Overhead | None = None
    scheduling: RuntimeClassScheduling | None = None


class PodDisruptionBudgetSpec(_K8s, kw_only=True):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudget(_K8s, kw_only=True):
    KIND: ClassVar[str] = "PodDisruptionBudget"
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)


class ScopedResourceSelectorRequirement(_K8s, kw_only=True):
    scope_name: str
    operator: str
    values: list[str] = []


class ScopeSelector(_K8s, kw_only=True):
    match_expressions: list[ScopedResourceSelectorRequirement] = []


class ResourceQuotaSpec(_K8s, kw_only=True):
    hard: ResourceList = {}
    scopes: list[str] = []
    scope_selector: ScopeSelector | None = None


class ResourceQuota(_K8s, kw_only=True):
    KIND: ClassVar[str] = "ResourceQuota"
    api_version: str = "v1"
    kind: str = "ResourceQuota"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceQuotaSpec = msgspec.field(default_factory=ResourceQuotaSpec)


class PersistentVolumeSpec(_K8s, kw_only=True):
    capacity: ResourceList = {}
    csi: dict[str, Any] | None = None
    claim_ref: dict[str, Any] | None = None
    node_affinity: dict[str, Any] | None = None


class PersistentVolume(_K8s, kw_only=True):
    KIND: ClassVar[str] = "PersistentVolume"
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)


class PersistentVolumeClaimSpec(_K8s, kw_only=True):
    volume_name: str = ""
    access_modes: list[str] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    storage_class_name: str | None = None


class PersistentVolumeClaim(_K8s, kw_only=True):
    KIND: ClassVar[str] = "PersistentVolumeClaim"
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class PodTemplateSpec(_K8s, kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class WorkloadSpec(_K8s, kw_only=True):
    """The parts of ReplicaSet / Deployment / StatefulSet / DaemonSet / Job /
    ReplicationController specs we read (a ReplicationController's selector, a plain map,
    is read as ``matchLabels``)."""

    replicas: int | None = None
    parallelism: int | None = None
    completions: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    service_name: str = ""
    pod_management_policy: str = "OrderedReady"
    backoff_limit: int | None = None
    volume_claim_templates: list[PersistentVolumeClaim] = []


class Workload(_K8s, kw_only=True):
    KINDS: ClassVar[frozenset[str]] = frozenset(
        {"ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicationController"}
    )
    api_version: str = "apps/v1"
    kind: str
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


AnyObject = (
    Pod
    | Node
    | PriorityClass
    | RuntimeClass
    | PodDisruptionBudget
    | ResourceQuota
    | PersistentVolume
    | PersistentVolumeClaim
    | Workload
)

#: kind -> model; the kinds a scenario may contain.
MODEL_FOR_KIND: dict[str, type[AnyObject]] = {
    "Pod": Pod,
    "Node": Node,
    "PriorityClass": PriorityClass,
    "RuntimeClass": RuntimeClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "ResourceQuota": ResourceQuota,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    **dict.fromkeys(Workload.KINDS, Workload),
}

#: Kinds that live in a namespace (defaulted to "default", as kubectl does).
NAMESPACED_KINDS: frozenset[str] = frozenset(
    {"Pod", "PodDisruptionBudget", "ResourceQuota", "PersistentVolumeClaim", *Workload.KINDS}
)
