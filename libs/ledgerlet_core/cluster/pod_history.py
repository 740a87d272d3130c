"""One pod's life as the API server held it, folded from what a run stored about it.

The read side (the kubectl facade, explanations) asks what a pod was at an instant: it
exists once the API server accepted it (a scenario's ``objects`` from the start, later
ones at their ``PodAdmitted``) and until it is deleted. A preempted, deleted or
taint-evicted pod is gone once it has exited, a force-deleted one at once. A pod
submitted again under a name whose last pod is gone, or has ended (``Failed``,
``Succeeded``), is a new pod with a history of its own: a StatefulSet re-creates an
evicted ``db-0`` only once the old object is deleted (``pkg/controller/statefulset``:
a failed pod is deleted, then created again), and the API server admits a pod applied
over an ended one as new. What the kubelet, the scheduler and the controllers wrote is
kept with the virtual instant (ns) they wrote it at:

* evicted (``pkg/kubelet/eviction/eviction_manager.go: evictPod``): ``phase: Failed``,
  ``reason: Evicted``, the eviction message, and the ``DisruptionTarget`` condition
  (reason ``TerminationByKubelet``) from the decision on;
* refused by its kubelet (``pkg/kubelet/kubelet.go: rejectPod``): ``phase: Failed``, the
  admission reason, message ``Pod was rejected: ...``;
* shut down (``pkg/kubelet/nodeshutdown``): ``phase: Failed``, ``reason: Terminated``,
  the shutdown message and ``DisruptionTarget``;
* preempted (``pkg/scheduler/framework/preemption``): ``DisruptionTarget`` (reason
  ``PreemptionByScheduler``) and a deletion request until it exits;
* OOM-killed containers: the last termination, the restart count and the back-off.

The loops fold the cluster for their decisions in :mod:`ledgerlet_core.cluster.view`
(typed objects, built for speed); this fold keeps the pod as submitted (its JSON, fields
ledgerlet does not model included) for the readers that show it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeAlias, get_args

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.model.duration import SECOND

#: the events that change a pod as the API server holds it, as their contract models
PodEvent: TypeAlias = (
    inp.ObjectApplied
    | internal.ObjectCreated
    | inp.ObjectDeleted
    | dec.PodAdmitted
    | dec.PodRejected
    | dec.PodScheduled
    | dec.PodUnschedulable
    | dec.PodNominated
    | internal.PodStarted
    | dec.PodPreempted
    | internal.PodDeletionRequested
    | dec.PodEvicted
    | dec.PodTerminated
    | dec.PodForceDeleted
    | dec.OOMKilled
)
#: their event types (a model's type is its class name: ``contracts.registry``)
POD_HISTORY_TYPES: Final = tuple(model.__name__ for model in get_args(PodEvent))
#: how a pod ends that its object outlives (the kubelet writes a terminal status), and the
#: status reason it writes
KEPT_ENDINGS: Final = {"Evicted": "Evicted", "NodeShutdown": "Terminated"}
#: the phases a pod never leaves
TERMINAL_PHASES: Final = ("Succeeded", "Failed")
#: the exit code of a container the kernel's OOM killer ended (SIGKILL)
OOM_EXIT_CODE: Final = 137
#: the conditions a running pod's kubelet sets true
_RUNNING_CONDITIONS: Final = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


class Condition(NamedTuple):
    status: str
    reason: str
    message: str
    #: when the status (or its reason) last changed
    since: int


class Termination(NamedTuple):
    """A container's exit."""

    at: int
    reason: str
    exit_code: int


class Deletion(NamedTuple):
    """A graceful delete: the pod is Terminating from ``at`` for its grace period."""

    at: int
    grace_period_seconds: int

    @property
    def deadline(self) -> int:
        return self.at + self.grace_period_seconds * SECOND


class Ending(NamedTuple):
    """The kubelet stopped the pod (``PodTerminated``): why, and with what grace."""

    at: int
    reason: str
    grace_period_seconds: int
    #: the object outlives it (an eviction, a shutdown), else the pod is gone
    kept: bool


@dataclass(slots=True)
class ContainerHistory:
    restarts: int = 0
    #: its last termination
    last: Termination | None = None
    running_since: int | None = None
    #: backing off until this instant, then running again
    back_off_until: int | None = None
    #: terminated for good
    terminated: Termination | None = None


