"""Internal events: the clock, timers and observations that services pass each other.

They are stored like everything else, because a decision's inputs include them: the
observation an eviction was decided on is the ``NodeObserved`` it cites as a cause.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, cast

import msgspec

from ledgerlet_core.model.runtime import RuntimeView
from ledgerlet_core.model.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    NodeStats,
    PodReference,
    PodStats,
    RlimitStats,
    RuntimeStats,
    Summary,
)


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


#: how a node's image and container filesystems relate to its root one (node_sim/stats.py)
FS_SINGLE: Final = 0  # one filesystem: imagefs and containerfs are nodefs
FS_DEDICATED: Final = 1  # images and writable layers on imagefs (containerfs is imagefs)
FS_SPLIT: Final = 2  # images on imagefs, writable layers on nodefs (containerfs is nodefs)


class NodesObserved(_Data, kw_only=True):
    """Derived (``source: usage``) observations of one tick, member by member.

    Member ``i`` is node ``nodes[i]``'s ``NodeObserved`` with id ``ids[i]`` at order
    ``batch order[:-1] + [places[i]]`` (the batch stands at its first member's place).
    Its node-level stats are the ``i``-th entries of the columns: memory, the ``pods``
    system container (``podsAvailable`` -1: no kubepods limit), the node filesystem,
    the image filesystem where ``fsMode`` gives one of its own, and the pids; its runtime
    view is ``runtimes[runtime[i]]``. ``podsOf`` lists the members whose pods' stats
    ride along, ``pods`` their lists (JSON, in the same order)."""

    time: str
    nodes: list[str]
    ids: list[str]
    places: list[int]
    mem_available: list[int]
    mem_usage: list[int]
    mem_working_set: list[int]
    pods_available: list[int]
    pods_working_set: list[int]
    fs_capacity: list[int]
    fs_used: list[int]
    fs_inodes: list[int]
    fs_inodes_used: list[int]
    fs_mode: list[int]
    img_capacity: list[int]
    img_used: list[int]
    img_inodes: list[int]
    img_inodes_used: list[int]
    max_pid: list[int]
    cur_proc: list[int]
    runtime: list[int]
    runtimes: list[RuntimeView]
    pods_of: list[int] = []
    pods: list[msgspec.Raw] = []
    #: the run keeps whole observations: the stored copy keeps ``pods`` (every member has them)
    whole: bool = False

    def __len__(self) -> int:
        return len(self.nodes)

    def node_stats(self, i: int) -> NodeStats:
        """Member ``i``'s node-level stats, as ``node_sim.stats.node_stats`` made them."""
        time = self.time
        pods_available = self.pods_available[i]
        pods_ws = self.pods_working_set[i]
        nodefs = _fs_stats(self.fs_capacity[i], self.fs_used[i], self.fs_inodes[i], self.fs_inodes_used[i], time)
        mode = self.fs_mode[i]
        if mode == FS_SINGLE:
            imagefs = containerfs = nodefs
        else:
            imagefs = _fs_stats(
                self.img_capacity[i], self.img_used[i], self.img_inodes[i], self.img_inodes_used[i], time
            )
            containerfs = imagefs if mode == FS_DEDICATED else nodefs
        return NodeStats(
            node_name=self.nodes[i],
            system_containers=[
                ContainerStats(
                    name="pods",
                    memory=MemoryStats(
                        time=time,
                        available_bytes=pods_available if pods_available >= 0 else None,
                        usage_bytes=pods_ws,
                        working_set_bytes=pods_ws,
                    ),
                )
            ],
            memory=MemoryStats(
                time=time,
                available_bytes=self.mem_available[i],
                usage_bytes=self.mem_usage[i],
                working_set_bytes=self.mem_working_set[i],
            ),
            fs=nodefs,
            runtime=RuntimeStats(image_fs=imagefs, container_fs=containerfs),
            rlimit=RlimitStats(time=time, maxpid=self.max_pid[i], curproc=self.cur_proc[i]),
        )

    def pods_json(self) -> dict[int, msgspec.Raw]:
        """The members whose pods' stats ride along, and those stats (a JSON list each)."""
        return dict(zip(self.pods_of, self.pods, strict=True))

    def lazy(self, i: int, pods: msgspec.Raw | None) -> LazyNodeObserved:
        """Member ``i`` as a loop reads a single observation (:class:`LazyNodeObserved`);
        without ``pods`` it says its pods' stats were left out (``podsOmitted``)."""
        return LazyNodeObserved(
            node=self.nodes[i],
            summary=_LazySummary(node=self.node_stats(i), pods=pods if pods is not None else msgspec.Raw(b"[]")),
            source="usage",
            runtime=self.runtimes[self.runtime[i]],
            pods_omitted=pods is None,
        )

    def observation(self, i: int, pods: msgspec.Raw | None = None) -> NodeObserved:
        """Member ``i`` as the ``NodeObserved`` it stands for: whole when ``pods`` are
        given, else as the store keeps a derived observation (``podsOmitted``)."""
        summary = Summary(node=self.node_stats(i))
        observed = NodeObserved(
            node=self.nodes[i], summary=summary, source="usage", runtime=self.runtimes[self.runtime[i]]
        )
        if pods is None:
            observed.pods_omitted = True
        else:  # (the list as JSON already: encoded as it is)
            summary.pods = cast(list[PodStats], pods)
        return observed


def _fs_stats(capacity: int, used: int, inodes: int, inodes_used: int, time: str) -> FsStats:
    return FsStats(
        time=time,
        available_bytes=max(capacity - used, 0),
        capacity_bytes=capacity,
        used_bytes=used,
        inodes_free=max(inodes - inodes_used, 0),
        inodes=inodes,
        inodes_used=inodes_used,
    )


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
    "NodesObserved": NodesObserved,
    "PodStarted": PodStarted,
    "NodeStatusUpdated": NodeStatusUpdated,
    "ObjectCreated": ObjectCreated,
    "RunEnded": RunEnded,
}
