"""Small builders for the plugin tests: nodes and pods as upstream's ``st.MakeNode`` /
``st.MakePod`` make them, and each plugin run both ways (node by node, and over every node
at once from the cache's per-node counts), which must agree."""

from __future__ import annotations

from typing import Any

import numpy as np

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod, Taint
from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling import scores
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.plugins import inter_pod_affinity, pod_topology_spread
from ledgerlet_core.scheduling.table import NodeTable
from ledgerlet_core.scheduling.vector import node_masks, score_all

GI = 2**30 * 10**9
SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"


def node(name: str, labels: dict[str, str] | None = None, *, taints: list[Taint] | None = None) -> NodeInfo:
    n = NodeInfo(name, 0, dict(labels or {}), {"cpu": 4 * 10**9, "memory": 32 * GI, "pods": 110 * 10**9})
    n.taints = list(taints or [])
    return n


def pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    *,
    namespace: str = "default",
    node_name: str = "",
    **spec: Any,
) -> PodInfo:
    body = {"containers": [{"name": "c", "image": "pause"}], **spec}
    if node_name:
        body["nodeName"] = node_name
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": body,
    }
    made = apply_defaults(convert(doc, Pod))
    assert isinstance(made, Pod)
    return pod_info(made)


def spread(max_skew: int, key: str, when: str, selector: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    """``st.MakePod().SpreadConstraint``."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


def exists(key: str) -> dict[str, Any]:
    """``st.MakeLabelSelector().Exists(key)``."""
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def place(nodes: list[NodeInfo], pods: list[PodInfo]) -> list[NodeInfo]:
    """Existing pods onto their nodes (pods of a node not in the list are left out, as an
    upstream snapshot leaves them)."""
    for i, n in enumerate(nodes):
        n.order = i
    by_name = {n.name: n for n in nodes}
    for p in pods:
        target = by_name.get(p.sched.node_name)
        if target is not None:
            target.add(p)
    return nodes


def vector_parts(nodes: list[NodeInfo]) -> tuple[NodeTable, PodIndex]:
    index = PodIndex()
    index.reset(nodes)
    return NodeTable.build(nodes), index


def _code(failed: tuple[bool, str] | None) -> str:
    if failed is None:
        return SUCCESS
    return UNRESOLVABLE if failed[0] else UNSCHEDULABLE


def spread_filter_codes(incoming: PodInfo, nodes: list[NodeInfo]) -> dict[str, str]:
    """PodTopologySpread's PreFilter then Filter on each node, both ways (they must agree)."""
    state = pod_topology_spread.filter_state(incoming, nodes)
    assert state is not None
    by_node = {n.name: _code(pod_topology_spread.filter_node(incoming, state, n)) for n in nodes}
    table, index = vector_parts(nodes)
    masks = node_masks(incoming, table)
    vstate = pod_topology_spread.vector_filter_state(incoming, table, index, masks.affinity_ok, masks.taints_ok)
    assert vstate is not None
    missing, skewed = pod_topology_spread.vector_filter(incoming, vstate, table)
    vector = {
        name: UNRESOLVABLE if missing[i] else UNSCHEDULABLE if skewed[i] else SUCCESS
        for i, name in enumerate(table.names)
    }
    assert vector == by_node
    return by_node


def affinity_filter_codes(incoming: PodInfo, nodes: list[NodeInfo]) -> dict[str, tuple[str, str]]:
    """InterPodAffinity's PreFilter then Filter on each node, both ways: (code, reason)."""
    state = inter_pod_affinity.filter_state(incoming, nodes)
    if state is None:  # Skip: every node passes
        return {n.name: (SUCCESS, "") for n in nodes}
    by_node = {}
    for n in nodes:
        failed = inter_pod_affinity.filter_node(state, n)
        by_node[n.name] = (_code(failed), failed[1] if failed else "")
    table, index = vector_parts(nodes)
    vstate = inter_pod_affinity.vector_filter_state(incoming, table, index)
    assert vstate is not None
    aff, anti, existing = inter_pod_affinity.vector_filter(vstate, table)
    vector = {}
    for i, name in enumerate(table.names):
        if aff[i]:
            vector[name] = (UNRESOLVABLE, inter_pod_affinity.ERR_AFFINITY)
        elif anti[i]:
            vector[name] = (UNSCHEDULABLE, inter_pod_affinity.ERR_ANTI)
        elif existing[i]:
            vector[name] = (UNSCHEDULABLE, inter_pod_affinity.ERR_EXISTING_ANTI)
        else:
            vector[name] = (SUCCESS, "")
    assert vector == by_node
    return by_node


def spread_scores(
    incoming: PodInfo, feasible: list[NodeInfo], nodes: list[NodeInfo], default: Selector | None = None
) -> list[int] | None:
    """PodTopologySpread's PreScore, Score and NormalizeScore, both ways."""
    by_node = pod_topology_spread.score(incoming, feasible, nodes, default)
    table, index = vector_parts(nodes)
    masks = node_masks(incoming, table)
    rows = np.array([table.index[n.name] for n in feasible], np.int64)
    vector = pod_topology_spread.vector_score(incoming, table, index, rows, default, masks.affinity_ok, masks.taints_ok)
    assert (vector.tolist() if vector is not None else None) == by_node
    return by_node


def affinity_scores(incoming: PodInfo, nodes: list[NodeInfo]) -> list[int] | None:
    """InterPodAffinity's PreScore, Score and NormalizeScore over every node, both ways."""
    by_node = inter_pod_affinity.score(incoming, nodes, nodes)
    table, index = vector_parts(nodes)
    rows = np.arange(len(nodes), dtype=np.int64)
    vector = inter_pod_affinity.vector_score(incoming, table, index, rows)
    assert (vector.tolist() if vector is not None else None) == by_node
    return by_node


def profile_scores(incoming: PodInfo, nodes: list[NodeInfo], plugin: str) -> list[int] | None:
    """One plugin's normalized scores in the whole profile's Score phase, every node
    feasible, both ways (node by node, and :func:`vector.score_all`); None: not scored."""
    ref = scores.score_nodes(incoming, nodes, nodes)
    by_node = [s.plugins[plugin] for s in ref] if plugin in ref[0].plugins else None
    table, index = vector_parts(nodes)
    rows = np.arange(len(nodes), dtype=np.int64)
    scored = score_all(incoming, table, rows, nodes, top=len(nodes), index=index)
    got = {s.node: s.plugins.get(plugin) for s in scored.best}
    vector = [got[n.name] for n in nodes]
    assert (vector if None not in vector else None) == by_node
    assert [s.total for s in ref] == scored.totals.tolist()
    return by_node