@dataclass(slots=True)
class PodHistory:
    """The pod after the events folded so far (all times virtual ns)."""

    #: the object as submitted (``metadata`` as last applied); None before any, or refused
    submitted: dict[str, Any] | None = None
    #: what admission wrote into it (priority, preemption policy, overhead, tolerations) and
    #: the QoS class the API server gave it
    admitted: dec.PodAdmitted | None = None
    exists: bool = False
    #: when the API server accepted it (0 for the scenario's starting objects)
    created: int = 0
    node: str = ""
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    conditions: dict[str, Condition] = field(default_factory=dict)
    started: int | None = None
    containers: dict[str, ContainerHistory] = field(default_factory=dict)
    deletion: Deletion | None = None
    nominated: str = ""
    qos: str = ""
    #: the kubelet ended it with a status reason of its own (no container statuses)
    ended_by_kubelet: bool = False
    ending: Ending | None = None
    #: the kubelet's eviction message, the status message once the pod has exited
    eviction_message: str = ""
    #: the instant of the last event folded
    changed: int = 0
    #: the event that carried the object (a uid for objects given without one)
    origin: str = ""
    #: how many objects were submitted under this name before this one
    incarnation: int = 0

    @property
    def ended(self) -> bool:
        """It exists in a terminal phase: the decision loops have let it go, and a pod
        submitted under its name is a new one (``cluster.view``: gone from ``pods``)."""
        return self.exists and self.phase in TERMINAL_PHASES

    def spec(self) -> dict[str, Any]:
        """A fresh copy of the spec as the API server stores it: submitted, then admitted."""
        spec: dict[str, Any] = copy.deepcopy((self.submitted or {}).get("spec", {}))
        a = self.admitted
        if a is None:
            return spec
        spec["priority"] = a.priority
        written: dict[str, Any] = {
            "priorityClassName": a.priority_class_name,
            "preemptionPolicy": a.preemption_policy,
            "nodeSelector": a.node_selector,
            "tolerations": a.tolerations,
        }
        for key, value in written.items():
            if value:
                spec[key] = copy.deepcopy(value)
        if a.overhead:
            spec["overhead"] = dict(a.overhead)
        return spec


def pod_history(events: Iterable[Envelope], until: int) -> PodHistory:
    """The pod after every event of ``events`` (one pod's, in store order) at or before
    ``until``; each event read as its contract's model (``contracts.registry``)."""
    h = PodHistory()
    for env in events:
        if env.t > until:
            break
        if env.type not in POD_HISTORY_TYPES:
            continue
        h = fold_event(h, env, decode_data(env))
    return h


def fold_event(h: PodHistory, env: Envelope, data: PodEvent) -> PodHistory:
    """``h`` after one event (``data``: its contract model): the same history changed, or a
    new one when the event submits a new pod under the name."""
    h.changed = env.t
    match data:
        case inp.ObjectApplied():
            return _applied(h, env, data)
        case internal.ObjectCreated():
            if not h.exists or h.ended:
                return _reincarnated(h, data.object, env.id)
        case dec.PodAdmitted():
            _admitted(h, env, data)
        case dec.PodRejected():
            _rejected(h, data)
        case dec.PodScheduled():
            h.node = env.node or h.node
            h.nominated = ""
            _condition(h, "PodScheduled", "True", env.t)
        case dec.PodUnschedulable():
            h.nominated = data.nominated_node or h.nominated
            _condition(h, "PodScheduled", "False", env.t, "Unschedulable", data.message)
        case dec.PodNominated():
            h.nominated = env.node or ""
        case internal.PodStarted():
            _start(h, env.t)
        case dec.PodPreempted():
            _condition(h, "DisruptionTarget", "True", env.t, data.reason, data.message)
            h.deletion = Deletion(env.t, data.grace_period_seconds)
        case internal.PodDeletionRequested():
            if data.reason == "TaintEviction":
                _condition(h, "DisruptionTarget", "True", env.t, "DeletionByTaintManager", data.message)
            h.deletion = Deletion(env.t, data.grace_period_seconds)
        case dec.PodEvicted():
            h.eviction_message = data.message
            _condition(h, "DisruptionTarget", "True", env.t, "TerminationByKubelet", data.message)
        case dec.PodTerminated():
            _terminated(h, env, data)
        case dec.PodForceDeleted():
            h.exists = False
        case inp.ObjectDeleted():
            _deleted(h, env, data)
        case dec.OOMKilled():
            _oom_killed(h, env, data)
    return h


def _condition(h: PodHistory, kind: str, status: str, t: int, reason: str = "", message: str = "") -> None:
    old = h.conditions.get(kind)
    if old is not None and old.status == status and old.reason == reason:
        t = old.since  # unchanged: the transition stays when it was
    h.conditions[kind] = Condition(status, reason, message, t)


def _start(h: PodHistory, t: int) -> None:
    h.phase = "Running"
    if h.started is None:
        h.started = t
    for c in h.containers.values():
        if c.running_since is None and c.terminated is None:
            c.running_since = t
    for kind in _RUNNING_CONDITIONS:
        _condition(h, kind, "True", t)


def _containers(obj: dict[str, Any]) -> dict[str, ContainerHistory]:
    return {c.get("name", ""): ContainerHistory() for c in obj.get("spec", {}).get("containers", [])}


