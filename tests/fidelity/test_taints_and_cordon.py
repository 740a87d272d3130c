"""Taints on Node objects, cordoned nodes and the unschedulable toleration, as upstream
(``node_unschedulable_test.go``, ``taint_eviction_test.go``, ``node_lifecycle_controller``)."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.controllers.node_loss_controllers import NodeLossControllers
from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Node, Taint
from ledgerlet_core.scheduling.filters import run_filters
from ledgerlet_core.scheduling.info import NodeInfo, pod_info
from ledgerlet_core.scheduling.plugins.node_unschedulable import ERR_REASON as NODE_UNSCHEDULABLE
from ledgerlet_core.scheduling.scheduler import KubeScheduler
from tests.core.helpers import pod
from tests.support.emit import asked, decided, emitter

S = SECOND
NO_EXECUTE = Taint(key="dedicated", value="infra", effect="NoExecute")


# -- NodeUnschedulable: tolerating the taint is the normal rule (node_unschedulable_test.go) --
@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        (None, False),
        ({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, True),  # Equal, value "" == ""
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}, True),  # any effect
        ({"operator": "Exists"}, True),  # empty key: every taint
        (
            {"key": "node.kubernetes.io/unschedulable", "value": "x", "effect": "NoSchedule"},
            False,
        ),  # Equal, other value
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_a_cordoned_node_fits_only_pods_that_tolerate_its_taint(toleration: dict[str, Any] | None, fits: bool) -> None:
    node = NodeInfo("n1", 0, {}, {"cpu": 4 * 10**9, "memory": 8 * 2**30 * 10**9, "pods": 110 * 10**9})
    node.unschedulable = True
    p = pod("p", extra_spec={"tolerations": [toleration] if toleration else []})
    status = run_filters(pod_info(p), node)
    assert status.fits is fits
    if not fits:
        assert status.reasons == (NODE_UNSCHEDULABLE,) and status.plugin == "NodeUnschedulable"


# -- cordon: the node lifecycle controller's unschedulable taint ------------------------------
def test_cordoning_adds_the_unschedulable_taint_and_uncordoning_removes_it() -> None:
    c = NodeLossControllers("out-of-service-controller")
    start = emitter(0)
    c.node_applied("n1", [], 10 * S, True, 0, start)
    assert asked(start) == [0.0]
    out = emitter(0)
    c.tick(0, out)
    assert [(t, d["key"], d["effect"]) for t, _, _, d in decided(out)] == [
        ("NodeTaintAdded", "node.kubernetes.io/unschedulable", "NoSchedule")
    ]
    c.node_applied("n1", [], 10 * S, False, 30 * S, emitter(30))
    out = emitter(30)
    c.tick(30 * S, out)
    assert [(t, d["key"]) for t, _, _, d in decided(out)] == [("NodeTaintRemoved", "node.kubernetes.io/unschedulable")]


# -- NoExecute taints written on the Node object are live from the start ----------------------
def lost_pods(tolerations: list[dict[str, Any]]) -> tuple[NodeLossControllers, Any]:
    c = NodeLossControllers("out-of-service-controller")
    start = emitter(0)
    c.node_applied("n1", [NO_EXECUTE], 10 * S, False, 0, start)
    c.pod_running(pod("web", extra_spec={"tolerations": tolerations}), "n1", ())
    return c, start


def test_an_untolerated_no_execute_taint_on_the_node_object_evicts_at_the_start() -> None:
    c, start = lost_pods([])
    assert asked(start) == [0.0]
    out = emitter(0)
    c.tick(0, out)
    ((kind, _, who, data),) = decided(out)
    assert (kind, who, data["taint"]) == ("PodDeletionRequested", "default/web", "dedicated:NoExecute")


def test_a_finite_toleration_evicts_after_its_seconds_unless_the_taint_is_removed() -> None:
    tolerates = [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]
    c, _ = lost_pods(tolerates)
    out = emitter(0)
    c.tick(0, out)
    assert decided(out) == [] and 60.0 in asked(out)
    c.untainted("n1", "dedicated", "", 30 * S, emitter(30))  # the operator removes the node's own taint
    c.tick(30 * S, emitter(30))
    later = emitter(60)
    c.tick(60 * S, later)
    assert decided(later) == []  # the pending eviction was cancelled

    c2, _ = lost_pods(tolerates)
    c2.tick(0, emitter(0))
    due = emitter(60)
    c2.tick(60 * S, due)
    assert [t for t, *_ in decided(due)] == ["PodDeletionRequested"]


def test_untaint_frees_a_node_for_the_scheduler_whoever_put_the_taint_there() -> None:
    node = convert(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        },
        Node,
    )
    s = KubeScheduler("scheduler")
    s.cache.node_applied(node, resolve_kubelet_config({}))
    info = pod_info(pod("web", priority=0))
    assert not run_filters(info, s.cache.nodes["n1"]).fits
    s.cache.untainted("n1", "dedicated", "")
    assert run_filters(info, s.cache.nodes["n1"]).fits


# -- attach-detach: the out-of-service taint forces every detach on its node (reconciler.go) --
@pytest.mark.parametrize("effect", ["NoExecute", "NoSchedule"])
def test_the_out_of_service_taint_forces_the_detach_even_on_a_ready_node(effect: str) -> None:
    c = NodeLossControllers("out-of-service-controller")
    c.node_applied("n1", [], 10 * S, False, 0, emitter())
    c.pod_running(pod("db"), "n1", ("pv-db",))
    oos = Taint(key="node.kubernetes.io/out-of-service", value="anything", effect=effect)
    c.tainted("n1", oos, 5 * S, emitter(5))
    c.pod_gone("default/db", 6 * S, emitter(6))
    out = emitter(6)
    c.tick(6 * S, out)
    detached = [d for t, _, _, d in decided(out) if t == "VolumeDetached"]
    assert [(d["volume"], d["forced"], d["reason"]) for d in detached] == [("pv-db", True, "OutOfService")]
