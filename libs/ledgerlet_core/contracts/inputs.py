"""Input events: what happened to the cluster, as the scenario (or a recording) says.

Objects travel as the plain JSON the API server would store (defaults applied), so a
recorded input can be replayed by a later ledgerlet that models more fields.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec


class _Data(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class UnmodelledField(_Data, kw_only=True):
    """A field (or object) upstream decides by that ledgerlet does not model, found when
    the scenario was loaded (``scenario/unmodelled.py``). The pods it touches: those named,
    those whose spec has one of ``specs`` (a signature of the parts it reads), those using
    one of ``claims``, those on one of ``nodes``, those in ``namespace`` (that ``selector``
    selects, when there is one)."""

    object: str
    field: str
    #: the upstream plugin or controller that would read it
    plugin: str
    message: str
    #: how many pods or objects carry it; ``pods``: the first of them
    count: int = 1
    pods: list[str] = []
    specs: list[str] = []
    claims: list[str] = []
    nodes: list[str] = []
    namespace: str = ""
    selector: dict[str, Any] | None = None


class ScenarioStarted(_Data, kw_only=True):
    """The run's configuration; everything else in the run follows from it and the inputs."""

    name: str
    start: str
    duration: int
    kubelet_config: dict[str, Any] = {}
    scheduler_config: dict[str, Any] = {}
    controller_config: dict[str, Any] = {}
    node_order: list[str] = []
    source: str = ""
    digest: str = ""
    #: how a loop whose work is per node numbers what it emits (contracts/order.py):
    #: "" by the step, as every run before it; "node" per node, so its work can be split
    order_scheme: str = ""
    #: how the run keeps its derived observations: "" node-level stats only (the pods'
    #: stats follow from the inputs); "whole" with every pod's stats too
    #: (``ledgerlet run --store-observations full``)
    observations: str = ""
    #: recorded Kubernetes Events (``spec.observedEvents``, scenario/observed_events.py):
    #: what the cluster was seen to do, kept beside the decisions; never an input
    observed_events: list[dict[str, Any]] = []
    #: what the scenario holds that upstream would decide by and ledgerlet does not model
    unmodelled: list[UnmodelledField] = []


#: ``ScenarioStarted.observations``: derived observations kept with every pod's stats
OBSERVATIONS_WHOLE: Final = "whole"


class ScenarioEnded(_Data, kw_only=True):
    duration: int


class ObjectApplied(_Data, kw_only=True):
    """``kubectl apply``: create or update; ``initial`` marks the scenario's starting objects."""

    object: dict[str, Any]
    initial: bool = False


class _ObjectMetaHead(msgspec.Struct, kw_only=True):
    name: str = ""
    namespace: str = ""


class _ObjectHead(msgspec.Struct, kw_only=True):
    kind: str = ""
    metadata: _ObjectMetaHead = msgspec.field(default_factory=_ObjectMetaHead)


_HEAD = msgspec.json.Decoder(_ObjectHead)
_PLAIN = msgspec.json.Decoder(dict[str, Any])


class LazyObjectApplied(msgspec.Struct, rename="camel", kw_only=True, dict=True):
    """:class:`ObjectApplied` as the loops read it: the object stays JSON until a loop
    asks for it, as a model decoded once per process (``ClusterView.decoded``), or
    whole (:meth:`as_dict`). Most loops only look at what kind of object it is and its
    name: a fleet's pods are never turned into dicts six times over."""

    object: msgspec.Raw
    initial: bool = False

    def _head(self) -> _ObjectHead:
        head: _ObjectHead | None = self.__dict__.get("_h")
        if head is None:
            head = self.__dict__["_h"] = _HEAD.decode(self.object)
        return head

    @property
    def kind(self) -> str:
        return self._head().kind

    @property
    def name(self) -> str:
        return self._head().metadata.name

    def as_dict(self) -> dict[str, Any]:
        return _PLAIN.decode(self.object)


_LAZY_APPLIED = msgspec.json.Decoder(LazyObjectApplied)


def decode_lazy_applied(data: bytes) -> LazyObjectApplied:
    return _LAZY_APPLIED.decode(data)


class ObjectDeleted(_Data, kw_only=True):
    kind: str
    name: str
    namespace: str = ""
    grace_period_seconds: int | None = None
    force: bool = False


