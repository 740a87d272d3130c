"""A pod's scheduling constraints, parsed once per distinct spec: node affinity, topology
spread, inter-pod (anti-)affinity, host ports, images, scheduling gates.

Upstream: ``component-helpers/scheduling/corev1/nodeaffinity`` (matching in
:mod:`ledgerlet_core.model.k8s.selection`; ``PreferredSchedulingTerms`` skip weight 0 and
empty terms), ``framework/types.go: AffinityTerm.Matches`` (namespaces,
or a namespace selector on the namespace's labels, then the label selector),
``podtopologyspread/common.go: filterTopologySpreadConstraints`` (matchLabelKeys merged,
minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore by default) and
``scheduler/util: GetHostPorts``. The API server merges ``matchLabelKeys`` and
``mismatchLabelKeys`` of pod (anti-)affinity terms into their selector when it creates
the pod (KEP-3633); here that happens when the pod is read.

Namespaces are not objects ledgerlet holds: a namespace's labels are the one the API
server always sets, ``kubernetes.io/metadata.name`` (a namespace selector on any other
label is named at load as not modelled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.objects import Pod, PodAffinityTerm, TopologySpreadConstraint
from ledgerlet_core.model.k8s.selection import (
    NodeTerm,
    RequiredNodeAffinity,
    Requirement,
    Selector,
    label_selector,
    node_term,
    required_node_affinity,
)

HOSTNAME: Final = "kubernetes.io/hostname"
ZONE: Final = "topology.kubernetes.io/zone"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
DEFAULT_SCHEDULER: Final = "default-scheduler"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"


def namespace_labels(namespace: str) -> dict[str, str]:
    """The labels ledgerlet knows a namespace to have (the API server sets this one)."""
    return {NAMESPACE_NAME_LABEL: namespace}


# -- inter-pod affinity -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PodMatch:
    """Which pods a term counts: by namespace (listed, or by a selector on the namespace's
    labels) and by labels. Terms that count the same pods share one count in the cache."""

    namespaces: frozenset[str]
    ns_selector: Selector
    selector: Selector

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if namespace not in self.namespaces and not self.ns_selector.matches(namespace_labels(namespace)):
            return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    match: PodMatch
    topology_key: str


def affinity_term(owner_namespace: str, owner_labels: Mapping[str, str], term: PodAffinityTerm) -> AffinityTerm:
    """``newAffinityTerm``: no namespaces and no namespace selector means the owner's own
    namespace; matchLabelKeys/mismatchLabelKeys merged as the API server does (In / NotIn
    the owner's value, for keys the owner has)."""
    namespaces = frozenset(term.namespaces)
    if not namespaces and term.namespace_selector is None:
        namespaces = frozenset({owner_namespace})
    selector = label_selector(term.label_selector)
    if term.label_selector is not None:
        extra = [Requirement(k, "In", (owner_labels[k],)) for k in term.match_label_keys if k in owner_labels]
        extra += [Requirement(k, "NotIn", (owner_labels[k],)) for k in term.mismatch_label_keys if k in owner_labels]
        selector = selector.plus(extra)
    return AffinityTerm(PodMatch(namespaces, label_selector(term.namespace_selector), selector), term.topology_key)


# -- topology spread ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def spread_constraints(
    constraints: Iterable[TopologySpreadConstraint], labels: Mapping[str, str], action: str
) -> tuple[SpreadConstraint, ...]:
    """``filterTopologySpreadConstraints`` for one ``whenUnsatisfiable``."""
    out = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector(c.label_selector)
        keys = {k: labels[k] for k in c.match_label_keys if k in labels}
        if keys:  # ``mergeLabelSetWithSelector``: a nil selector adds no requirement of its own
            merged = tuple(Requirement(k, "In", (v,)) for k, v in sorted(keys.items()))
            selector = Selector((*merged, *selector.reqs))
        out.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return tuple(out)


#: ``podtopologyspread/plugin.go: systemDefaultConstraints`` (ScheduleAnyway only: scoring)
SYSTEM_DEFAULT: Final = ((HOSTNAME, 3), (ZONE, 5))


