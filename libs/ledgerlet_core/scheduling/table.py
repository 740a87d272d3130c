"""The scheduler cache's nodes as columns, for the filters and scores over every node at once.

The node state the plugins read (allocatable and requested per resource, pod counts,
cordons, taint, label, port and image sets) is kept in columns updated as pods bind and
leave. Integers stay integers: cpu in nanocores, memory and storage in bytes (a table holding
a fractional byte is refused, and the cycle runs node by node), so the all-nodes forms of
the plugins (:mod:`.plugins`) do the same integer arithmetic as their per-node forms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.selection import RequiredNodeAffinity
from ledgerlet_core.scheduling.domains import Domains, domains_of
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.terms import HostPort

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.vector import NominatedMemo

NANO: Final = 10**9
#: resources held in bytes (their nanos divided by 1e9); every other one in nanos
BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage"})
Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def unit(resource: str, nanos: int) -> int | None:
    """The table's integer for a quantity; None when it would not be exact."""
    if resource in BYTE_RESOURCES:
        return nanos // NANO if nanos % NANO == 0 else None
    return nanos


def _held(values: list[int | None], *, bound: bool = True) -> list[int] | None:
    """``values`` when every one is held exactly (and, ``bound``, below 2**62 in size)."""
    out = [v for v in values if v is not None and (not bound or abs(v) < 2**62)]
    return out if len(out) == len(values) else None


