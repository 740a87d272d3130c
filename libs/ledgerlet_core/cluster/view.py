"""What exists in the cluster, as the API server holds it: one fold every loop uses.

Every loop folds the same events into a :class:`ClusterView` of its own (in the
distributed stack each process holds one): the run's settings, the nodes with their
kubelet configuration and declared machine, the pods that exist, and the volumes pods
claim. What a loop keeps beyond this is its own progress (a kubelet's running pods, the
scheduler's queue, a controller's expectations).

What exists is what the API server accepted. The scenario's ``objects`` were checked
when the scenario was loaded; a pod applied or created later exists only once
``PodAdmitted`` says what admission made of it (priority, class, overhead, node
selector, tolerations, QoS): until then it is *submitted*, and a pod the API server
refuses never exists. Kinds the API server does not check here (nodes, volumes) exist
as applied.

A handler sees the view with its event's additions folded in and its removals not yet:
:meth:`ClusterView.arrive` runs before the handler, :meth:`ClusterView.settle` after it,
so a handler of ``PodTerminated`` can still read the pod it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from ledgerlet_core.cluster.decoded import Decoded, SharedDecoding
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import ObjectCreated, PodStarted
from ledgerlet_core.contracts.order import ORDER_SCHEMES
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod, Taint
from ledgerlet_core.model.timefmt import EPOCH, parse_rfc3339
from ledgerlet_core.model.usage import NodeUsage, parse_node_usage

TERMINAL_PHASES = ("Succeeded", "Failed")

#: the event types :meth:`ClusterView.arrive` and :meth:`ClusterView.settle` fold (a loop
#: decodes them for the view even when it has no handler of its own for them)
FOLDED_TYPES = frozenset(
    {
        "ScenarioStarted",
        "ObjectApplied",
        "ObjectCreated",
        "ObjectDeleted",
        "UsageDeclared",
        "PodAdmitted",
        "PodRejected",
        "PodScheduled",
        "PodStarted",
        "PodTerminated",
        "PodForceDeleted",
        "OOMKilled",
        "NodeTaintAdded",
        "NodeTaintRemoved",
        "NodeTainted",
        "NodeUntainted",
    }
)


#: how the view reads the types it folds where not by their registered model (a loop's
#: handler of one of these is given the same)
FOLD_DECODERS: dict[str, Callable[[bytes], Any]] = {"ObjectApplied": inp.decode_lazy_applied}


def folds_event(env: Envelope) -> bool:
    """Whether the view folds ``env``: one of :data:`FOLDED_TYPES`, and for usage only a
    node's entry (a pod's or a workload's is the stats collector's business alone)."""
    if env.type == "UsageDeclared":
        return env.node is not None
    return env.type in FOLDED_TYPES


@dataclass(slots=True)
class Settings:
    """The run's configuration, from ``ScenarioStarted``."""

    start: datetime = EPOCH
    kubelet: dict[str, Any] = field(default_factory=dict)
    scheduler: dict[str, Any] = field(default_factory=dict)
    controller: dict[str, Any] = field(default_factory=dict)
    #: ``ScenarioStarted.orderScheme`` (contracts/order.py)
    order_scheme: str = ""

    @property
    def start_unix(self) -> float:
        return self.start.timestamp()


