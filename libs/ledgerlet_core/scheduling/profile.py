"""The default profile: its filter and score plugins, in upstream's order.

Upstream ``pkg/scheduler/apis/config/v1/default_plugins.go`` (``getDefaultPlugins``'s
MultiPoint list): NodeUnschedulable, NodeName, TaintToleration (score weight 3),
NodeAffinity (2), NodePorts, NodeResourcesFit (1), the volume plugins, PodTopologySpread
(2), InterPodAffinity (2), NodeResourcesBalancedAllocation (1), ImageLocality (1). The
filters run in that order, the first that fails giving the node's status; the volume
plugins and DynamicResources read what ledgerlet does not model (named at load when a pod
uses it). A decision lists its scores in :data:`RECORD_ORDER`.
"""

from __future__ import annotations

from typing import Final

from ledgerlet_core.scheduling.plugins import (
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)
from ledgerlet_core.scheduling.plugins.base import Filter, FilterPlugin, Score, ScorePlugin

FILTERS: Final[tuple[FilterPlugin, ...]] = (
    Filter(node_unschedulable.NAME, node_unschedulable.filter_one, node_unschedulable.filter_all),
    Filter(node_name.NAME, node_name.filter_one, node_name.filter_all),
    Filter(taint_toleration.NAME, taint_toleration.filter_one, taint_toleration.filter_all),
    Filter(node_affinity.NAME, node_affinity.filter_one, node_affinity.filter_all),
    Filter(node_ports.NAME, node_ports.filter_one, node_ports.filter_all),
    Filter(node_resources_fit.NAME, node_resources_fit.filter_one, node_resources_fit.filter_all),
    Filter(pod_topology_spread.NAME, pod_topology_spread.filter_one, pod_topology_spread.filter_all),
    Filter(inter_pod_affinity.NAME, inter_pod_affinity.filter_one, inter_pod_affinity.filter_all),
)

SCORES: Final[tuple[ScorePlugin, ...]] = (
    Score(taint_toleration.NAME, 3, taint_toleration.score_one, taint_toleration.score_all),
    Score(node_affinity.NAME, 2, node_affinity.score_one, node_affinity.score_all),
    Score(node_resources_fit.NAME, 1, node_resources_fit.score_one, node_resources_fit.score_all),
    Score(pod_topology_spread.NAME, 2, pod_topology_spread.score, pod_topology_spread.score_all),
    Score(inter_pod_affinity.NAME, 2, inter_pod_affinity.score_one, inter_pod_affinity.score_all),
    Score(
        node_resources_balanced_allocation.NAME,
        1,
        node_resources_balanced_allocation.score_one,
        node_resources_balanced_allocation.score_all,
    ),
    Score(image_locality.NAME, 1, image_locality.score_one, image_locality.score_all),
)

WEIGHTS: Final = {p.name: p.weight for p in SCORES}
#: the order plugins appear in a decision's scores (the decision logs' order)
RECORD_ORDER: Final[tuple[str, ...]] = (
    node_resources_fit.NAME,
    node_resources_balanced_allocation.NAME,
    taint_toleration.NAME,
    node_affinity.NAME,
    pod_topology_spread.NAME,
    inter_pod_affinity.NAME,
    image_locality.NAME,
)