class UsageDeclared(_Data, kw_only=True):
    """One ``usage`` entry: ``node/NAME``, ``NAMESPACE/POD`` or ``NAMESPACE/KIND/NAME``."""

    key: str
    usage: dict[str, Any]


class StatsReported(_Data, kw_only=True):
    """A recorded Summary API document for a node (open loop), and optionally what the
    kubelet saw after its node-level reclaim in that pass."""

    node: str
    summary: dict[str, Any]
    after_reclaim: dict[str, Any] | None = None


class NodeShutdownRequested(_Data, kw_only=True):
    node: str


class NodePoweredOff(_Data, kw_only=True):
    node: str


class NodePoweredOn(_Data, kw_only=True):
    node: str


class NodeTainted(_Data, kw_only=True):
    node: str
    key: str
    value: str = ""
    effect: str


class NodeUntainted(_Data, kw_only=True):
    node: str
    key: str
    effect: str = ""


class StatsMissed(_Data, kw_only=True):
    """A live recording's node that did not answer its ``/stats/summary`` in one interval
    (``ledgerlet record``): a gap in what was observed, not a change of the node."""

    node: str
    reason: str


class RecordingResumed(_Data, kw_only=True):
    """A live recording started again after a stop (``ledgerlet record`` with the same run
    id): nothing was observed between ``since`` (the last stored input's instant, virtual
    ns) and this event's instant. The objects that changed meanwhile follow as inputs; those
    that did not are not stored again."""

    since: int
    reason: str = ""


class ClusterEventObserved(_Data, kw_only=True):
    """A core v1 Event a live recording saw (``ledgerlet record``), of a reason that tells
    what the real kubelet, scheduler or taint manager did (``Evicted``, ``Preempted``,
    ``OOMKilling``, a pressure condition set or cleared, ``Shutdown``,
    ``TaintManagerEviction``): the observed outcome kept beside the model's decisions. The
    control loops do not read it. ``event`` (the Event object's NAMESPACE/NAME) is the same
    for every update of one event; an update is stored only when it changed (its count,
    last timestamp or message). Timestamps are RFC 3339 as the API server gave them."""

    event: str
    reason: str
    type: str = "Normal"
    message: str = ""
    #: the object the event is about (``involvedObject``)
    kind: str
    namespace: str = ""
    name: str
    uid: str = ""
    #: who reported it (``source``)
    component: str = ""
    host: str = ""
    first_timestamp: str = ""
    last_timestamp: str = ""
    count: int = 1


class KubeletConfigObserved(_Data, kw_only=True):
    """A live recording's kubelet whose configuration (its ``configz``, the fields a
    scenario models) is not the one the run had for it: the run's start's, or the one last
    observed. The scenario format has no input for a kubelet's configuration changing, so
    the control loops do not read it: it is evidence, not yet a change of what they model."""

    node: str
    config: dict[str, Any]


class BatchMember(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One input event inside an :class:`InputBatch`: everything its envelope would hold
    but what the batch holds for all of them (run, time, kind)."""

    id: str
    #: its place among the instant's inputs: its order is ``[INPUTS, index]``
    index: int
    type: str
    stream: str
    node: str | None = None
    pod: str | None = None
    data: msgspec.Raw


class InputBatch(_Data, kw_only=True):
    """Inputs of one instant that concern one node, carried as one event: a fleet's bound
    pods and their usage entries (hundreds of thousands of them) travel and are stored a
    node at a time. Each member is the input it stands for, with its own id and place, and
    every reader sees the members, never the batch (:mod:`ledgerlet_core.contracts.batch`),
    so what loops decide and what the store answers is what single inputs would give."""

    members: list[BatchMember]


INPUT_TYPES: dict[str, type[_Data]] = {
    "ScenarioStarted": ScenarioStarted,
    "ScenarioEnded": ScenarioEnded,
    "ObjectApplied": ObjectApplied,
    "ObjectDeleted": ObjectDeleted,
    "UsageDeclared": UsageDeclared,
    "StatsReported": StatsReported,
    "NodeShutdownRequested": NodeShutdownRequested,
    "NodePoweredOff": NodePoweredOff,
    "NodePoweredOn": NodePoweredOn,
    "NodeTainted": NodeTainted,
    "NodeUntainted": NodeUntainted,
    "StatsMissed": StatsMissed,
    "RecordingResumed": RecordingResumed,
    "ClusterEventObserved": ClusterEventObserved,
    "KubeletConfigObserved": KubeletConfigObserved,
    "InputBatch": InputBatch,
}
