"""Decisions: what the control loops decided, with the fields the public spec requires
(``scenario-format.md`` §5) and the inputs that explain them."""

from __future__ import annotations

import msgspec

from ledgerlet_core.eviction.ranking import RankingEntry


class _Data(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class PodAdmitted(_Data, kw_only=True):
    priority: int
    qos_class: str
    overhead: dict[str, str] = msgspec.field(default_factory=dict)


class PodRejected(_Data, kw_only=True):
    reason: str
    message: str
    admitter: str = ""


class ObjectRejected(_Data, kw_only=True):
    kind: str
    name: str
    reason: str
    message: str


class PodScheduled(_Data, kw_only=True):
    requests: dict[str, str]


class PodUnschedulable(_Data, kw_only=True):
    reasons: list[str]
    message: str


class PodNominated(_Data, kw_only=True):
    victims: list[str]


class PodPreempted(_Data, kw_only=True):
    preemptor: str
    grace_period_seconds: int


class NodeConditionChanged(_Data, kw_only=True):
    condition: str
    status: str
    reason: str
    message: str
    thresholds: list[str] = []


class NodeTaintAdded(_Data, kw_only=True):
    key: str
    effect: str
    value: str = ""


class NodeTaintRemoved(_Data, kw_only=True):
    key: str
    effect: str


class NodeReclaimed(_Data, kw_only=True):
    signal: str
    action: str
    bytes_freed: int
    images: list[str] = []
    containers: int = 0


class ImageGarbageCollected(_Data, kw_only=True):
    usage_percent: int
    high_threshold_percent: int
    low_threshold_percent: int
    bytes_to_free: int
    bytes_freed: int
    images: list[str] = []
    #: the kubelet's log line, and its error when too little was eligible
    message: str = ""
    error: str = ""


class ThresholdSeen(_Data, kw_only=True):
    """A threshold as one pass evaluated it (for explanations)."""

    threshold: str
    quantity: int
    available: int
    capacity: int
    hard: bool
    grace_period_seconds: float = 0.0
    first_observed_at: float | None = None
    #: the minimum reclaim on top of ``quantity``: a threshold met last pass stays met until
    #: ``available`` reaches quantity + minReclaim
    min_reclaim: int = 0


class ReclaimAttempt(_Data, kw_only=True):
    action: str
    bytes_freed: int


class PodEvicted(_Data, kw_only=True):
    signal: str
    threshold: str
    observed: int
    grace_period_seconds: int
    message: str
    ranking: list[str]
    resource: str = ""
    threshold_quantity: int = 0
    capacity: int = 0
    hard: bool = True
    phase: str = "Failed"
    reason: str = "Evicted"
    ranking_details: list[RankingEntry] = []
    thresholds_met: list[ThresholdSeen] = []
    offending_containers: list[str] = []
    offending_containers_usage: list[str] = []
    skipped_critical: list[str] = []
    #: node-level reclaim tried in this pass before ranking pods (freed too little)
    node_reclaim: list[ReclaimAttempt] = []


class OOMKilled(_Data, kw_only=True):
    container: str
    oom_score_adj: int
    #: which limit was hit: ``limit`` (the container's), ``pods`` (kubepods cgroup), ``node``
    scope: str = ""
    usage: int = 0
    limit: int = 0
    oom_score: int = 0
    restart_count: int = 0
    #: when the container comes back (virtual seconds); absent when it does not restart
    restart_at: float | None = None
    pod_failed: bool = False


class ShutdownGroup(_Data, kw_only=True):
    priority: int
    grace_period_seconds: int
    pods: list[str]


class NodeShutdownStarted(_Data, kw_only=True):
    graceful: bool
    groups: list[ShutdownGroup]


class PodTerminated(_Data, kw_only=True):
    reason: str
    grace_period_seconds: int
    killed_at: float


class NodeShutdownCompleted(_Data, kw_only=True):
    pass


class PodForceDeleted(_Data, kw_only=True):
    reason: str


class VolumeDetached(_Data, kw_only=True):
    volume: str
    forced: bool
    reason: str


class PodReplaced(_Data, kw_only=True):
    replacement: str
    owner: str


DECISION_TYPES: dict[str, type[_Data]] = {
    "PodAdmitted": PodAdmitted,
    "PodRejected": PodRejected,
    "ObjectRejected": ObjectRejected,
    "PodScheduled": PodScheduled,
    "PodUnschedulable": PodUnschedulable,
    "PodNominated": PodNominated,
    "PodPreempted": PodPreempted,
    "NodeConditionChanged": NodeConditionChanged,
    "NodeTaintAdded": NodeTaintAdded,
    "NodeTaintRemoved": NodeTaintRemoved,
    "NodeReclaimed": NodeReclaimed,
    "ImageGarbageCollected": ImageGarbageCollected,
    "PodEvicted": PodEvicted,
    "OOMKilled": OOMKilled,
    "NodeShutdownStarted": NodeShutdownStarted,
    "PodTerminated": PodTerminated,
    "NodeShutdownCompleted": NodeShutdownCompleted,
    "PodForceDeleted": PodForceDeleted,
    "VolumeDetached": VolumeDetached,
    "PodReplaced": PodReplaced,
}
