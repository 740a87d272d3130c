"""What the scheduler knows of pods and nodes (its cache), in integer units.

Requests are in nanos of their resource (cpu: nanocores, memory: bytes x 1e9), as
``Quantity.nanos`` gives them, so every comparison is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledgerlet_core.model.k8s.objects import Node, Pod, PodSpec, Taint, Toleration
from ledgerlet_core.model.k8s.priority import pod_priority
from ledgerlet_core.model.k8s.resources import pod_requests
from ledgerlet_core.model.k8s.spec_memo import per_spec
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.scheduling.terms import PLAIN, HostPort, PodScheduling, pod_scheduling

#: ``pkg/scheduler/util/non_zero.go``: what scoring assumes for a container requesting nothing
DEFAULT_MILLI_CPU_REQUEST = 100 * 10**6  # 100m in nanocores
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024 * 10**9  # 200Mi in nanobytes

#: resources the Fit filter checks by name, in upstream's order; the rest are scalars
FIT_ORDER = ("cpu", "memory", "ephemeral-storage")


@dataclass(slots=True)
class PodInfo:
    """A pod as the scheduler sees it: identity, priority, effective requests."""

    key: str
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    priority: int
    preemption_policy: str
    requests: dict[str, int]
    nonzero_cpu: int
    nonzero_memory: int
    tolerations: list[Toleration]
    node_selector: dict[str, str]
    termination_grace: int
    scheduler_name: str
    #: when it started (ns); None: not started yet (treated as "now" where compared)
    start: int | None = None
    #: deletion requested (Terminating); ``by_preemption`` when the scheduler asked for it
    terminating: bool = False
    by_preemption: bool = False
    nominated: str = ""
    #: affinity, spread, ports, images, gates (:mod:`.terms`), shared by pods of one spec
    sched: PodScheduling = PLAIN

    @property
    def requests_nothing(self) -> bool:
        return not any(v for k, v in self.requests.items())


def _req(requests: dict[str, Quantity], name: str, default: int) -> int:
    q = requests.get(name)
    return default if q is None else q.nanos


def _requests(pod: Pod) -> tuple[dict[str, int], int, int]:
    """``PodRequests`` with overhead (the Fit filter and quota), and the non-zero view scoring uses."""
    reqs = {k: q.nanos for k, q in pod_requests(pod).items() if q.nanos}
    # scoring's non-zero view: a container that does not set a cpu/memory request counts
    # as 100m / 200Mi (an explicit 0 stays 0)
    cpu = sum(_req(c.resources.requests, "cpu", DEFAULT_MILLI_CPU_REQUEST) for c in pod.spec.containers)
    mem = sum(_req(c.resources.requests, "memory", DEFAULT_MEMORY_REQUEST) for c in pod.spec.containers)
    if pod.spec.overhead:
        cpu += pod.spec.overhead["cpu"].nanos if "cpu" in pod.spec.overhead else 0
        mem += pod.spec.overhead["memory"].nanos if "memory" in pod.spec.overhead else 0
    return reqs, cpu, mem


#: requests by the parts of a spec they follow from (a fleet's pods share their containers:
#: ``Interner``), each with the parts it was worked out from
_BY_PARTS: dict[tuple[int, ...], tuple[tuple[object, ...], tuple[dict[str, int], int, int]]] = {}
_BY_PARTS_KEPT = 4096
_NONE: tuple[()] = ()


#: the last scheduling constraints by the spec object they were worked out for (pods of
#: one template on one node share their admitted spec: scenario/pod_shapes.py)
_SCHED_BY_SPEC: dict[int, tuple[PodSpec, object, str | None, object, PodScheduling]] = {}


def _shared_requests(pod: Pod) -> tuple[dict[str, int], int, int]:
    """:func:`_requests`, worked out once for pods made of the same parts (the dict is
    shared: a :class:`PodInfo`'s requests are never changed in place)."""
    return _spec_requests(pod.spec)


@per_spec
def _spec_requests(spec: PodSpec) -> tuple[dict[str, int], int, int]:
    # (what a pod asks for follows from its spec alone)
    return _requests_by_parts(Pod(spec=spec))


def _requests_by_parts(pod: Pod) -> tuple[dict[str, int], int, int]:
    spec = pod.spec
    # (empty lists and maps are new objects in every pod: one stands for them all)
    parts = (spec.containers, spec.init_containers or _NONE, spec.overhead or _NONE, spec.resources)
    key = tuple(map(id, parts))
    found = _BY_PARTS.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], parts, strict=True)):
        if len(_BY_PARTS) >= _BY_PARTS_KEPT:
            _BY_PARTS.clear()
        found = _BY_PARTS[key] = (parts, _requests(pod))
    return found[1]