def _applied(h: PodHistory, env: Envelope, data: inp.ObjectApplied) -> PodHistory:
    obj = data.object
    if data.initial:
        h.submitted, h.exists, h.created, h.origin = obj, True, 0, env.id
        h.containers = _containers(obj)
        status = obj.get("status", {})
        h.phase = status.get("phase", "Pending")
        h.qos = status.get("qosClass", "")
        h.node = obj.get("spec", {}).get("nodeName", "")
        if h.node:
            _condition(h, "PodScheduled", "True", 0)
        if h.phase == "Running":
            _start(h, 0)
        elif h.phase in ("Succeeded", "Failed"):
            h.reason, h.message = status.get("reason", ""), status.get("message", "")
            h.ended_by_kubelet = True
        return h
    if h.exists and h.submitted is not None and not h.ended:
        # an update: metadata changes; the spec and the uid are immutable
        old_meta = h.submitted.get("metadata", {})
        meta = dict(obj.get("metadata", old_meta))
        if old_meta.get("uid"):
            meta["uid"] = old_meta["uid"]
        else:
            meta.pop("uid", None)  # (the uid the object was given from its origin)
        h.submitted = {**h.submitted, "metadata": meta}
        return h
    return _reincarnated(h, obj, env.id)


def _reincarnated(h: PodHistory, obj: dict[str, Any] | None, origin: str) -> PodHistory:
    """A pod object submitted under a name whose last pod is gone or ended: nothing of the
    old one carries over (the new one exists once admitted)."""
    incarnation = h.incarnation + (h.submitted is not None or h.origin != "")
    return PodHistory(submitted=obj, changed=h.changed, origin=origin, incarnation=incarnation)


def _admitted(h: PodHistory, env: Envelope, data: dec.PodAdmitted) -> None:
    if h.submitted is None or h.exists:
        return
    h.admitted, h.exists, h.created = data, True, env.t
    h.qos = data.qos_class
    h.containers = _containers(h.submitted)
    h.phase = "Pending"
    if env.node:
        h.node = env.node
        _condition(h, "PodScheduled", "True", env.t)


def _rejected(h: PodHistory, data: dec.PodRejected) -> None:
    if data.admitter == "apiserver":
        if not h.exists:
            h.submitted = None  # refused: it never existed
    elif h.exists:
        h.phase, h.reason, h.ended_by_kubelet = "Failed", data.reason, True
        h.message = "Pod was rejected: " + data.message
        for kind in _RUNNING_CONDITIONS:
            h.conditions.pop(kind, None)


def _terminated(h: PodHistory, env: Envelope, data: dec.PodTerminated) -> None:
    """The pod has exited; why says whether its object stays."""
    kept = KEPT_ENDINGS.get(data.reason)
    h.ending = Ending(env.t, data.reason, data.grace_period_seconds, kept is not None)
    if kept is None:
        h.exists = False  # deleted (by a user, the scheduler's preemption, the taint manager): gone once exited
        return
    h.phase, h.reason, h.ended_by_kubelet = "Failed", kept, True
    h.message = h.eviction_message if data.reason == "Evicted" else data.message
    if data.reason == "NodeShutdown":
        _condition(h, "DisruptionTarget", "True", env.t, "TerminationByKubelet", h.message)
    for kind in ("Ready", "ContainersReady"):  # (status.GeneratePodReadyCondition: a terminal pod)
        if kind in h.conditions:
            _condition(h, kind, "False", env.t, "PodFailed")
    if "PodReadyToStartContainers" in h.conditions:  # the sandbox is gone
        _condition(h, "PodReadyToStartContainers", "False", env.t)


def _oom_killed(h: PodHistory, env: Envelope, data: dec.OOMKilled) -> None:
    c = h.containers.setdefault(data.container, ContainerHistory())
    c.restarts = data.restart_count or c.restarts  # (0 is never stored: omitted, the count kept)
    killed = Termination(env.t, "OOMKilled", OOM_EXIT_CODE)
    c.last = killed
    c.running_since = None
    if data.pod_failed:
        c.terminated = killed
        h.phase = "Failed"
        for kind in ("Ready", "ContainersReady"):
            _condition(h, kind, "False", env.t, "PodFailed")
        return
    c.back_off_until = None if data.restart_at is None else round(float(data.restart_at) * SECOND)
    if c.back_off_until is None:
        c.terminated = killed


def _deleted(h: PodHistory, env: Envelope, data: inp.ObjectDeleted) -> None:
    grace = data.grace_period_seconds
    if not h.node or data.force or grace == 0:
        h.exists = False  # never bound, or --force --grace-period=0: removed at once
    elif h.exists:
        own = (h.submitted or {}).get("spec", {}).get("terminationGracePeriodSeconds", 30)
        h.deletion = Deletion(env.t, int(own if grace is None else grace))
