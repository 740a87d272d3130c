"""The workload controllers' reconcile (``pkg/controller/{replicaset,statefulset,daemon,job}``),
driven with hand-made pods and nodes."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.controllers.reconcile import PodState, WorkloadControllers
from ledgerlet_core.controllers.workloads import replica_pod_name
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Node, Workload
from tests.support.emit import asked, decided, emitter

S = SECOND


def workload(kind: str, name: str, **spec: Any) -> Workload:
    body = {"template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c"}]}}, **spec}
    doc = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default", "uid": name}}
    return convert({**doc, "spec": body}, Workload)


def nodes(*names: str) -> dict[str, Node]:
    return {n: convert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}, Node) for n in names}


def created(out: Any) -> list[str]:
    return [p for t, _, p, _ in decided(out) if t == "ObjectCreated"]


def test_a_replica_set_creates_its_replicas_and_replaces_an_evicted_one_under_a_new_name() -> None:
    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("ReplicaSet", "web", replicas=2))
    c.changed(0, emitter())
    first = emitter(0)
    c.sync(0, nodes("n1"), first)
    pods = created(first)
    assert len(pods) == 2 and all(p.startswith("default/web-") for p in pods)
    again = emitter(0)
    c.sync(0, nodes("n1"), again)
    assert created(again) == []  # nothing changed: nothing to do
    c.ended(pods[0], PodState.FAILED, (5 * S, (1, 0, 20, 0)), emitter(5))
    later = emitter(5)
    c.sync(5 * S, nodes("n1"), later)
    got = decided(later)
    assert [t for t, *_ in got] == ["ObjectCreated", "PodReplaced"]
    assert got[1][2] == pods[0] and got[1][3]["replacement"] == got[0][2] != pods[0]


def test_a_stateful_set_goes_one_ordinal_at_a_time_and_reuses_a_name_once_it_is_gone() -> None:
    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("StatefulSet", "db", replicas=2))
    c.changed(0, emitter())
    out = emitter(0)
    c.sync(0, nodes("n1"), out)
    assert created(out) == ["default/db-0"]  # OrderedReady: db-1 waits for db-0 to run
    uid = decided(out)[0][3]["object"]["metadata"]["uid"]
    c.started("default/db-0", uid, 1 * S, emitter(1))
    out = emitter(1)
    c.sync(1 * S, nodes("n1"), out)
    assert created(out) == ["default/db-1"]
    c.ended("default/db-1", PodState.FAILED, (9 * S, (1, 0, 20, 0)), emitter(9))
    out = emitter(9)
    c.sync(9 * S, nodes("n1"), out)
    assert created(out) == []  # failed but not gone: the name is still taken
    c.ended("default/db-1", PodState.GONE, (12 * S, (1, 0, 20, 1)), emitter(12))
    out = emitter(12)
    c.sync(12 * S, nodes("n1"), out)
    assert [(t, p) for t, _, p, _ in decided(out)] == [
        ("ObjectCreated", "default/db-1"),
        ("PodReplaced", "default/db-1"),
    ]


def test_a_daemon_set_runs_one_pod_per_node_and_backs_off_after_a_failure() -> None:
    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("DaemonSet", "agent"))
    c.changed(0, emitter())
    out = emitter(0)
    c.sync(0, nodes("n1", "n2"), out)
    on = {d["object"]["spec"]["nodeName"]: p for t, _, p, d in decided(out)}
    assert list(on) == ["n1", "n2"]
    failed = emitter(10)
    c.ended(on["n1"], PodState.FAILED, (10 * S, (1, 0, 20, 0)), failed)
    assert 11.0 in asked(failed)  # 1 s back-off, doubling per failure on that node
    early = emitter(10)
    c.sync(10 * S, nodes("n1", "n2"), early)
    assert created(early) == []
    out = emitter(11)
    c.sync(11 * S, nodes("n1", "n2"), out)
    assert len(created(out)) == 1 and decided(out)[0][3]["object"]["spec"]["nodeName"] == "n1"


def test_a_create_the_api_server_refuses_is_tried_again_after_a_back_off() -> None:
    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("ReplicaSet", "web", replicas=1))
    c.changed(0, emitter())
    out = emitter(0)
    c.sync(0, nodes("n1"), out)
    (pod,) = created(out)
    refused = emitter(0)
    c.refused_by_apiserver(pod, 0, refused)
    assert asked(refused) == [10.0]
    out = emitter(10)
    c.sync(10 * S, nodes("n1"), out)
    assert len(created(out)) == 1 and created(out) != [pod]


def test_a_daemon_set_keeps_off_a_node_whose_live_taints_it_does_not_tolerate() -> None:
    """``nodeShouldRunDaemonPod`` reads the Node's taints as they are now: a NotReady node's
    ``not-ready:NoSchedule`` (which daemon pods do not tolerate) or an operator's taint."""
    from ledgerlet_core.model.k8s.objects import Taint

    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("DaemonSet", "agent"))
    c.changed(0, emitter())
    down = {"n1": [Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")], "n2": []}
    out = emitter(0)
    c.sync(0, nodes("n1", "n2"), out, down)
    assert [d["object"]["spec"]["nodeName"] for t, _, _, d in decided(out) if t == "ObjectCreated"] == ["n2"]
    c.taints_changed(30 * S, emitter(30))  # Ready again: the taint is gone
    out = emitter(30)
    c.sync(30 * S, nodes("n1", "n2"), out, {"n1": [], "n2": []})
    assert [d["object"]["spec"]["nodeName"] for t, _, _, d in decided(out) if t == "ObjectCreated"] == ["n1"]


def test_a_generated_name_already_taken_is_not_used_again() -> None:
    """Regression: two replicas could draw the same 5-character suffix (about 4 collisions
    in 10,000 pods); the second create silently merged into the first, so a ReplicaSet of
    10,000 got 9,995 pods. Upstream's create fails AlreadyExists and another name is drawn."""
    c = WorkloadControllers("controller-manager")
    c.workload_applied(workload("ReplicaSet", "web", replicas=3))
    c.changed(0, emitter())
    first = emitter(0)
    taken = {"default/" + replica_pod_name(workload("ReplicaSet", "web"), 2)}  # someone else's pod
    c.sync(0, nodes("n1"), first, exists=lambda key: key in taken)
    names = created(first)
    assert len(names) == 3 and len(set(names)) == 3 and not taken & set(names)