#: scheduling constraints by the parts of a pod they follow from, as for requests
_SCHED_BY_PARTS: dict[tuple[object, ...], tuple[tuple[object, ...], PodScheduling]] = {}


def _uses_label_keys(spec: PodSpec) -> bool:
    """Whether the constraints read the pod's own labels (matchLabelKeys, mismatchLabelKeys)."""
    if any(c.match_label_keys for c in spec.topology_spread_constraints):
        return True
    a = spec.affinity
    for group in (a.pod_affinity, a.pod_anti_affinity) if a is not None else ():
        if group is None:
            continue
        terms = [
            *group.required_during_scheduling_ignored_during_execution,
            *(w.pod_affinity_term for w in group.preferred_during_scheduling_ignored_during_execution),
        ]
        if any(t.match_label_keys or t.mismatch_label_keys for t in terms):
            return True
    return False


def _shared_scheduling(pod: Pod) -> PodScheduling:
    """:func:`terms.pod_scheduling`, worked out once for pods made of the same parts (the
    pod's labels count only where a constraint reads them; its owner by kind and name).
    Pods of one spec object, owner references object and namespace (and labels object,
    where read) are looked up by those alone."""
    spec, meta = pod.spec, pod.metadata
    hit = _SCHED_BY_SPEC.get(id(spec))
    if (
        hit is not None
        and hit[0] is spec
        and hit[1] is meta.owner_references
        and hit[2] == meta.namespace
        and (hit[3] is None or hit[3] is meta.labels)
    ):
        return hit[4]
    value = _scheduling_by_parts(pod)
    if len(_SCHED_BY_SPEC) >= _BY_PARTS_KEPT:
        _SCHED_BY_SPEC.clear()
    labels = meta.labels if _uses_label_keys(spec) else None
    _SCHED_BY_SPEC[id(spec)] = (spec, meta.owner_references, meta.namespace, labels, value)
    return value


def _scheduling_by_parts(pod: Pod) -> PodScheduling:
    spec, meta = pod.spec, pod.metadata
    if (
        spec.affinity is None
        and not spec.topology_spread_constraints
        and not spec.scheduling_gates
        and not spec.node_name
        and not spec.node_selector
        and not spec.host_network
        and not meta.owner_references
        and not spec.init_containers
        and all(not c.image and not c.ports for c in spec.containers)
    ):
        return PLAIN
    parts = (
        spec.affinity,
        spec.topology_spread_constraints or _NONE,
        spec.scheduling_gates or _NONE,
        spec.containers,
        spec.init_containers or _NONE,
        spec.node_selector or _NONE,
        meta.labels if _uses_label_keys(spec) else _NONE,
    )
    owner = next(((r.kind, r.name) for r in meta.owner_references if r.controller), None)
    key = (*map(id, parts), owner, spec.node_name, meta.namespace, spec.host_network)
    found = _SCHED_BY_PARTS.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], parts, strict=True)):
        if len(_SCHED_BY_PARTS) >= _BY_PARTS_KEPT:
            _SCHED_BY_PARTS.clear()
        found = _SCHED_BY_PARTS[key] = (parts, pod_scheduling(pod))
    return found[1]