@dataclass(slots=True)
class NodeTable:
    """Columns of the scheduler cache's nodes, in node order (rows follow ``names``)."""

    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    #: resource -> allocatable / requested per node (table units)
    alloc: dict[str, Int64s] = field(default_factory=dict)
    requested: dict[str, Int64s] = field(default_factory=dict)
    nonzero_cpu: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    nonzero_memory: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    pods: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    allowed_pods: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    unschedulable: Bools = field(default_factory=lambda: np.zeros(0, np.bool_))
    #: per node, an index into ``taint_sets`` / ``label_sets`` / ``port_sets`` / ``image_sets``
    taint_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    label_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    port_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    image_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    taint_sets: list[tuple[Taint, ...]] = field(default_factory=list)
    label_sets: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    port_sets: list[dict[HostPort, int]] = field(default_factory=list)
    image_sets: list[dict[str, int]] = field(default_factory=list)
    #: False when a value cannot be held exactly: the cycle then runs node by node
    exact: bool = True
    _taint_ids: dict[tuple[tuple[str, str, str], ...], int] = field(default_factory=dict)
    _label_ids: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)
    _port_ids: dict[tuple[tuple[HostPort, int], ...], int] = field(default_factory=dict)
    _image_ids: dict[tuple[tuple[str, int], ...], int] = field(default_factory=dict)
    #: per topology key, each row's domain; and how many nodes hold each image (made when
    #: first asked for, dropped when a row's labels or images change)
    _domains: dict[str, Domains] = field(default_factory=dict)
    affinity_masks: dict[RequiredNodeAffinity, Bools] = field(default_factory=dict)
    _holders: dict[str, int] | None = None
    _names_array: npt.NDArray[np.str_] | None = None
    _labelled: Bools | None = None
    #: per node, the load of its nominated pods as :func:`.vector.nominated_load` last found it
    nominated_memo: dict[str, NominatedMemo] = field(default_factory=dict)
    #: score columns that depend on a row alone (:func:`row_scores`), by plugin and pod shape
    score_columns: dict[tuple[object, ...], ScoreColumn] = field(default_factory=dict)

    @classmethod
    def build(cls, nodes: Sequence[NodeInfo]) -> NodeTable:
        t = cls()
        n = len(nodes)
        t.names = [node.name for node in nodes]
        t.index = {name: i for i, name in enumerate(t.names)}
        resources = sorted({k for node in nodes for k in (*node.allocatable, *node.requested)} - {"pods"})
        t.alloc = {r: np.zeros(n, np.int64) for r in resources}
        t.requested = {r: np.zeros(n, np.int64) for r in resources}
        t.nonzero_cpu = np.zeros(n, np.int64)
        t.nonzero_memory = np.zeros(n, np.int64)
        t.pods = np.zeros(n, np.int64)
        t.allowed_pods = np.zeros(n, np.int64)
        t.unschedulable = np.zeros(n, np.bool_)
        t.taint_set = np.zeros(n, np.int64)
        t.label_set = np.full(n, -1, np.int64)
        t.port_set = np.zeros(n, np.int64)
        t.image_set = np.full(n, -1, np.int64)
        if not t._fill(nodes, resources):  # a value not held exactly: row by row, as refresh has it
            for i, node in enumerate(nodes):
                t.refresh(i, node)
        return t

    def _fill(self, nodes: Sequence[NodeInfo], resources: list[str]) -> bool:
        """Every row at once, as :meth:`refresh` row by row would leave it (the first pod of a
        5,000-node cluster waited for 5,000 refreshes); False (nothing changed) when some
        value cannot be held exactly."""
        columns: dict[str, tuple[list[int], list[int]]] = {}
        for r in resources:
            a = _held([unit(r, node.allocatable.get(r, 0)) for node in nodes])
            q = _held([unit(r, node.requested.get(r, 0)) for node in nodes])
            if a is None or q is None:
                return False
            columns[r] = (a, q)
        memory = _held([unit("memory", node.nonzero_memory) for node in nodes], bound=False)
        if memory is None:
            return False
        for r, (a, q) in columns.items():
            self.alloc[r] = np.array(a, np.int64)
            self.requested[r] = np.array(q, np.int64)
        self.nonzero_cpu = np.array([node.nonzero_cpu for node in nodes], np.int64)
        self.nonzero_memory = np.array(memory, np.int64)
        self.pods = np.array([len(node.pods) for node in nodes], np.int64)
        self.allowed_pods = np.array([node.allowed_pods for node in nodes], np.int64)
        self.unschedulable = np.array([node.unschedulable for node in nodes], np.bool_)
        self.taint_set = np.array([self._intern_taints(tuple(node.taints)) for node in nodes], np.int64)
        self.label_set = np.array([self._intern_labels(tuple(sorted(node.labels.items()))) for node in nodes], np.int64)
        self.port_set = np.array([self._intern_ports(node.ports) for node in nodes], np.int64)
        self.image_set = np.array([self._intern_images(node.images) for node in nodes], np.int64)
        return True

    def refresh(self, i: int, node: NodeInfo) -> None:
        """Row ``i`` from the node as the cache holds it now."""
        for column in self.score_columns.values():
            column.fresh[i] = False
        for r in set(node.allocatable) | set(node.requested):
            if r == "pods":
                continue
            if r not in self.alloc:  # a resource no node had: a new column
                self.alloc[r] = np.zeros(len(self.names), np.int64)
                self.requested[r] = np.zeros(len(self.names), np.int64)
        for r in self.alloc:
            a = unit(r, node.allocatable.get(r, 0))
            q = unit(r, node.requested.get(r, 0))
            if a is None or q is None or max(abs(a), abs(q)) >= 2**62:
                self.exact = False
                return
            self.alloc[r][i] = a
            self.requested[r][i] = q
        memory = unit("memory", node.nonzero_memory)
        if memory is None:
            self.exact = False
            return
        self.nonzero_cpu[i] = node.nonzero_cpu
        self.nonzero_memory[i] = memory
        self.pods[i] = len(node.pods)
        self.allowed_pods[i] = node.allowed_pods
        self.unschedulable[i] = node.unschedulable
        self.taint_set[i] = self._intern_taints(tuple(node.taints))
        labels = self._intern_labels(tuple(sorted(node.labels.items())))
        if labels != self.label_set[i]:
            self.label_set[i] = labels
            self._domains.clear()
            self.affinity_masks.clear()
            self._labelled = None
        self.port_set[i] = self._intern_ports(node.ports)
        images = self._intern_images(node.images)
        if images != self.image_set[i]:
            self.image_set[i] = images
            self._holders = None

    def _intern_taints(self, taints: tuple[Taint, ...]) -> int:
        key = tuple((t.key, t.value, t.effect) for t in taints)
        found = self._taint_ids.get(key)
        if found is None:
            found = self._taint_ids[key] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return found

    def _intern_labels(self, labels: tuple[tuple[str, str], ...]) -> int:
        found = self._label_ids.get(labels)
        if found is None:
            found = self._label_ids[labels] = len(self.label_sets)
            self.label_sets.append(labels)
        return found

    def _intern_ports(self, ports: Mapping[HostPort, int]) -> int:
        key = tuple(sorted(ports.items()))
        found = self._port_ids.get(key)
        if found is None:
            found = self._port_ids[key] = len(self.port_sets)
            self.port_sets.append(dict(ports))
        return found

    def _intern_images(self, images: Mapping[str, int]) -> int:
        key = tuple(sorted(images.items()))
        found = self._image_ids.get(key)
        if found is None:
            found = self._image_ids[key] = len(self.image_sets)
            self.image_sets.append(dict(images))
        return found

    def domains(self, key: str) -> Domains:
        """Each row's domain for the topology ``key`` (-1 where a node lacks the label)."""
        found = self._domains.get(key)
        if found is None:
            found = domains_of((dict(labels) for labels in self.label_sets), key)
            found.ids = found.ids[self.label_set] if found.ids.size else np.full(len(self.names), -1, np.int64)
            self._domains[key] = found
        return found

    def names_array(self) -> npt.NDArray[np.str_]:
        if self._names_array is None or self._names_array.size != len(self.names):
            self._names_array = np.array(self.names)
        return self._names_array

    @property
    def labelled(self) -> Bools:
        """Rows whose node has some label (kept until a row's labels change)."""
        if self._labelled is None:
            has = np.array([bool(labels) for labels in self.label_sets], np.bool_)
            self._labelled = has[self.label_set]
        return self._labelled

    def holders(self) -> dict[str, int]:
        """How many nodes hold each image."""
        if self._holders is None:
            per_set = np.bincount(self.image_set, minlength=len(self.image_sets))
            out: dict[str, int] = {}
            for set_id, count in enumerate(per_set.tolist()):
                if count:
                    for name in self.image_sets[set_id]:
                        out[name] = out.get(name, 0) + count
            self._holders = out
        return self._holders


