"""The scheduler's cache: nodes as it sees them (allocatable, labels, taints,
unschedulable, images, the pods bound or assumed there), nominations, the workload
controllers (for default topology spreading and disruption budgets) and
PodDisruptionBudgets (``pkg/scheduler/backend/cache``, ``nominator.go``).

A node's allocatable is its kubelet's (capacity minus reservations, as the kubelet
publishes it); its taints are those of its object, the control plane's (conditions,
lifecycle) and the operator's (``taint`` events), in that order; its images those of its
object's ``status.images``, or of the machine the scenario declares. A deleted node keeps
its pods in the cache until they are gone (upstream keeps such a node's info while it
has pods), so a node that comes back finds them. Alongside the node table the cache keeps
per-node counts of matching pods (:mod:`.index`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.node_status import allocatable, reported_capacity
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Node, PodDisruptionBudget, Taint
from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.model.quantity import parse_quantity
from ledgerlet_core.scheduling.disruption import Controller, pdb_views
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.preemption import PDB
from ledgerlet_core.scheduling.table import NodeTable
from ledgerlet_core.scheduling.terms import normalized_image


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.pod_node: dict[str, str] = {}
        #: pods nominated to run on a node, by node
        self.nominated: dict[str, dict[str, PodInfo]] = {}
        #: :meth:`nominated_view`, and the nodes whose list there is to be made again: a
        #: node's list stays the same object while its nominations do not change (the vector
        #: cycle keeps what it worked out of each list while it is the same)
        self._nominated_view: dict[str, list[PodInfo]] = {}
        self._nominations_changed: set[str] = set()
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self._objects: dict[str, Node] = {}
        self._machines: dict[str, Mapping[str, int]] = {}
        self._configs: dict[str, KubeletConfig] = {}
        self._node_list: list[NodeInfo] | None = None
        self._user_taints: dict[str, list[Taint]] = {}
        #: the taints of each node's object, as last applied, less those ``untaint`` removed
        self._spec_taints: dict[str, list[Taint]] = {}
        #: the nodes as columns for the vector cycle, and the rows to refresh before the next
        self._table: NodeTable | None = None
        self._stale: set[str] = set()
        self._plane_taints: dict[str, list[Taint]] = {}
        #: per-node counts for spread and inter-pod affinity, rows as the table's
        self.index = PodIndex()
        self._index_ready = False
        #: nodes deleted while pods were still on them
        self._ghosts: dict[str, NodeInfo] = {}
        #: the images each node's machine declares (usage), when its object reports none
        self._declared_images: dict[str, dict[str, int]] = {}
        #: workload controllers by (namespace, kind, name)
        self.controllers: dict[tuple[str, str, str], Controller] = {}

    # -- nodes -------------------------------------------------------------------------
    def node_applied(self, node: Node, config: KubeletConfig) -> None:
        name = node.metadata.name
        self._objects[name] = node
        self._configs[name] = config
        capacity = reported_capacity(node.status.capacity, self._machines.get(name, {}), config)
        alloc = {k: q.nanos for k, q in allocatable(capacity, config).items()}
        info = self.nodes.get(name)
        if info is None:
            info = self._ghosts.pop(name, None)
            if info is None:
                info = NodeInfo(name, len(self._objects) - 1, dict(node.metadata.labels), alloc)
            info.labels, info.allocatable = dict(node.metadata.labels), alloc
            self.nodes[name] = info
            self._node_list = None
            self._table = None
        else:
            info.labels, info.allocatable = dict(node.metadata.labels), alloc
            info.version += 1
        reported = {normalized_image(n): i.size_bytes for i in node.status.images for n in i.names}
        info.images = reported or self._declared_images.get(name, {})
        info.unschedulable = node.spec.unschedulable
        self._spec_taints[name] = list(node.spec.taints)
        self._retaint(name)  # (marks the row stale)

    def machine_declared(self, name: str, capacity: Mapping[str, int], images: Mapping[str, int] | None = None) -> bool:
        """The machine under a node (closed loop) and the images its runtime holds; True when
        the node is known and refreshed."""
        self._machines[name] = dict(capacity)
        if images is not None:
            self._declared_images[name] = {normalized_image(k): v for k, v in images.items()}
        if name in self._objects:
            self.node_applied(self._objects[name], self._configs[name])
            return True
        return False

    def status_updated(self, name: str, allocatable: Mapping[str, str]) -> bool:
        """The kubelet published allocatable; True when it changed."""
        info = self.nodes.get(name)
        if info is None:
            return False
        alloc = {k: parse_quantity(v).nanos for k, v in allocatable.items()}
        if alloc == info.allocatable:
            return False
        info.allocatable = alloc
        info.version += 1
        self._stale.add(name)
        return True

    def node_deleted(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is not None:
            if info.pods:
                self._ghosts[name] = info
            self._node_list = None
            self._table = None

    def in_order(self) -> list[NodeInfo]:
        """Nodes in the order they first appeared."""
        if self._node_list is None:
            self._node_list = sorted(self.nodes.values(), key=lambda n: n.order)
        return self._node_list

    def table(self) -> NodeTable:
        """The nodes as columns, in the order of :meth:`in_order`, brought up to date (and
        the per-node counts with it)."""
        if self._table is None:
            self._table = NodeTable.build(self.in_order())
            self.index.reset(self.in_order())
            self._index_ready = True
            self._stale.clear()
        elif self._stale:
            for name in self._stale:
                row = self._table.index.get(name)
                if row is not None:
                    self._table.refresh(row, self.nodes[name])
            self._stale.clear()
        return self._table

    # -- taints ------------------------------------------------------------------------
    def _retaint(self, name: str) -> None:
        info = self.nodes.get(name)
        if info is not None:
            spec = self._spec_taints.get(name, [])
            info.taints = [*spec, *self._plane_taints.get(name, []), *self._user_taints.get(name, [])]
            self._stale.add(name)
            info.version += 1

    def plane_taint_added(self, name: str, taint: Taint) -> None:
        taints = self._plane_taints.setdefault(name, [])
        if taint not in taints:
            taints.append(taint)
        self._retaint(name)

    def plane_taint_removed(self, name: str, key: str, effect: str) -> None:
        self._plane_taints[name] = [t for t in self._plane_taints.get(name, []) if (t.key, t.effect) != (key, effect)]
        self._retaint(name)

    def tainted(self, name: str, taint: Taint) -> None:
        taints = [t for t in self._user_taints.get(name, []) if (t.key, t.effect) != (taint.key, taint.effect)]
        taints.append(taint)
        self._user_taints[name] = taints
        self._retaint(name)

    def untainted(self, name: str, key: str, effect: str) -> None:
        """``effect`` empty: every taint with that key, whoever put it on the Node object."""

        def keep(t: Taint) -> bool:
            return t.key != key or bool(effect and t.effect != effect)

        self._user_taints[name] = [t for t in self._user_taints.get(name, []) if keep(t)]
        self._spec_taints[name] = [t for t in self._spec_taints.get(name, []) if keep(t)]
        self._retaint(name)

    # -- pods ----------------------------------------------------------------------------
    def _row(self, node_name: str) -> int | None:
        if not self._index_ready or self._table is None:
            return None
        return self._table.index.get(node_name)

    def bind(self, info: PodInfo, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is None:
            return
        info.nominated = ""
        node.add(info)
        self.pod_node[info.key] = node_name
        self._stale.add(node_name)
        row = self._row(node_name)
        if row is not None:
            self.index.added(info, row)

    def mark_terminating(self, info: PodInfo) -> None:
        """A bound pod's deletion was asked for: it counts no more for topology spread."""
        if info.terminating:
            return
        info.terminating = True
        row = self._row(self.pod_node.get(info.key, ""))
        if row is not None:
            self.index.terminating(info, row)

    def started(self, key: str, now: int) -> None:
        """Its kubelet started it: preemption compares start times."""
        node = self.nodes.get(self.pod_node.get(key, ""))
        info = node.pods.get(key) if node is not None else None
        if node is not None and info is not None:
            info.start = now
            node.version += 1

    def bound(self, key: str) -> PodInfo | None:
        name = self.pod_node.get(key, "")
        node = self.nodes.get(name) or self._ghosts.get(name)
        return node.pods.get(key) if node is not None else None

    def gone(self, key: str) -> bool:
        """The pod no longer holds resources on its node; True if the cache had it there."""
        name = self.pod_node.pop(key, "")
        node = self.nodes.get(name)
        if node is None:
            ghost = self._ghosts.get(name)
            if ghost is not None and ghost.remove(key) is not None and not ghost.pods:
                del self._ghosts[name]
            return False
        p = node.remove(key)
        if p is None:
            return False
        self._stale.add(node.name)
        row = self._row(node.name)
        if row is not None:
            self.index.removed(p, row)
        return True

    # -- nominations -------------------------------------------------------------------
    def nominated_view(self) -> dict[str, list[PodInfo]]:
        """The pods nominated to each node (callers only read it: it is shared until the
        nominations change)."""
        view = self._nominated_view
        for name in self._nominations_changed:
            pods = self.nominated.get(name)
            if pods:
                view[name] = list(pods.values())
            else:
                view.pop(name, None)
        self._nominations_changed.clear()
        return view

    def unnominate(self, info: PodInfo) -> None:
        if info.nominated:
            self.nominated.get(info.nominated, {}).pop(info.key, None)
            self._nominations_changed.add(info.nominated)

    def nominate(self, info: PodInfo, node: str) -> list[str]:
        """Nominate ``info`` to ``node``, clearing the nominations of lower-priority pods
        there (``prepareCandidate``); the pods whose nomination was cleared."""
        self._nominations_changed.update((node, info.nominated) if info.nominated else (node,))
        if info.nominated and info.nominated != node:
            self.nominated.get(info.nominated, {}).pop(info.key, None)
        info.nominated = node
        cleared = []
        for other in sorted(self.nominated.get(node, {}).values(), key=lambda o: o.key):
            if other.priority < info.priority and other.key != info.key:
                other.nominated = ""
                self.nominated[node].pop(other.key)
                cleared.append(other.key)
        self.nominated.setdefault(node, {})[info.key] = info
        return cleared

    # -- disruption budgets --------------------------------------------------------------
    def pdb_applied(self, pdb: PodDisruptionBudget) -> None:
        self.pdbs[object_key(pdb.metadata.namespace, pdb.metadata.name)] = pdb

    def pdb_deleted(self, namespace: str, name: str) -> bool:
        """True if the budget was there."""
        return self.pdbs.pop(object_key(namespace, name), None) is not None

    def pdb_views(self, pending: Iterable[PodInfo] = ()) -> list[PDB]:
        """Each budget with ``status.disruptionsAllowed`` as the disruption controller
        computes it, over the pods that exist (``pending``: those not bound yet)."""
        if not self.pdbs:
            return []
        bound = (p for n in (*self.nodes.values(), *self._ghosts.values()) for p in n.pods.values())
        return pdb_views(self.pdbs.values(), [*bound, *pending], self.controllers)

    # -- workload controllers ------------------------------------------------------------
    def controller_applied(self, c: Controller) -> None:
        self.controllers[(c.namespace, c.kind, c.name)] = c

    def controller_deleted(self, namespace: str, kind: str, name: str) -> None:
        self.controllers.pop((namespace or "default", kind, name), None)

    def default_selector(self, info: PodInfo) -> Selector | None:
        """``helper.DefaultSelector`` without Services (not modelled): the selector of the
        ReplicationController, ReplicaSet or StatefulSet that controls the pod."""
        owner = info.sched.owner
        if owner is None or owner[0] not in ("ReplicationController", "ReplicaSet", "StatefulSet"):
            return None
        c = self.controllers.get((info.namespace, owner[0], owner[1]))
        return c.selector if c is not None else None