def pod_info(pod: Pod) -> PodInfo:
    """A pod as the scheduler sees it (see :func:`_requests` for what it asks for)."""
    reqs, cpu, mem = _shared_requests(pod)
    tgps = pod.spec.termination_grace_period_seconds
    return PodInfo(
        key=pod.key,
        name=pod.metadata.name,
        namespace=pod.metadata.namespace or "default",
        uid=pod.metadata.uid,
        # (the pod's own: never changed in place, here or in the pod, so not copied: a
        # fleet's half a million pods would hold three containers more each)
        labels=pod.metadata.labels,
        priority=pod_priority(pod),
        preemption_policy=pod.spec.preemption_policy or "PreemptLowerPriority",
        requests=reqs,
        nonzero_cpu=cpu,
        nonzero_memory=mem,
        tolerations=pod.spec.tolerations,
        node_selector=pod.spec.node_selector,
        termination_grace=tgps if tgps is not None else 30,
        scheduler_name=pod.spec.scheduler_name or "default-scheduler",
        sched=_shared_scheduling(pod),
    )


@dataclass(slots=True)
class NodeInfo:
    """A node and the pods the scheduler has on it (bound or assumed)."""

    name: str
    order: int
    labels: dict[str, str]
    allocatable: dict[str, int]
    taints: list[Taint] = field(default_factory=list)
    unschedulable: bool = False
    pods: dict[str, PodInfo] = field(default_factory=dict)
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    #: the host ports its pods use, each with how many pods use it (``NodeInfo.UsedPorts``)
    ports: dict[HostPort, int] = field(default_factory=dict)
    #: the images its runtime holds: normalized name -> size in bytes (``ImageStates``)
    images: dict[str, int] = field(default_factory=dict)
    #: its pods with pod (anti-)affinity terms (``PodsWithAffinity``)
    affinity_pods: dict[str, PodInfo] = field(default_factory=dict)
    #: bumped on every change the scheduler makes (pods in and out, status, taints): what a
    #: preemption dry run computed on the node holds while it stays the same
    version: int = 0

    @property
    def allowed_pods(self) -> int:
        return self.allocatable.get("pods", 0) // 10**9

    def add(self, p: PodInfo) -> None:
        self.version += 1
        self.pods[p.key] = p
        for k, v in p.requests.items():
            self.requested[k] = self.requested.get(k, 0) + v
        self.nonzero_cpu += p.nonzero_cpu
        self.nonzero_memory += p.nonzero_memory
        for port in p.sched.host_ports:
            self.ports[port] = self.ports.get(port, 0) + 1
        if p.sched.has_affinity_terms:
            self.affinity_pods[p.key] = p

    def remove(self, key: str) -> PodInfo | None:
        p = self.pods.pop(key, None)
        if p is None:
            return None
        self.version += 1
        for k, v in p.requests.items():
            self.requested[k] = self.requested.get(k, 0) - v
        self.nonzero_cpu -= p.nonzero_cpu
        self.nonzero_memory -= p.nonzero_memory
        for port in p.sched.host_ports:
            left = self.ports[port] - 1
            if left:
                self.ports[port] = left
            else:
                del self.ports[port]
        self.affinity_pods.pop(key, None)
        return p

    def clone(self) -> NodeInfo:
        return NodeInfo(
            self.name,
            self.order,
            self.labels,
            self.allocatable,
            self.taints,
            self.unschedulable,
            dict(self.pods),
            dict(self.requested),
            self.nonzero_cpu,
            self.nonzero_memory,
            dict(self.ports),
            self.images,
            dict(self.affinity_pods),
        )


def node_allocatable(node: Node) -> dict[str, int]:
    """``status.allocatable`` (capacity where allocatable is not given), in nanos."""
    alloc = node.status.allocatable or node.status.capacity
    out = {k: q.nanos for k, q in node.status.capacity.items()}
    out.update({k: q.nanos for k, q in alloc.items()})
    return out