def supports(table: NodeTable, pod: PodInfo) -> bool:
    """Whether the vector cycle is exact for this pod on this table."""
    if not table.exact:
        return False
    for r, nanos in pod.requests.items():
        if r == "pods" or not nanos:
            continue
        if r not in table.alloc or unit(r, nanos) is None:
            return False
    return unit("memory", pod.nonzero_memory) is not None


@dataclass(slots=True)
class ScoreColumn:
    """One plugin's score of every row for one pod shape, and which rows still hold it
    (:meth:`NodeTable.refresh` marks a row whose node changed)."""

    values: Int64s
    fresh: Bools


#: score columns kept per table at most (pod shapes x plugins)
_COLUMNS_KEPT: Final = 64
#: at most this many stale rows are scored node by node (each numpy call costs as much)
_BY_HAND_ROWS: Final = 16


def row_scores(
    table: NodeTable,
    key: tuple[object, ...],
    rows: Int64s,
    vector: Callable[[Int64s], Int64s],
    one: Callable[[int], int],
) -> Int64s:
    """A score that depends on the pod's shape (``key``) and the row alone, for ``rows``:
    kept per row until the row changes. A few stale rows are scored node by node (the
    reference the vector form equals), more at once by ``vector``. Between two cycles of a
    workload one node changes: every other row's score is the one kept."""
    column = table.score_columns.get(key)
    if column is None:
        if len(table.score_columns) >= _COLUMNS_KEPT:
            table.score_columns.clear()
        n = len(table.names)
        column = table.score_columns[key] = ScoreColumn(np.zeros(n, np.int64), np.zeros(n, np.bool_))
    stale = rows[~column.fresh[rows]]
    if stale.size:
        if stale.size <= _BY_HAND_ROWS:
            for row in stale.tolist():
                column.values[row] = one(row)
        else:
            column.values[stale] = vector(stale)
        column.fresh[stale] = True
    return column.values[rows]
