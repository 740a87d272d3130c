"""Decisions: what the control loops decided, with the fields the public spec requires
(``scenario-format.md`` §5) and the inputs that explain them."""

from __future__ import annotations

from typing import Any

import msgspec


class RankingEntry(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One pod in a ranking, with what each comparator looked at."""

    pod: str
    stats_found: bool
    priority: int
    usage: int = 0
    request: int = 0
    exceeds_request: bool = False
    critical: bool = False


class _Data(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class PodAdmitted(_Data, kw_only=True):
    priority: int
    qos_class: str
    #: required by the spec even when empty, so it has no default (omit_defaults would drop it)
    overhead: dict[str, str]
    #: what admission wrote into the pod besides the above (consumers apply it to their copy)
    priority_class_name: str = ""
    preemption_policy: str = ""
    node_selector: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []


class PodRejected(_Data, kw_only=True):
    reason: str
    message: str
    admitter: str = ""


class ObjectRejected(_Data, kw_only=True):
    kind: str
    name: str
    reason: str
    message: str


class NodeScoreSeen(_Data, kw_only=True):
    node: str
    total: int
    plugins: dict[str, int]


class PodScheduled(_Data, kw_only=True):
    requests: dict[str, str]
    #: why this node: its nomination fit, the only feasible node, the best score (ties: node order)
    why: str = ""
    priority: int = 0
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    #: nodes that failed a filter, by reason
    filtered: dict[str, list[str]] = {}
    #: the best-scored feasible nodes (at most 5), best first
    scores: list[NodeScoreSeen] = []
    nominated_node: str = ""
    attempts: int = 0


class PodUnschedulable(_Data, kw_only=True):
    reasons: list[str]
    message: str
    priority: int = 0
    requests: dict[str, str] = {}
    filtered: dict[str, list[str]] = {}
    attempts: int = 0
    #: the time the pod will be tried again at the earliest (virtual seconds), once a cluster event moves it
    backoff_seconds: float = 0.0
    nominated_node: str = ""


class PreemptionCandidate(_Data, kw_only=True):
    node: str
    victims: list[str]
    pdb_violations: int = 0
    highest_victim_priority: int = 0


class PodNominated(_Data, kw_only=True):
    victims: list[str]
    priority: int = 0
    #: why these victims: lower priority, removed all then reprieved (PDB-violating first)
    message: str = ""
    #: candidates considered (at most 10), the node-pick step that settled it, those tied before it
    candidates: list[PreemptionCandidate] = []
    decided_by: str = ""
    tied: list[str] = []
    #: the dry run's start offset (upstream: random; here 0) and how many nodes it examined
    offset: int = 0
    examined_nodes: int = 0
    pdb_violations: int = 0
    #: lower-priority pods nominated to this node whose nomination was cleared
    cleared_nominations: list[str] = []
    filtered: dict[str, list[str]] = {}


class PodPreempted(_Data, kw_only=True):
    preemptor: str
    grace_period_seconds: int
    priority: int = 0
    preemptor_priority: int = 0
    #: the DisruptionTarget condition the scheduler sets on the victim
    reason: str = "PreemptionByScheduler"
    message: str = ""
    violates_pdb: bool = False


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


class ShutdownKill(_Data, kw_only=True):
    pod: str
    #: when it is told to stop (virtual seconds) and with what grace, and why that grace
    at: float
    grace_period_seconds: int
    grace_from: str = ""
    #: where the priority that placed it in its group came from, when it is not the API's
    #: (a static pod: its manifest's own ``spec.priority``)
    priority_from: str = ""


class ShutdownGroup(_Data, kw_only=True):
    priority: int
    grace_period_seconds: int
    pods: list[str]
    #: planned start and end (virtual seconds) and what ends it: all pods exited, the period, skipped
    start: float | None = None
    end: float | None = None
    ended_by: str = ""
    kills: list[ShutdownKill] = []


class NodeShutdownStarted(_Data, kw_only=True):
    graceful: bool
    groups: list[ShutdownGroup]
    #: sum of the groups' periods: the delay the kubelet asks logind for
    period_requested_seconds: int = 0
    inhibit_delay_max_seconds: int = 0
    #: the migrated or configured table, and the kubelet's gauge
    source: str = ""
    message: str = ""
    start_time_seconds: float = 0.0


class PodTerminated(_Data, kw_only=True):
    reason: str
    grace_period_seconds: int
    killed_at: float
    #: the pod status the kubelet writes (shutdown: phase Failed, reason Terminated)
    message: str = ""


class NodeShutdownCompleted(_Data, kw_only=True):
    #: kubelet_graceful_shutdown_start/end_time_seconds (unix seconds)
    start_time_seconds: float = 0.0
    end_time_seconds: float = 0.0


class PodForceDeleted(_Data, kw_only=True):
    reason: str
    #: who force-deleted it (pod-garbage-collector, a user) and why
    by: str = ""
    message: str = ""


class VolumeDetached(_Data, kw_only=True):
    volume: str
    forced: bool
    reason: str
    pod: str = ""
    #: when the volume stopped being wanted on the node (virtual seconds)
    unwanted_since: float | None = None


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
