"""What a filter or score plugin is: a per-node form, the reference, and an optional
all-nodes form over the node table (:mod:`..table`) that must give the same result node by
node (a property test per plugin holds each to it).

Upstream's plugins run node by node (``framework.FilterPlugin`` / ``ScorePlugin``); the
all-nodes forms are ledgerlet's, so that one pod is checked against every node at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

import numpy as np

from ledgerlet_core.scheduling.status import NodeStatus, interned
from ledgerlet_core.scheduling.table import Bools, Int64s, NodeTable

if TYPE_CHECKING:
    from ledgerlet_core.model.k8s.selection import Selector
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.index import PodIndex
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

MAX_NODE_SCORE: Final = 100


@dataclass(slots=True)
class NodeMasks:
    """What a pod's PreFilter and filters read of every node that does not depend on
    pods: its required node affinity, its taints (for topology spread's policy)."""

    affinity_ok: Bools
    taints_ok: Bools
    #: per taint set, the TaintToleration reason (None: tolerated)
    taint_reasons: list[str | None]


@dataclass(slots=True)
class AllNodes:
    """What an all-nodes filter reads besides the pod: the table, the pod's masks, its
    PreFilter state, and the nominated pods that count on each row (their number and
    requests, in table units)."""

    table: NodeTable
    masks: NodeMasks
    state: CycleState | None = None
    extra_pods: Int64s | int = 0
    extra_requests: dict[str, Int64s] = field(default_factory=dict)


@dataclass(slots=True)
class ScoreNodes:
    """What an all-nodes score reads besides the pod: the feasible ``rows`` (processing
    order), the cache's nodes (every row), its per-node pod counts (None: the scores that
    read other pods are not run) and the controller's selector for default spreading."""

    table: NodeTable
    rows: Int64s
    nodes: Sequence[NodeInfo]
    masks: NodeMasks
    index: PodIndex | None = None
    default_selector: Selector | None = None


# -- an all-nodes filter's result ----------------------------------------------------------------
class Verdict(Protocol):
    """The rows an all-nodes filter fails, and each one's status, built when asked for."""

    @property
    def failed(self) -> Bools: ...

    def kinds(self, rows: Int64s) -> Int64s:
        """Per failing row given, a number (>= 0) the same for rows failing alike."""
        ...

    def status(self, row: int) -> NodeStatus: ...


@dataclass(slots=True)
class Uniform:
    """Every failing row has the same status."""

    failed: Bools
    one: NodeStatus

    def kinds(self, rows: Int64s) -> Int64s:
        return np.zeros(rows.size, np.int64)

    def status(self, row: int) -> NodeStatus:
        return self.one


@dataclass(slots=True)
class PerSet:
    """A failing row's status is its set's (a taint list, a port set: ``sets`` per row)."""

    failed: Bools
    sets: Int64s
    statuses: Sequence[NodeStatus | None]

    def kinds(self, rows: Int64s) -> Int64s:
        return self.sets[rows]

    def status(self, row: int) -> NodeStatus:
        found = self.statuses[int(self.sets[row])]
        assert found is not None
        return found


@dataclass(slots=True)
class FirstOf:
    """A failing row's status is that of the first part whose mask holds it."""

    parts: Sequence[tuple[Bools, NodeStatus]]
    failed: Bools = field(init=False)

    def __post_init__(self) -> None:
        self.failed = _union([mask for mask, _ in self.parts])

    def kinds(self, rows: Int64s) -> Int64s:
        kind = np.zeros(rows.size, np.int64)
        for k in range(len(self.parts) - 1, -1, -1):
            kind = np.where(self.parts[k][0][rows], k, kind)
        return kind

    def status(self, row: int) -> NodeStatus:
        return next(status for mask, status in self.parts if mask[row])


@dataclass(slots=True)
class AllOf:
    """A failing row's status holds the reason of every part whose mask holds it, in order."""

    code: str
    plugin: str
    parts: Sequence[tuple[str, Bools]]
    failed: Bools = field(init=False)

    def __post_init__(self) -> None:
        self.failed = _union([mask for _, mask in self.parts])

    def kinds(self, rows: Int64s) -> Int64s:
        bits = np.zeros(rows.size, np.int64)
        for bit, (_, mask) in enumerate(self.parts):
            bits |= mask[rows].astype(np.int64) << bit
        return bits

    def status(self, row: int) -> NodeStatus:
        return interned(self.code, tuple(why for why, mask in self.parts if mask[row]), self.plugin)


def _union(masks: Sequence[Bools]) -> Bools:
    """The rows in any mask (a new array unless there is one mask: masks are not changed)."""
    out = masks[0]
    for mask in masks[1:]:
        out = out | mask
    return out


# -- the plugins -------------------------------------------------------------------------------
#: the per-node filter: the pod on one node (``extra``: nominated pods counted for their
#: resources alone), FITS or the node's status
NodeFilter = Callable[["PodInfo", "NodeInfo", "CycleState | None", "Sequence[PodInfo]"], NodeStatus]
#: the all-nodes filter; None: it fails no node
NodesFilter = Callable[["PodInfo", AllNodes], "Verdict | None"]
#: the per-node score of the feasible nodes, normalized (over every node in the cache, for
#: the plugins that count other nodes); None: PreScore skips the pod
NodeScorer = Callable[["PodInfo", "Sequence[NodeInfo]", "Sequence[NodeInfo]", "Selector | None"], "list[int] | None"]
#: the all-nodes score of the feasible rows
NodesScorer = Callable[["PodInfo", ScoreNodes], "Int64s | None"]


class FilterPlugin(Protocol):
    """A Filter plugin: its per-node form and, when it has one, its all-nodes form."""

    @property
    def name(self) -> str: ...

    @property
    def filter(self) -> NodeFilter: ...

    @property
    def filter_all(self) -> NodesFilter | None: ...


class ScorePlugin(Protocol):
    """A Score plugin (with its PreScore and NormalizeScore): its weight in the default
    profile, its per-node form and, when it has one, its all-nodes form."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...

    @property
    def score(self) -> NodeScorer: ...

    @property
    def score_all(self) -> NodesScorer | None: ...


@dataclass(frozen=True, slots=True)
class Filter:
    """A :class:`FilterPlugin` made of a plugin module's functions."""

    name: str
    filter: NodeFilter
    filter_all: NodesFilter | None = None


@dataclass(frozen=True, slots=True)
class Score:
    """A :class:`ScorePlugin` made of a plugin module's functions."""

    name: str
    weight: int
    score: NodeScorer
    score_all: NodesScorer | None = None
