"""Internal events: the clock, timers and observations that services pass each other.

They are stored like everything else, because a decision's inputs include them: the
observation an eviction was decided on is the ``NodeObserved`` it cites as a cause.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from ledgerlet_core.model.runtime import RuntimeView
from ledgerlet_core.model.summary import NodeStats, PodReference, PodStats, Summary


class _Data(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


#: Clock phases at one instant, in the order they tick: timers (pods exiting), then
#: housekeeping (observations and eviction passes), then status (node status updates,
#: periodic image GC: work that reads what the housekeeping pass just saw).
PHASE_TIMERS = 0
PHASE_HOUSEKEEPING = 1
PHASE_STATUS = 2


class ClockTick(_Data, kw_only=True):
    """Virtual time has reached the envelope's ``t``.

    At one instant the clock ticks in phases: 0 fires ordinary timers (pods exiting),
    1 is housekeeping (observations and eviction passes); ``round`` counts the ticks
    at that instant.
    """

    round: int = 0
    phase: int = 0


class TimerSet(_Data, kw_only=True):
    """A service asks the clock to tick at ``at`` (ns) so it can act then."""

    at: int
    owner: str
    #: kept for v1 readers; no longer filled (which of a step's events asked first varies)
    purpose: str = ""
    phase: int = 0


class ObjectCreated(_Data, kw_only=True):
    """A controller created an object (a workload controller's pod), as the API stores it."""

    object: dict[str, Any]
    owner: str = ""


class NodeStatusUpdated(_Data, kw_only=True):
    """The kubelet published node status: capacity, allocatable and pressure conditions."""

    node: str
    capacity: dict[str, str]
    allocatable: dict[str, str]
    conditions: list[str] = []


class NodeObserved(_Data, kw_only=True):
    """One observation of a node, i.e. one housekeeping pass of its eviction manager.

    ``source`` is ``usage`` (derived, closed loop) or ``stats`` (a recorded Summary);
    ``runtime`` is the container runtime's image list and dead containers (closed loop).
    ``podsOmitted`` marks a stored copy whose per-pod stats were left out: a derived
    observation is a pure function of the stored inputs and can be derived again.

    ``podsDelta``: the pods' stats are told as a change from the node's previous
    observation (a fleet's pods mostly report the same stats pass after pass, and a
    110-pod list is 40 KB): ``summary.pods`` is left out, and the pods are the previous
    observation's with ``podsChanged`` replacing theirs (or added at the end, by pod
    ``namespace/name``) and ``podsGone`` removed, in that order. Only derived
    observations are told so, and only after a whole one for the same node.
    """

    node: str
    summary: Summary
    source: str
    after_reclaim: Summary | None = None
    runtime: RuntimeView | None = None
    pods_omitted: bool = False
    pods_delta: bool = False
    pods_changed: dict[str, PodStats] = {}
    pods_gone: list[str] = []


class _NodeOnlySummary(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    node: NodeStats


class _ObservationNodeView(_Data, kw_only=True):
    """NodeObserved read without its pods (msgspec skips them without building them)."""

    node: str
    summary: _NodeOnlySummary
    source: str
    runtime: RuntimeView | None = None


class _LazySummary(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    node: NodeStats
    pods: msgspec.Raw = msgspec.Raw(b"[]")


class LazyNodeObserved(_Data, kw_only=True):
    """NodeObserved with its pods' stats left as JSON until asked for (most passes never
    need them: no pressure, no local-storage limits)."""

    node: str
    summary: _LazySummary
    source: str
    after_reclaim: Summary | None = None
    runtime: RuntimeView | None = None
    pods_omitted: bool = False
    pods_delta: bool = False
    pods_changed: dict[str, msgspec.Raw] = {}
    pods_gone: list[str] = []

    def node_summary(self) -> Summary:
        return Summary(node=self.summary.node)

    def pod_stats(self) -> list[PodStats]:
        return _PODS.decode(self.summary.pods)

    def pods_by_key(self) -> dict[str, msgspec.Raw]:
        """The whole list's pods as JSON, by ``namespace/name`` (what a delta applies to)."""
        out: dict[str, msgspec.Raw] = {}
        for raw in _RAW_LIST.decode(self.summary.pods):
            ref = _POD_REF.decode(raw).pod_ref
            out[f"{ref.namespace}/{ref.name}"] = msgspec.Raw(bytes(raw))  # (not the whole record)
        return out


class _PodRefOnly(msgspec.Struct, rename="camel", kw_only=True):
    pod_ref: PodReference


_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_POD_REF = msgspec.json.Decoder(_PodRefOnly)


def pods_from(stats: Iterable[msgspec.Raw | bytes]) -> list[PodStats]:
    """Pods' stats from their JSON, one document each."""
    return _PODS.decode(b"[" + b",".join(stats) + b"]")


_LAZY = msgspec.json.Decoder(LazyNodeObserved)
_PODS = msgspec.json.Decoder(list[PodStats])


def decode_lazy_observation(data: bytes) -> LazyNodeObserved:
    return _LAZY.decode(data)


_NODE_VIEW = msgspec.json.Decoder(_ObservationNodeView)
_ENCODER = msgspec.json.Encoder()


def compact_observation_json(data: bytes) -> bytes | None:
    """The stored form of a derived observation (node-level stats, ``podsOmitted``), or
    ``None`` when it is stored as it is (a recorded ``stats`` observation)."""
    view = _NODE_VIEW.decode(data)
    if view.source != "usage":
        return None
    stored = NodeObserved(
        node=view.node,
        summary=Summary(node=view.summary.node),
        source=view.source,
        runtime=view.runtime,
        pods_omitted=True,
    )
    return _ENCODER.encode(stored)


class PodStarted(_Data, kw_only=True):
    """The kubelet admitted a pod that arrived at its node and started it.

    Pods in the scenario's ``objects`` are running from the start and need none.
    """

    node: str
    pod: str
    uid: str = ""


class PodDeletionRequested(_Data, kw_only=True):
    """A controller deleted a pod (a graceful DELETE): it is Terminating until its kubelet
    stops it, or forever if the kubelet is gone. ``by`` names the controller."""

    node: str
    pod: str
    grace_period_seconds: int
    by: str
    reason: str = ""
    message: str = ""
    taint: str = ""


#: how a run ended (:class:`RunEnded`)
RUN_COMPLETED: Final = "completed"
RUN_FAILED: Final = "failed"


class RunEnded(_Data, kw_only=True):
    """How a run ended, stored by what drove it once everything the run derived was
    stored (``completed``), or when it stopped on an error (``failed``, with the reason).
    A run without one was cut off (killed) or is still going: its stored events are only
    a prefix of the run, and every reader says so. Re-running the same run id completes
    it (every event it had stored is skipped by id)."""

    outcome: str
    reason: str = ""


INTERNAL_TYPES: dict[str, type[_Data]] = {
    "PodDeletionRequested": PodDeletionRequested,
    "ClockTick": ClockTick,
    "TimerSet": TimerSet,
    "NodeObserved": NodeObserved,
    "PodStarted": PodStarted,
    "NodeStatusUpdated": NodeStatusUpdated,
    "ObjectCreated": ObjectCreated,
    "RunEnded": RunEnded,
}
