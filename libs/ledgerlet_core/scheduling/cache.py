"""The scheduler's cache: nodes as it sees them (allocatable, labels, taints,
unschedulable, the pods bound or assumed there), nominations and PodDisruptionBudgets
(``pkg/scheduler/backend/cache``, ``nominator.go``).

A node's allocatable is its kubelet's (capacity minus reservations, as the kubelet
publishes it); its taints are those of its object, the control plane's (conditions,
lifecycle) and the operator's (``taint`` events), in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.node_status import allocatable, reported_capacity
from ledgerlet_core.model.k8s.objects import Node, PodDisruptionBudget, Taint
from ledgerlet_core.model.quantity import parse_quantity
from ledgerlet_core.scheduling.disruption import pdb_views
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.preemption import PDB
from ledgerlet_core.scheduling.vector import NodeTable


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.pod_node: dict[str, str] = {}
        #: pods nominated to run on a node, by node
        self.nominated: dict[str, dict[str, PodInfo]] = {}
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

    # -- nodes -------------------------------------------------------------------------
    def node_applied(self, node: Node, config: KubeletConfig) -> None:
        name = node.metadata.name
        self._objects[name] = node
        self._configs[name] = config
        capacity = reported_capacity(node.status.capacity, self._machines.get(name, {}), config)
        alloc = {k: q.nanos for k, q in allocatable(capacity, config).items()}
        info = self.nodes.get(name)
        if info is None:
            info = self.nodes[name] = NodeInfo(name, len(self._objects) - 1, dict(node.metadata.labels), alloc)
            self._node_list = None
            self._table = None
        else:
            info.labels, info.allocatable = dict(node.metadata.labels), alloc
            info.version += 1
        info.unschedulable = node.spec.unschedulable
        self._spec_taints[name] = list(node.spec.taints)
        self._retaint(name)  # (marks the row stale)

    def machine_declared(self, name: str, capacity: Mapping[str, int]) -> bool:
        """The machine under a node (closed loop); True when the node is known and refreshed."""
        self._machines[name] = dict(capacity)
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
        if self.nodes.pop(name, None) is not None:
            self._node_list = None
            self._table = None

    def in_order(self) -> list[NodeInfo]:
        """Nodes in the order they first appeared."""
        if self._node_list is None:
            self._node_list = sorted(self.nodes.values(), key=lambda n: n.order)
        return self._node_list

    def table(self) -> NodeTable:
        """The nodes as columns, in the order of :meth:`in_order`, brought up to date."""
        if self._table is None:
            self._table = NodeTable.build(self.in_order())
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
    def bind(self, info: PodInfo, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is None:
            return
        info.nominated = ""
        node.add(info)
        self.pod_node[info.key] = node_name
        self._stale.add(node_name)

    def started(self, key: str, now: int) -> None:
        """Its kubelet started it: preemption compares start times."""
        node = self.nodes.get(self.pod_node.get(key, ""))
        info = node.pods.get(key) if node is not None else None
        if node is not None and info is not None:
            info.start = now
            node.version += 1

    def bound(self, key: str) -> PodInfo | None:
        node = self.nodes.get(self.pod_node.get(key, ""))
        return node.pods.get(key) if node is not None else None

    def gone(self, key: str) -> bool:
        """The pod no longer holds resources on its node; True if the cache had it there."""
        node = self.nodes.get(self.pod_node.pop(key, ""))
        if node is None or node.remove(key) is None:
            return False
        self._stale.add(node.name)
        return True

    # -- nominations -------------------------------------------------------------------
    def nominated_view(self) -> dict[str, list[PodInfo]]:
        return {n: list(pods.values()) for n, pods in self.nominated.items() if pods}

    def unnominate(self, info: PodInfo) -> None:
        if info.nominated:
            self.nominated.get(info.nominated, {}).pop(info.key, None)

    def nominate(self, info: PodInfo, node: str) -> list[str]:
        """Nominate ``info`` to ``node``, clearing the nominations of lower-priority pods
        there (``prepareCandidate``); the pods whose nomination was cleared."""
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
        self.pdbs[f"{pdb.metadata.namespace or 'default'}/{pdb.metadata.name}"] = pdb

    def pdb_deleted(self, namespace: str, name: str) -> bool:
        """True if the budget was there."""
        return self.pdbs.pop(f"{namespace or 'default'}/{name}", None) is not None

    def pdb_views(self) -> list[PDB]:
        if not self.pdbs:
            return []
        return pdb_views(self.pdbs.values(), (p for n in self.nodes.values() for p in n.pods.values()))
