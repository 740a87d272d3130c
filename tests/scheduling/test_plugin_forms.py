"""Each plugin of the default profile, over its registry: on random clusters and pods, its
all-nodes form gives every node what its per-node form gives it (status, reasons and plugin
for a filter; the normalized score for a score), and the chain without the all-nodes forms
(every plugin node by node) filters and scores as the chain with them."""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import pytest

from ledgerlet_core.scheduling.cyclestate import prefilter, vector_prefilter
from ledgerlet_core.scheduling.filters import counted_nominated
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.plugins.base import AllNodes, FilterPlugin, ScoreNodes, ScorePlugin
from ledgerlet_core.scheduling.profile import FILTERS, SCORES
from ledgerlet_core.scheduling.status import FITS, NodeStatus
from ledgerlet_core.scheduling.table import NodeTable, supports
from ledgerlet_core.scheduling.vector import filter_all, node_masks, nominated_load, score_all
from tests.scheduling.test_vector_cycle import default_selector, make_cluster, make_pod
from tests.support.tiers import seeds

SEEDS = seeds(100, quick=20)  # (every one in make test)


def _case(seed: int) -> tuple[random.Random, list[NodeInfo], dict[str, list[PodInfo]], PodInfo, NodeTable, PodIndex]:
    """A cluster and a pod the table holds exactly (drawn again when the pod requests a
    resource no node has: the cycle runs node by node for it), and a generator for what the
    test draws next. Every plugin reads the same case (made once: the forms do not change it)."""
    nodes, nominated, pod, table, index = _cluster(seed)
    return random.Random(-seed - 1), nodes, nominated, pod, table, index


@functools.cache
def _cluster(seed: int) -> tuple[list[NodeInfo], dict[str, list[PodInfo]], PodInfo, NodeTable, PodIndex]:
    for attempt in range(100):
        rng = random.Random(seed * 100 + attempt)
        nodes, nominated, _ = make_cluster(rng)
        pod = pod_info(make_pod(rng, "pending", nodes=len(nodes)))
        table = NodeTable.build(nodes)
        if supports(table, pod):
            index = PodIndex()
            index.reset(nodes)
            return nodes, nominated, pod, table, index
    raise AssertionError("no case the table holds")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("plugin", FILTERS, ids=lambda p: p.name)
def test_a_filters_all_nodes_form_is_its_per_node_form(plugin: FilterPlugin, seed: int) -> None:
    """Node by node from the PreFilter state built node by node, at once from the one built
    from the cache's counts; nominated pods counted on their node (rows whose nominated pods
    the chain filters node by node are left out)."""
    assert plugin.filter_all is not None
    _, nodes, nominated, pod, table, index = _case(seed)
    masks = node_masks(pod, table)
    state = vector_prefilter(pod, table, index, masks.affinity_ok, masks.taints_ok)
    extra_pods, extra_requests, by_hand = nominated_load(pod, table, nodes, nominated, None)
    verdict = plugin.filter_all(pod, AllNodes(table, masks, state, extra_pods, extra_requests))
    reference = prefilter(pod, nodes)
    kinds: dict[int, NodeStatus] = {}
    failing = [i for i in range(len(nodes)) if verdict is not None and verdict.failed[i]]
    if verdict is not None and failing:
        for i, kind in zip(failing, verdict.kinds(np.array(failing, np.int64)).tolist(), strict=True):
            assert kinds.setdefault(kind, verdict.status(i)) is verdict.status(i)  # alike: one status
    for i, node in enumerate(nodes):
        if i in by_hand:
            continue
        extra = counted_nominated(pod, node, nominated.get(node.name, ()))
        want = plugin.filter(pod, node, reference, extra)
        got = FITS if verdict is None or not verdict.failed[i] else verdict.status(i)
        assert got == want, node.name


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("plugin", SCORES, ids=lambda p: p.name)
def test_a_scores_all_nodes_form_is_its_per_node_form(plugin: ScorePlugin, seed: int) -> None:
    """Some nodes feasible, in a random order; every node in the cache counted."""
    assert plugin.score_all is not None
    rng, nodes, _, pod, table, index = _case(seed)
    rows = rng.sample(range(len(nodes)), rng.randint(1, len(nodes)))
    selector = default_selector(rng)
    want = plugin.score(pod, [nodes[r] for r in rows], nodes, selector)
    masks = node_masks(pod, table)
    got = plugin.score_all(pod, ScoreNodes(table, np.array(rows, np.int64), nodes, masks, index, selector))
    assert (None if got is None else got.tolist()) == want


@pytest.mark.parametrize("seed", SEEDS)
def test_the_chain_without_all_nodes_forms_decides_as_with_them(seed: int) -> None:
    """A plugin without its all-nodes form runs node by node inside the all-nodes chain."""
    rng, nodes, nominated, pod, table, index = _case(seed)
    masks = node_masks(pod, table)
    state = vector_prefilter(pod, table, index, masks.affinity_ok, masks.taints_ok)
    dropped = rng.sample(range(len(FILTERS)), rng.randint(1, len(FILTERS)))
    plugins = [(p.filter, None if k in dropped else p.filter_all) for k, p in enumerate(FILTERS)]
    with_them = filter_all(pod, table, nodes, nominated, state, masks)
    without = filter_all(pod, table, nodes, nominated, state, masks, plugins)
    assert without.fits.tolist() == with_them.fits.tolist()
    assert [without.status(i) for i in range(len(nodes))] == [with_them.status(i) for i in range(len(nodes))]
    failing = np.flatnonzero(~with_them.fits)
    grouped, grouped_without = with_them.grouped(failing, table.names), without.grouped(failing, table.names)
    assert [(s, names) for s, names in grouped.groups] == [(s, names) for s, names in grouped_without.groups]

    rows = np.array(rng.sample(range(len(nodes)), rng.randint(1, len(nodes))), np.int64)
    selector = default_selector(rng)
    scorers = [(p.name, p.score, None) for p in SCORES]
    kw: dict[str, Any] = {"index": index, "default_selector": selector, "masks": masks}
    scored = score_all(pod, table, rows, nodes, len(nodes), **kw)
    by_node = score_all(pod, table, rows, nodes, len(nodes), plugins=scorers, **kw)
    assert by_node.totals.tolist() == scored.totals.tolist()
    assert by_node.best == scored.best


def test_the_profile_runs_upstreams_default_plugins_in_their_order() -> None:
    """``default_plugins.go``'s MultiPoint list, less the plugins ledgerlet does not model."""
    assert [p.name for p in FILTERS] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert [(p.name, p.weight) for p in SCORES] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