@dataclass(slots=True)
class NodeEntry:
    node: Node
    #: its kubelet's configuration: the scenario's, with the node's annotation applied
    config: KubeletConfig
    #: its place in the order nodes first appeared (scenario spec §6)
    order: int
    #: ``usage.node/NAME`` when the scenario declares the machine (closed loop)
    usage: NodeUsage | None = None
    #: the node's live taints beyond its object's: the control plane's (conditions,
    #: lifecycle, cordon) and the operator's (``taint`` events); and object taints untainted
    plane_taints: list[Taint] = field(default_factory=list)
    user_taints: list[Taint] = field(default_factory=list)
    untainted: list[tuple[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.node.metadata.name

    @property
    def taints(self) -> list[Taint]:
        """Every taint the Node has now: its object's, the control plane's, the operator's."""
        spec = [t for t in self.node.spec.taints if not any(_matches(t, k, e) for k, e in self.untainted)]
        return [*spec, *self.plane_taints, *self.user_taints]


def _matches(taint: Taint, key: str, effect: str) -> bool:
    """An ``untaint`` of ``key`` (and ``effect``, when given) removes this taint."""
    return taint.key == key and (not effect or taint.effect == effect)


class ClusterView:
    def __init__(self, shared: SharedDecoding | None = None) -> None:
        """``shared``: where the loops of a process decode objects once (per run)."""
        self._shared = shared
        self.decoded = Decoded()
        self.settings = Settings()
        self.nodes: dict[str, NodeEntry] = {}
        #: pods that exist, as admission left them, bound to their node once known
        self.pods: dict[str, Pod] = {}
        #: pods applied or created that the API server has not admitted yet
        self.submitted: dict[str, Pod] = {}
        #: ``namespace/claim`` -> the PersistentVolume it is bound to; the attachable (CSI) ones
        self.claims: dict[str, str] = {}
        self.attachable: set[str] = set()
        self._bound_early: dict[str, str] = {}
        self._nodes_seen = 0

    # -- the fold ------------------------------------------------------------------------
    def arrive(self, env: Envelope, data: Any) -> None:
        """What ``env`` adds or changes, folded in before the loop's handler runs."""
        if isinstance(data, inp.LazyObjectApplied):
            self._applied(env.id, data)
        elif isinstance(data, ObjectCreated):
            if data.object.get("kind") == "Pod":
                pod = self.decoded.object(env.id, data.object, Pod)
                self.submitted[pod.key] = pod
        elif isinstance(data, dec.PodAdmitted):
            self._admitted(env.id, env.pod or "", data)
        elif isinstance(data, dec.PodRejected):
            if data.admitter == "apiserver":
                self.submitted.pop(env.pod or "", None)
        elif isinstance(data, dec.PodScheduled):
            self._bind(env.pod or "", env.node or "")
        elif isinstance(data, PodStarted):
            self._bind(data.pod, data.node)
        elif isinstance(data, inp.UsageDeclared):
            if data.key.startswith("node/"):
                entry = self.nodes.get(data.key[len("node/") :])
                if entry is not None:
                    entry.usage = parse_node_usage(data.usage, f"usage.{data.key}")
        elif isinstance(data, dec.NodeTaintAdded | dec.NodeTaintRemoved | inp.NodeTainted | inp.NodeUntainted):
            self._taints(env, data)
        elif isinstance(data, inp.ScenarioStarted):
            if data.order_scheme not in ORDER_SCHEMES:
                known = ", ".join(repr(s) for s in ORDER_SCHEMES)
                raise ValueError(f"ScenarioStarted.orderScheme: {data.order_scheme!r} is not one of {known}")
            if self._shared is not None and data.digest:
                self.decoded = self._shared.for_run(env.run, data.digest)
            self.settings = Settings(
                start=parse_rfc3339(data.start),
                kubelet=data.kubelet_config,
                scheduler=data.scheduler_config,
                controller=data.controller_config,
                order_scheme=data.order_scheme,
            )

    def settle(self, env: Envelope, data: Any) -> None:
        """What ``env`` removes, once the loop's handler has seen it."""
        if isinstance(data, dec.PodTerminated | dec.PodForceDeleted):
            self.pods.pop(env.pod or "", None)
        elif isinstance(data, dec.OOMKilled):
            if data.pod_failed:
                self.pods.pop(env.pod or "", None)
        elif isinstance(data, dec.PodRejected):
            if data.admitter == "kubelet":
                self.pods.pop(env.pod or "", None)
        elif isinstance(data, inp.ObjectDeleted):
            if data.kind == "Pod":
                key = object_key(data.namespace, data.name)
                pod = self.pods.get(key)
                if pod is not None and not pod.spec.node_name:
                    del self.pods[key]  # never bound: gone at once
            elif data.kind == "Node":
                self.nodes.pop(data.name, None)

    # -- reading -------------------------------------------------------------------------
    def volumes_of(self, pod: Pod) -> tuple[str, ...]:
        """The attachable PersistentVolumes a pod's claims are bound to (a tuple: most pods
        have none, and a fleet's controllers keep what this says for each of its pods)."""
        if not pod.spec.volumes or not self.claims:
            return ()
        ns = pod.metadata.namespace or "default"
        out = []
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is None:
                continue
            pv = self.claims.get(f"{ns}/{v.persistent_volume_claim.claim_name}")
            if pv is not None and pv in self.attachable:
                out.append(pv)
        return tuple(out)

    # -- folding -------------------------------------------------------------------------
    def _applied(self, event_id: str, data: inp.LazyObjectApplied) -> None:
        kind = data.kind
        if kind == "Node":
            node = self.decoded.object(event_id, data.object, Node)
            name = node.metadata.name
            config = self.decoded.config(self.settings.kubelet, node.metadata.annotations)
            entry = self.nodes.get(name)
            if entry is None:
                self.nodes[name] = NodeEntry(node, config, self._nodes_seen)
                self._nodes_seen += 1
            else:
                entry.node, entry.config = node, config
                entry.untainted = []  # the object applied now says which taints it has
        elif kind == "Pod":
            pod = self.decoded.object(event_id, data.object, Pod)
            if data.initial:
                if pod.status.phase not in TERMINAL_PHASES:
                    self.pods[pod.key] = pod
            elif pod.key in self.pods:
                # an update of a pod that exists: its spec is immutable (what changes is metadata)
                self.pods[pod.key] = msgspec.structs.replace(pod, spec=self.pods[pod.key].spec)
            else:
                self.submitted[pod.key] = pod
        elif kind == "PersistentVolume":
            pv = convert(data.as_dict(), PersistentVolume)
            if pv.spec.csi is not None:
                self.attachable.add(pv.metadata.name)
            ref = pv.spec.claim_ref or {}
            if ref.get("name"):
                self.claims.setdefault(object_key(ref.get("namespace"), ref["name"]), pv.metadata.name)
        elif kind == "PersistentVolumeClaim":
            pvc = convert(data.as_dict(), PersistentVolumeClaim)
            if pvc.spec.volume_name:
                self.claims[object_key(pvc.metadata.namespace, pvc.metadata.name)] = pvc.spec.volume_name

    def _taints(
        self, env: Envelope, data: dec.NodeTaintAdded | dec.NodeTaintRemoved | inp.NodeTainted | inp.NodeUntainted
    ) -> None:
        name = data.node if isinstance(data, inp.NodeTainted | inp.NodeUntainted) else env.node or ""
        entry = self.nodes.get(name)
        if entry is None:
            return
        if isinstance(data, dec.NodeTaintAdded):
            taint = Taint(key=data.key, value=data.value, effect=data.effect)
            if taint not in entry.plane_taints:
                entry.plane_taints.append(taint)
        elif isinstance(data, dec.NodeTaintRemoved):
            entry.plane_taints = [t for t in entry.plane_taints if (t.key, t.effect) != (data.key, data.effect)]
        elif isinstance(data, inp.NodeTainted):
            kept = [t for t in entry.user_taints if (t.key, t.effect) != (data.key, data.effect)]
            entry.user_taints = [*kept, Taint(key=data.key, value=data.value, effect=data.effect)]
        else:  # an untaint removes the key whoever put it there
            entry.user_taints = [t for t in entry.user_taints if not _matches(t, data.key, data.effect)]
            entry.untainted.append((data.key, data.effect))

    def _admitted(self, event_id: str, key: str, data: dec.PodAdmitted) -> None:
        raw = self.submitted.pop(key, None)
        if raw is None:
            return
        pod = self.decoded.admitted(event_id, raw, data)
        node = self._bound_early.pop(key, None)
        if node is not None:
            pod = _on_node(pod, node)
        self.pods[key] = pod

    def _bind(self, key: str, node: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            if pod.spec.node_name != node:
                self.pods[key] = _on_node(pod, node)
        elif key in self.submitted:
            # the binding and the admission come from one step, in no order between them
            self._bound_early[key] = node


def _on_node(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


class NodeObjects(Mapping[str, Node]):
    """The view's Node objects by name, in node order, read where they are (no copy)."""

    def __init__(self, view: ClusterView) -> None:
        self._nodes = view.nodes

    def __getitem__(self, name: str) -> Node:
        return self._nodes[name].node

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


class LiveTaints(Mapping[str, list[Taint]]):
    """Each node's live taints (:attr:`NodeEntry.taints`), computed only for the nodes asked for."""

    def __init__(self, view: ClusterView) -> None:
        self._nodes = view.nodes

    def __getitem__(self, name: str) -> list[Taint]:
        return self._nodes[name].taints

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)
