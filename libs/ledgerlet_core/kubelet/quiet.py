"""Which of a tick's observations make passes that decide nothing, told over whole columns.

A pass decides nothing and changes nothing but the observations it keeps when the
node's eviction state is calm and no threshold is met now (``manager._quiet`` and
``any_threshold_met``: the shortcut :func:`~ledgerlet_core.kubelet.eviction.manager.synchronize`
takes one node at a time). Here the state is looked at node by node (a few attribute
reads) and the thresholds over every member at once; a node whose state is not calm,
or that meets a threshold, makes its pass in full.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ledgerlet_core.contracts.internal import NodesObserved
from ledgerlet_core.kubelet.eviction.manager import node_thresholds
from ledgerlet_core.kubelet.eviction.signal_columns import SignalColumns, met_any
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.kubelet.node import KubeletNode
from ledgerlet_core.model.k8s.objects import Pod


@dataclass(slots=True)
class PassPlan:
    """Members (by index) whose pass is made in full, in member order, and those whose
    pass provably decides nothing."""

    full: list[int] = field(default_factory=list)
    quiet: list[int] = field(default_factory=list)


def calm(node: KubeletNode, now: int, limited: Callable[[KubeletNode], list[Pod]] | None) -> bool:
    """``manager._quiet``: nothing met, first observed or reported last pass, no condition
    within its transition period now, no evicted pod being waited for, no pod to check
    against its own local-storage limits (``limited``: those pods, None when no pod of
    the run sets any)."""
    state = node.state
    if state.thresholds_met or state.first_observed or state.conditions or node.evicted:
        return False
    period = node.config.eviction_pressure_transition_period
    if any(now - at < period for at in state.conditions_last_observed.values()):
        return False
    return not (limited is not None and node.config.spec.local_storage_capacity_isolation and limited(node))


def quiet_passes(
    batch: NodesObserved,
    nodes: Mapping[str, KubeletNode],
    now: int,
    limited: Callable[[KubeletNode], list[Pod]] | None,
) -> PassPlan:
    """Split a batch's members into passes made in full and quiet ones; members whose
    node is not one of ``nodes`` (another kubelet's) or is down make no pass at all."""
    plan = PassPlan()
    candidates: list[int] = []
    group: list[int] = []
    groups: dict[tuple[int, str], int] = {}
    thresholds: list[Sequence[Threshold]] = []
    for i, name in enumerate(batch.nodes):
        node = nodes.get(name)
        if node is None or node.off:
            continue
        if not calm(node, now, limited):
            plan.full.append(i)
            continue
        layout = batch.runtimes[batch.runtime[i]].layout
        key = (id(node.config), layout)
        g = groups.get(key)
        if g is None:
            g = groups[key] = len(thresholds)
            thresholds.append(node_thresholds(node.config, layout))
        candidates.append(i)
        group.append(g)
    if not candidates:
        return plan
    columns = SignalColumns.of(batch)
    rows = np.array(candidates, dtype=np.int64)
    groups_of = np.array(group, dtype=np.int64)
    met = np.zeros(len(rows), dtype=np.bool_)
    for g, ts in enumerate(thresholds):
        within = np.flatnonzero(groups_of == g)
        met[within] = met_any(ts, columns, rows[within])
    plan.quiet = [i for i, m in zip(candidates, met.tolist(), strict=True) if not m]
    if met.any():
        plan.full = sorted([*plan.full, *(i for i, m in zip(candidates, met.tolist(), strict=True) if m)])
    return plan