# -- host ports, images ------------------------------------------------------------------------
HostPort = tuple[str, str, int]


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """``GetHostPorts``: restartable init containers' and containers' host ports, sanitized
    (no IP: 0.0.0.0, no protocol: TCP). A ``hostNetwork`` pod's port is its host's: the
    API server defaults its ``hostPort`` to the ``containerPort``."""
    out = []
    inits = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    for c in (*inits, *pod.spec.containers):
        for p in c.ports:
            port = p.host_port or (p.container_port if pod.spec.host_network else 0)
            if port > 0:
                out.append((p.host_ip or "0.0.0.0", p.protocol or "TCP", port))
    return tuple(out)


def normalized_image(name: str) -> str:
    """``imagelocality: normalizedImageName``: ``:latest`` when there is no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


#: no nodeSelector, no required node affinity
ANYWHERE: Final = RequiredNodeAffinity()


@dataclass(frozen=True, slots=True)
class PodScheduling:
    """Everything the filters and scores read of a pod beyond its requests and tolerations."""

    node_name: str = ""
    required: RequiredNodeAffinity = ANYWHERE
    #: None: no preferred node affinity (the score is skipped); () still scores
    preferred: tuple[tuple[int, NodeTerm], ...] | None = None
    #: the pod's own constraints, DoNotSchedule and ScheduleAnyway; ``own_spread``: it has
    #: some (the cluster's default constraints apply only to pods without any)
    spread_hard: tuple[SpreadConstraint, ...] = ()
    spread_soft: tuple[SpreadConstraint, ...] = ()
    own_spread: bool = False
    affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    images: tuple[str, ...] = ()
    num_containers: int = 0
    gates: tuple[str, ...] = ()
    #: the controller (kind, name) that owns the pod, for the default spreading selector
    owner: tuple[str, str] | None = None

    @property
    def has_affinity_terms(self) -> bool:
        """``PodsWithAffinity``: some pod (anti-)affinity, required or preferred."""
        return bool(self.affinity or self.anti_affinity or self.preferred_affinity or self.preferred_anti_affinity)

    @property
    def has_preferred_pod_terms(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


PLAIN: Final = PodScheduling()


def pod_scheduling(pod: Pod) -> PodScheduling:
    spec = pod.spec
    ns = pod.metadata.namespace or "default"
    labels = pod.metadata.labels
    required = required_node_affinity(spec)
    preferred: tuple[tuple[int, NodeTerm], ...] | None = None
    affinity: tuple[AffinityTerm, ...] = ()
    anti: tuple[AffinityTerm, ...] = ()
    pref_aff: tuple[tuple[int, AffinityTerm], ...] = ()
    pref_anti: tuple[tuple[int, AffinityTerm], ...] = ()
    a = spec.affinity
    if a is not None:
        na = a.node_affinity
        if na is not None and na.preferred_during_scheduling_ignored_during_execution is not None:
            prefs = []
            for p in na.preferred_during_scheduling_ignored_during_execution:
                t = node_term(p.preference)
                if p.weight == 0 or t is None or t.broken:
                    continue
                prefs.append((p.weight, t))
            preferred = tuple(prefs)
        if a.pod_affinity is not None:
            req = a.pod_affinity.required_during_scheduling_ignored_during_execution
            affinity = tuple(affinity_term(ns, labels, t) for t in req)
            pref = a.pod_affinity.preferred_during_scheduling_ignored_during_execution
            pref_aff = tuple((w.weight, affinity_term(ns, labels, w.pod_affinity_term)) for w in pref)
        if a.pod_anti_affinity is not None:
            req = a.pod_anti_affinity.required_during_scheduling_ignored_during_execution
            anti = tuple(affinity_term(ns, labels, t) for t in req)
            pref = a.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
            pref_anti = tuple((w.weight, affinity_term(ns, labels, w.pod_affinity_term)) for w in pref)
    tsc = spec.topology_spread_constraints
    owner = next(((r.kind, r.name) for r in pod.metadata.owner_references if r.controller), None)
    images = tuple(normalized_image(c.image) for c in (*spec.init_containers, *spec.containers))
    return PodScheduling(
        node_name=spec.node_name,
        required=required,
        preferred=preferred,
        spread_hard=spread_constraints(tsc, labels, DO_NOT_SCHEDULE),
        spread_soft=spread_constraints(tsc, labels, SCHEDULE_ANYWAY),
        own_spread=bool(tsc),
        affinity=affinity,
        anti_affinity=anti,
        preferred_affinity=pref_aff,
        preferred_anti_affinity=pref_anti,
        host_ports=host_ports(pod),
        images=images,
        num_containers=len(images),
        gates=tuple(g.name for g in spec.scheduling_gates),
        owner=owner,
    )
