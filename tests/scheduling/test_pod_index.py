"""The scheduler cache's per-node counts, moved by one as pods bind, start terminating and
leave (and made again when a node comes or goes), always equal counts made afresh from the
nodes' pods: what PodTopologySpread and InterPodAffinity read over every node at once."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import LabelSelector, Node, Pod
from ledgerlet_core.model.k8s.selection import NOTHING, label_selector
from ledgerlet_core.scheduling import index as index_module
from ledgerlet_core.scheduling.cache import SchedulerCache
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import pod_info
from ledgerlet_core.scheduling.terms import PodMatch

CONFIG = resolve_kubelet_config({})
APPS = ("web", "db", "cache")
NAMESPACES = ("default", "team")


def node(name: str) -> Node:
    doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": name[-1]}}}
    return convert({**doc, "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}, Node)


def pod(rng: random.Random, i: int) -> Pod:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(("a", "b"))
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if rng.random() < 0.3:
        term = {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": "zone"}
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        spec["affinity"] = {
            kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": term}]}
        }
    meta = {"name": f"p{i}", "namespace": rng.choice(NAMESPACES), "labels": labels}
    made = apply_defaults(convert({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, Pod))
    assert isinstance(made, Pod)
    return made


def matches() -> list[PodMatch]:
    out = []
    for ns in NAMESPACES:
        for app in APPS:
            out.append(PodMatch(frozenset({ns}), NOTHING, label_selector(LabelSelector(match_labels={"app": app}))))
        exists = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
        out.append(PodMatch(frozenset({ns}), NOTHING, label_selector(convert(exists, LabelSelector))))
    out.append(PodMatch(frozenset(NAMESPACES), NOTHING, label_selector(LabelSelector(match_labels={"tier": "a"}))))
    return out


def same(kept: PodIndex, fresh: PodIndex, wanted: list[PodMatch]) -> None:
    for m in wanted:
        assert np.array_equal(kept.every((m,)), fresh.every((m,))), m
        assert np.array_equal(kept.live(m), fresh.live(m)), m
    got = {k: v.tolist() for k, v in kept.terms().items() if v.any()}
    want = {k: v.tolist() for k, v in fresh.terms().items() if v.any()}
    assert got == want


@pytest.mark.parametrize("seed", range(12))
def test_counts_kept_by_one_equal_fresh_counts(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "KEPT", 4)  # so that counts are also dropped and made again
    rng = random.Random(seed)
    cache = SchedulerCache()
    names = [f"n{i}" for i in range(5)]
    for n in names:
        cache.node_applied(node(n), CONFIG)
    wanted = matches()
    bound: list[str] = []
    for step in range(250):
        cache.table()  # as a cycle does: the counts follow the table's rows
        roll = rng.random()
        if roll < 0.5 or not bound:
            info = pod_info(pod(rng, step))
            cache.bind(info, rng.choice(names))
            bound.append(info.key)
        elif roll < 0.7:
            key = bound.pop(rng.randrange(len(bound)))
            cache.gone(key)
        elif roll < 0.9:
            info = cache.bound(rng.choice(bound))
            if info is not None:
                cache.mark_terminating(info)
        elif roll < 0.95:
            extra = f"x{step}"
            cache.node_applied(node(extra), CONFIG)
            names.append(extra)
        elif len(names) > 2:
            gone = names.pop(rng.randrange(len(names)))
            cache.node_deleted(gone)
            bound = [k for k in bound if cache.pod_node.get(k) != gone]
        if step % 5 == 0:
            table = cache.table()
            fresh = PodIndex()
            fresh.reset(cache.in_order())
            assert list(table.names) == [n.name for n in cache.in_order()]
            same(cache.index, fresh, rng.sample(wanted, 5))
