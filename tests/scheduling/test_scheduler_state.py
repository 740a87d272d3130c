"""kube-scheduler over its cache: queue, binding, nomination and cluster events, driven by hand."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Node, Pod, PodDisruptionBudget, Taint
from ledgerlet_core.scheduling.scheduler import KubeScheduler
from tests.support.emit import asked, decided, emitter

CONFIG = resolve_kubelet_config({})


def node(name: str, cpu: str = "4", **spec: Any) -> Node:
    doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}
    return convert({**doc, "status": {"capacity": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}, Node)


def pod(name: str, cpu: str, priority: int = 0, node_name: str = "", **meta: Any) -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        "priority": priority,
    }
    if node_name:
        spec["nodeName"] = node_name
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", **meta}, "spec": spec}
    return apply_defaults(convert(doc, Pod))  # type: ignore[return-value]


def scheduler(*nodes: Node) -> KubeScheduler:
    s = KubeScheduler("scheduler")
    for n in nodes:
        s.cache.node_applied(n, CONFIG)
    return s


def test_a_pending_pod_is_bound_to_the_best_node_and_cites_its_admission() -> None:
    s = scheduler(node("n1"), node("n2"))
    s.running(pod("busy", "3", node_name="n1"), 0)
    s.enqueue(pod("web", "1"), 0, "admitted-id")
    out = emitter(0)
    s.schedule("tick-id", 0, out)
    ((kind, where, who, data),) = decided(out)
    assert (kind, where, who) == ("PodScheduled", "n2", "default/web")  # n1 has 1 CPU left, n2 four
    assert data["requests"] == {"cpu": "1"} and out.out[0].envelope.causes == ["tick-id", "admitted-id"]
    assert s.cache.pod_node["default/web"] == "n2"


def test_an_unschedulable_pod_waits_for_a_cluster_event_then_its_backoff() -> None:
    s = scheduler(node("n1"))
    s.running(pod("busy", "4", node_name="n1"), 0)
    s.enqueue(pod("web", "1"), 0, "")
    out = emitter(0)
    s.schedule("t", 0, out)
    (got,) = decided(out)
    assert got[0] == "PodUnschedulable" and got[3]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    quiet = emitter(5)
    s.schedule("t", 5 * SECOND, quiet)
    assert decided(quiet) == []  # unschedulable pool: no event, no retry
    gone = emitter(5)
    assert s.gone("default/busy", 5 * SECOND, gone)
    assert asked(gone) == [5.0]  # its 1 s backoff is long over
    out = emitter(5)
    s.schedule("t", 5 * SECOND, out)
    assert [g[0] for g in decided(out)] == ["PodScheduled"]


def test_preemption_nominates_and_deletes_the_victims_with_their_own_grace() -> None:
    s = scheduler(node("n1"))
    s.running(pod("low", "3", priority=1, node_name="n1", labels={"app": "low"}), 0)
    s.enqueue(pod("high", "3", priority=1000), 0, "")
    out = emitter(0)
    s.schedule("t", 0, out)
    kinds = [(k, p) for k, _, p, _ in decided(out)]
    assert kinds == [
        ("PodNominated", "default/high"),
        ("PodPreempted", "default/low"),
        ("PodUnschedulable", "default/high"),
    ]
    assert decided(out)[1][3]["gracePeriodSeconds"] == 30
    assert s.cache.nominated_view()["n1"][0].key == "default/high"


def test_a_disruption_budget_is_counted_from_the_running_pods() -> None:
    s = scheduler(node("n1"))
    for i in range(3):
        s.running(pod(f"web-{i}", "100m", node_name="n1", labels={"app": "web"}), 0)
    budget = {"metadata": {"name": "web", "namespace": "default"}}
    spec = {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}
    s.cache.pdb_applied(convert({**budget, "spec": spec}, PodDisruptionBudget))
    (view,) = s.cache.pdb_views()
    assert view.disruptions_allowed == 1  # 3 healthy, 2 must stay
    s.terminating("default/web-0")
    assert s.cache.pdb_views()[0].disruptions_allowed == 0


def test_taints_from_the_object_the_control_plane_and_the_operator_are_all_seen() -> None:
    s = scheduler(node("n1", taints=[{"key": "a", "effect": "NoSchedule"}]))
    s.cache.plane_taint_added("n1", Taint(key="b", effect="NoSchedule"))
    s.cache.tainted("n1", Taint(key="c", effect="NoExecute"))
    assert [t.key for t in s.cache.nodes["n1"].taints] == ["a", "b", "c"]
    s.cache.untainted("n1", "c", "")
    s.cache.plane_taint_removed("n1", "b", "NoSchedule")
    assert [t.key for t in s.cache.nodes["n1"].taints] == ["a"]


def test_a_deleted_disruption_budget_no_longer_counts() -> None:
    s = scheduler(node("n1"))
    budget = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"minAvailable": 1}}
    s.cache.pdb_applied(convert(budget, PodDisruptionBudget))
    assert len(s.cache.pdb_views()) == 1
    assert s.cache.pdb_deleted("default", "web") and s.cache.pdb_views() == []
    assert not s.cache.pdb_deleted("default", "web")  # not there any more: NotFound
