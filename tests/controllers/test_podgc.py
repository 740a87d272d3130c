"""PodGC on upstream's own cases (``pkg/controller/podgc/gc_controller_test.go``), driven
pass by pass (every 20 s) through the node-loss controllers that run it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ledgerlet_core.controllers.node_loss_controllers import NodeLossControllers, Settings
from ledgerlet_core.controllers.podgc import creation_seconds
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Pod
from tests.core.helpers import pod
from tests.support.emit import asked, decided, emitter

S = SECOND
HOUR = 3600


def controllers(threshold: int, *nodes: str) -> NodeLossControllers:
    c = NodeLossControllers("out-of-service-controller", Settings(terminated_pod_gc_threshold=threshold))
    for n in nodes or ("node",):
        c.node_applied(n, [], 10 * S, False, 0, emitter())
    return c


def object_pod(name: str, phase: str, node: str = "node", *, created_hours: int = 0, reason: str = "") -> Pod:
    """A pod of the scenario's objects, created ``created_hours`` after the epoch (as the
    test's ``creationTime.Add(1 * time.Hour)``)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if created_hours:
        meta["creationTimestamp"] = datetime.fromtimestamp(created_hours * HOUR, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": node, "containers": []}}
    return convert({**doc, "status": status}, Pod)


def load(c: NodeLossControllers, pods: list[tuple[str, str, str]]) -> None:
    """(name, phase, reason) in order, each an hour after the one before."""
    for i, (name, phase, reason) in enumerate(pods, start=1):
        p = object_pod(name, phase, created_hours=i, reason=reason)
        if phase in ("Succeeded", "Failed"):
            c.terminated_applied(p, 0, emitter())
        else:
            c.pod_running(p, "node", ())


def force_deleted(c: NodeLossControllers, at: int) -> list[tuple[str, str]]:
    out = emitter(at)
    c.tick(at * S, out)
    return [(str(p).partition("/")[2], d["reason"]) for t, _, p, d in decided(out) if t == "PodForceDeleted"]


@pytest.mark.parametrize(
    ("case", "pods", "threshold", "deleted"),
    [
        (
            "delete pod a which is PodFailed and pod b which is PodSucceeded",
            [("a", "Failed", ""), ("b", "Succeeded", ""), ("c", "Failed", "")],
            1,
            ["a", "b"],
        ),
        ("threshold = 0, disables terminated pod deletion", [("a", "Failed", ""), ("b", "Succeeded", "")], 0, []),
        (
            "threshold = 1, delete pod b which is PodSucceeded",
            [("a", "Running", ""), ("b", "Succeeded", ""), ("c", "Failed", "")],
            1,
            ["b"],
        ),
        ("threshold = 1, delete pod a which is PodFailed", [("a", "Failed", ""), ("b", "Succeeded", "")], 1, ["a"]),
        ("threshold = 5, don't delete pod", [("a", "Failed", ""), ("b", "Succeeded", "")], 5, []),
        (
            "evicted pods first (unnamed case 7)",
            [("a", "Failed", ""), ("b", "Succeeded", ""), ("c", "Failed", "Evicted")],
            1,
            ["c", "a"],
        ),
        (
            "evicted pods first (unnamed case 8)",
            [("a", "Running", ""), ("b", "Succeeded", ""), ("c", "Failed", "Evicted")],
            1,
            ["c"],
        ),
    ],
)
def test_gc_terminated(case: str, pods: list[tuple[str, str, str]], threshold: int, deleted: list[str]) -> None:
    """TestGCTerminated."""
    c = controllers(threshold)
    load(c, pods)
    got = force_deleted(c, 0)
    assert got == [(n, "terminated") for n in deleted], case
    assert force_deleted(c, 20) == []  # converged: nothing more to do


def test_gc_terminated_orders_equal_creation_times_by_name() -> None:
    """``byEvictionAndCreationTimestamp``: the same creationTimestamp, then the name."""
    c = controllers(1)
    for name in ("c", "a", "b"):
        c.terminated_applied(object_pod(name, "Failed", created_hours=1), 0, emitter())
    assert force_deleted(c, 0) == [("a", "terminated"), ("b", "terminated")]


def test_pods_that_fail_during_the_run_are_counted_and_deleted_at_the_next_pass() -> None:
    """An evicted pod stays Failed in the API: the threshold counts it; the next 20 s pass
    deletes the excess, evicted ones first. A pod whose deletion was asked for is gone, not
    counted."""
    c = controllers(1)
    for name in ("web", "db", "cache"):
        c.pod_admitted(f"default/{name}", 0)
        c.pod_running(pod(name, node="node"), "node", ())
    c.pod_terminating("default/cache", "del", deleted=True)
    c.pod_ended("default/cache", evicted=False, now=3 * S, out=emitter(3))
    assert len(c.terminated) == 0  # deleted: gone
    c.pod_ended("default/db", evicted=False, now=4 * S, out=emitter(4))
    out = emitter(5)
    c.pod_ended("default/web", evicted=True, now=5 * S, out=out)
    assert asked(out) == [20.0]  # two terminated pods, one allowed: the next pass
    assert force_deleted(c, 20) == [("web", "terminated")]
    assert len(c.terminated) == 1


def orphan_setup(threshold: int = -1) -> NodeLossControllers:
    c = controllers(threshold, "existing", "deleted")
    c.pod_running(object_pod("a", "Running", "deleted"), "deleted", ())
    c.terminated_applied(object_pod("b", "Failed", "existing"), 0, emitter())
    c.terminated_applied(object_pod("c", "Succeeded", "deleted"), 0, emitter())
    c.terminated_applied(object_pod("d", "Failed", "deleted"), 0, emitter())
    return c


def test_gc_orphaned_some_nodes_missing() -> None:
    """TestGCOrphaned "some nodes missing": every pod of the deleted node, whatever its
    phase, once the quarantine after the pass that found it missing is over."""
    c = orphan_setup()
    out = emitter(5)
    c.node_deleted("deleted", 5 * S, out)
    assert asked(out) == [20.0]  # the pass that finds it missing
    assert force_deleted(c, 20) == []  # into quarantine until 60 s
    assert force_deleted(c, 40) == []  # "quarantine not finished"
    assert force_deleted(c, 60) == [("a", "orphaned"), ("c", "orphaned"), ("d", "orphaned")]
    assert force_deleted(c, 80) == []


def test_gc_orphaned_node_added_back_within_the_quarantine() -> None:
    """TestGCOrphaned "node added to informer after quarantine": the node is back when the
    quarantine ends: nothing is deleted (and a later deletion starts a new quarantine)."""
    c = orphan_setup()
    c.node_deleted("deleted", 5 * S, emitter(5))
    assert force_deleted(c, 20) == []
    c.node_applied("deleted", [], 10 * S, False, 30 * S, emitter(30))
    assert force_deleted(c, 40) == []
    assert force_deleted(c, 60) == []  # its quarantine ended with the node there
    c.node_deleted("deleted", 70 * S, emitter(70))
    assert force_deleted(c, 80) == []  # found missing again: quarantine until 120 s
    assert force_deleted(c, 100) == []
    assert [p for p, _ in force_deleted(c, 120)] == ["a", "c", "d"]


def test_gc_orphaned_keeps_the_first_quarantine_when_the_node_comes_and_goes() -> None:
    """``AddAfter`` keeps the earlier ready time: a node deleted again before its first
    quarantine ended is looked at when that one ends."""
    c = orphan_setup()
    c.node_deleted("deleted", 5 * S, emitter(5))
    assert force_deleted(c, 20) == []  # ready at 60 s
    c.node_applied("deleted", [], 10 * S, False, 30 * S, emitter(30))
    c.node_deleted("deleted", 50 * S, emitter(50))
    assert [p for p, _ in force_deleted(c, 60)] == ["a", "c", "d"]


def test_gc_orphaned_nodes_present() -> None:
    """TestGCOrphaned "nodes present in lister": nothing on existing nodes is touched."""
    c = orphan_setup()
    assert all(force_deleted(c, t) == [] for t in (0, 20, 40, 60, 80))


def test_gc_terminated_runs_before_gc_orphaned() -> None:
    """``gc``: gcTerminated, then gcOrphaned; a pod deleted by the first is not deleted again."""
    c = orphan_setup(threshold=1)
    c.node_deleted("deleted", 0, emitter())
    assert force_deleted(c, 0) == [("b", "terminated"), ("c", "terminated")]  # three terminated, one kept
    assert force_deleted(c, 40) == [("a", "orphaned"), ("d", "orphaned")]


def test_a_user_deleting_a_terminated_pod_removes_it_at_once() -> None:
    c = controllers(1)
    load(c, [("a", "Failed", ""), ("b", "Failed", "")])
    c.pod_deleted("default/a", "user", 1 * S, emitter(1))
    assert len(c.terminated) == 1 and force_deleted(c, 20) == []


def test_creation_seconds() -> None:
    """The API's resolution: whole seconds; an admitted pod's is the run start plus when."""
    start = datetime(2026, 1, 29, 9, 0, 0, tzinfo=UTC)
    stamped = object_pod("a", "Failed", created_hours=2)
    assert creation_seconds(stamped, start, 999 * S) == 2 * HOUR
    assert creation_seconds(None, start, 1_500_000_000) == int(start.timestamp()) + 1
