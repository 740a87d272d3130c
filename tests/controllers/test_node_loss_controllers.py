"""Node lifecycle, taint eviction, PodGC and attach-detach after a node goes away
(``node_lifecycle_controller.go``, ``tainteviction``, ``podgc/gc_controller.go``,
``attachdetach/reconciler``), driven tick by tick."""

from __future__ import annotations

from ledgerlet_core.controllers.node_loss_controllers import NodeLossControllers, Settings
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.taints import NO_EXECUTE, TAINT_NODE_OUT_OF_SERVICE
from tests.core.helpers import pod
from tests.support.emit import asked, decided, emitter

S = SECOND
TOLERATES_5M = [
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
]


def controllers() -> NodeLossControllers:
    c = NodeLossControllers("out-of-service-controller", Settings(monitor_grace=40 * S))
    c.node_applied("n1", [], 10 * S, False, 0, emitter())
    c.pod_running(pod("db", extra_spec={"tolerations": TOLERATES_5M}), "n1", ("pv-db",))
    c.pod_running(pod("web"), "n1", ())
    return c


def test_a_stopped_node_goes_unknown_after_the_grace_period_and_untolerating_pods_are_deleted() -> None:
    c = controllers()
    out = emitter(23)
    c.stopped("n1", 23 * S, out)
    # last heartbeat at 20 s; 20 + 40 = 60 s; the next 5 s monitor pass after it is 65 s
    assert asked(out) == [65.0]
    c.tick(60 * S, quiet := emitter(60))
    assert decided(quiet) == []
    out = emitter(65)
    c.tick(65 * S, out)
    got = [(t, p, d.get("status") or d.get("key") or d.get("reason")) for t, _, p, d in decided(out)]
    assert got == [
        ("NodeConditionChanged", None, "Unknown"),
        ("NodeTaintAdded", None, "node.kubernetes.io/unreachable"),
        ("NodeTaintAdded", None, "node.kubernetes.io/unreachable"),
        ("PodDeletionRequested", "default/web", "TaintEviction"),  # no toleration: at once
    ]
    assert 365.0 in asked(out)  # db tolerates it for 300 s


def test_pod_gc_force_deletes_terminating_pods_on_an_out_of_service_node() -> None:
    c = controllers()
    c.stopped("n1", 0, emitter())
    c.tick(45 * S, emitter(45))  # Unknown; web's deletion requested
    c.tainted("n1", Taint(key=TAINT_NODE_OUT_OF_SERVICE, value="nodeshutdown", effect=NO_EXECUTE), 50 * S, emitter(50))
    out = emitter(60)
    c.tick(60 * S, out)
    deleted = [(p, d["reason"]) for t, _, p, d in decided(out) if t == "PodForceDeleted"]
    assert ("default/web", "out-of-service") in deleted
    # the out-of-service taint is not tolerated by db: deleted at once, then force-deleted too
    assert ("default/db", "out-of-service") in deleted


def test_a_volume_on_a_down_node_is_detached_only_by_force() -> None:
    c = controllers()
    c.stopped("n1", 0, emitter())
    c.pod_gone("default/db", 10 * S, emitter(10))  # force-deleted elsewhere: unwanted, still mounted
    out = emitter(20)
    c.tick(20 * S, out)
    assert [t for t, *_ in decided(out)] == []  # the kubelet is down: nothing unmounts
    late = emitter(371)
    c.tick(371 * S, late)  # unwanted for more than 6 minutes on an unhealthy node
    detached = [d for t, _, _, d in decided(late) if t == "VolumeDetached"]
    assert detached and detached[0]["forced"] and detached[0]["reason"] == "Timeout"


def test_on_a_live_node_the_kubelet_unmounts_and_the_detach_is_normal() -> None:
    c = controllers()
    c.pod_gone("default/db", 10 * S, emitter(10))
    out = emitter(10)
    c.tick(10 * S, out)
    assert [(d["volume"], d["forced"], d["reason"]) for t, _, _, d in decided(out) if t == "VolumeDetached"] == [
        ("pv-db", False, "Normal")
    ]
