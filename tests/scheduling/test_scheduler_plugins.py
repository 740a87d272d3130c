"""kube-scheduler's whole default profile through its queue and cache, on upstream's
integration cases: ``test/integration/scheduler/filters/filters_test.go``
(TestPodTopologySpreadFilter), ``test/integration/scheduler/queue_test.go``
(TestSchedulingGates) and ``test/integration/scheduler/scheduler_test.go``
(TestUnschedulablePodBecomesSchedulable)."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Node, Pod
from ledgerlet_core.scheduling.scheduler import KubeScheduler
from tests.support.emit import decided, emitter

CONFIG = resolve_kubelet_config({})
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> Node:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }
    return convert(doc, Node)


def pod(name: str, labels: dict[str, str] | None = None, node_name: str = "", **spec: Any) -> Pod:
    body: dict[str, Any] = {"containers": [{"name": "pause", "image": "pause"}], **spec}
    if node_name:
        body["nodeName"] = node_name
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
    }
    made = apply_defaults(convert({**doc, "spec": body}, Pod))
    assert isinstance(made, Pod)
    return made


def scheduler(nodes: list[Node], existing: list[Pod]) -> KubeScheduler:
    s = KubeScheduler("scheduler")
    for n in nodes:
        s.cache.node_applied(n, CONFIG)
    for p in existing:
        s.running(p, 0)
        s.started(p.key, 0)
    return s


def run(s: KubeScheduler, at: float) -> list[tuple[str, str | None, str | None, dict[str, Any]]]:
    out = emitter(at)
    s.schedule("tick", round(at * SECOND), out)
    return decided(out)


# -- filters_test.go: TestPodTopologySpreadFilter ---------------------------------------------------
DEFAULT_NODES = [
    node("node-0", {"node": "node-0", "zone": "zone-0"}),
    node("node-1", {"node": "node-1", "zone": "zone-0"}),
    node("node-2", {"node": "node-2", "zone": "zone-1"}),
    node("node-3", {"node": "node-3", "zone": "zone-1"}),
]
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def hard(skew: int, key: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": FOO, **extra}


def foo(*where: str) -> list[Pod]:
    return [pod(f"e{i}-{n}", {"foo": ""}, node_name=n, terminationGracePeriodSeconds=0) for i, n in enumerate(where)]


def node_affinity(key: str, op: str, *values: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


NOT_NODE_0 = node_affinity("node", "NotIn", "node-0")  # "mock a 3-node cluster"
FOO_NODES = [
    node("node-1", {"node": "node-1", "zone": "zone-1", "foo": ""}),
    node("node-2", {"node": "node-2", "zone": "zone-1", "foo": ""}),
    node("node-3", {"node": "node-3", "zone": "zone-2"}),
    node("node-4", {"node": "node-4", "zone": "zone-2", "foo": ""}),
]
FOO_NODES_TAINTED = [
    *FOO_NODES[:2],
    node("node-3", {"node": "node-3", "zone": "zone-2"}, [UNSCHEDULABLE_TAINT]),
    FOO_NODES[3],
]


@pytest.mark.parametrize(
    ("case", "incoming", "nodes", "existing", "candidates"),
    [
        (
            "place pod on a 1/1/0/1 cluster with MaxSkew=1, node-2 is the only fit",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(1, "node")]),
            DEFAULT_NODES,
            foo("node-0", "node-1", "node-3"),
            ["node-2"],
        ),
        (
            "place pod on a 2/0/0/1 cluster with MaxSkew=2, node-{1,2,3} are good fits",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(2, "node")]),
            DEFAULT_NODES,
            foo("node-0", "node-0", "node-3"),
            ["node-1", "node-2", "node-3"],
        ),
        (
            "pod is required to be placed on zone0, so only node-1 fits",
            pod(
                "p",
                {"foo": ""},
                affinity=node_affinity("zone", "In", "zone-0"),
                topologySpreadConstraints=[hard(1, "node")],
            ),
            DEFAULT_NODES,
            foo("node-0", "node-3"),
            ["node-1"],
        ),
        (
            "two constraints: pod can only be placed to zone-1/node-2",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(1, "zone"), hard(1, "node")]),
            DEFAULT_NODES,
            foo("node-0", "node-1", "node-3", "node-3"),
            ["node-2"],
        ),
        (
            "pod cannot be placed onto any node",
            pod("p", {"foo": ""}, affinity=NOT_NODE_0, topologySpreadConstraints=[hard(1, "zone"), hard(1, "node")]),
            DEFAULT_NODES,
            foo("node-1", "node-1", "node-2", "node-2", "node-3"),
            [],
        ),
        (
            "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
            "then the third node fits",
            pod("p", {"foo": ""}, affinity=NOT_NODE_0, topologySpreadConstraints=[hard(2, "node", minDomains=4)]),
            DEFAULT_NODES,
            foo("node-1", "node-1", "node-2", "node-2", "node-3"),
            ["node-3"],
        ),
        (
            "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
            "then the all nodes fit",
            pod("p", {"foo": ""}, affinity=NOT_NODE_0, topologySpreadConstraints=[hard(2, "node", minDomains=2)]),
            DEFAULT_NODES,
            foo("node-1", "node-1", "node-2", "node-2", "node-3"),
            ["node-1", "node-2", "node-3"],
        ),
        (
            "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
            "then the third and fourth nodes fit",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(2, "zone", minDomains=3)]),
            DEFAULT_NODES,
            foo("node-0", "node-1", "node-2"),
            ["node-2", "node-3"],
        ),
        (
            "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
            "then the all nodes fit",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(2, "zone", minDomains=1)]),
            DEFAULT_NODES,
            foo("node-1", "node-2", "node-3"),
            ["node-0", "node-1", "node-2", "node-3"],
        ),
        (
            "NodeAffinityPolicy honored with labelSelectors, pods spread across zone as 2/1",
            pod("p", {"foo": ""}, nodeSelector={"foo": ""}, topologySpreadConstraints=[hard(1, "zone")]),
            FOO_NODES,
            foo("node-1", "node-2", "node-3", "node-4"),
            ["node-4"],
        ),
        (
            "NodeAffinityPolicy ignored with nodeAffinity, pods spread across zone as 1/~2~",
            pod(
                "p",
                {"foo": ""},
                affinity=node_affinity("foo", "In", ""),
                topologySpreadConstraints=[hard(1, "zone", nodeAffinityPolicy="Ignore")],
            ),
            FOO_NODES,
            foo("node-1", "node-3", "node-4"),
            ["node-1", "node-2"],
        ),
        (
            "NodeTaintsPolicy honored, pods spread across zone as 2/1",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(1, "zone", nodeTaintsPolicy="Honor")]),
            FOO_NODES_TAINTED,
            foo("node-1", "node-2", "node-3", "node-4"),
            ["node-4"],
        ),
        (
            "NodeTaintsPolicy ignored, pods spread across zone as 2/2",
            pod("p", {"foo": ""}, topologySpreadConstraints=[hard(1, "zone")]),
            FOO_NODES_TAINTED,
            foo("node-1", "node-2", "node-3", "node-4"),
            ["node-1", "node-2", "node-4"],
        ),
    ],
)
def test_pod_topology_spread_filter(
    case: str, incoming: Pod, nodes: list[Node], existing: list[Pod], candidates: list[str]
) -> None:
    s = scheduler(nodes, existing)
    s.enqueue(incoming, 0, "")
    ((kind, where, _, data),) = run(s, 0)
    if candidates:
        assert kind == "PodScheduled" and where in candidates, (case, data)
    else:
        assert kind == "PodUnschedulable", case
        assert "didn't match pod topology spread constraints" in data["message"]


def test_pod_topology_spread_a_high_priority_pod_can_preempt_others() -> None:
    """filters_test.go TestPodTopologySpreadFilter: "high priority pod can preempt others":
    removing a victim evens the spread, so the dry run finds a node, and once the victim is
    gone the pod lands there."""
    s = scheduler(DEFAULT_NODES, foo("node-1", "node-1", "node-2", "node-2", "node-3"))
    incoming = pod(
        "p",
        {"foo": ""},
        priority=100,
        affinity=NOT_NODE_0,
        topologySpreadConstraints=[hard(1, "zone"), hard(1, "node")],
    )
    s.enqueue(incoming, 0, "")
    first = run(s, 0)
    assert [k for k, *_ in first] == ["PodNominated", "PodPreempted", "PodUnschedulable"]
    nominated, victim = first[0], first[1]
    assert nominated[1] in ("node-1", "node-2", "node-3")
    out = emitter(0)
    assert s.gone(str(victim[2]), 0, out)
    (placed,) = run(s, 2)
    assert placed[0] == "PodScheduled" and placed[1] == nominated[1]


# -- queue_test.go: TestSchedulingGates --------------------------------------------------------------------
def gated(name: str, *gates: str) -> Pod:
    return pod(name, schedulingGates=[{"name": g} for g in gates])


@pytest.mark.parametrize(
    ("case", "pods", "scheduled"),
    [
        ("regular pods", [pod("p1"), pod("p2")], ["p1", "p2"]),
        ("one pod carrying scheduling gates", [gated("p1", "foo"), pod("p2")], ["p2"]),
        (
            "two pod carrying scheduling gates, and remove gates of one pod",
            [gated("p1", "foo"), gated("p2", "bar"), pod("p3")],
            ["p3"],
        ),
    ],
)
def test_scheduling_gates(case: str, pods: list[Pod], scheduled: list[str]) -> None:
    s = scheduler([node("n1", {})], [])
    out = emitter(0)
    for p in pods:
        s.enqueue(p, 0, "", out)
    said = decided(out)
    assert [(k, w) for k, _, w, _ in said] == [
        ("PodUnschedulable", f"default/{p.metadata.name}") for p in pods if p.spec.scheduling_gates
    ]
    assert all(d["reasons"] == ["SchedulingGated"] for *_, d in said)
    got = run(s, 0)
    assert [w for k, _, w, _ in got if k == "PodScheduled"] == [f"default/{n}" for n in scheduled], case


def test_a_pod_whose_gates_are_removed_is_scheduled() -> None:
    """queue_test.go TestSchedulingGates "two pod carrying scheduling gates, and remove gates
    of one pod": p2's gates removed, p2 is scheduled; p1 still waits."""
    s = scheduler([node("n1", {})], [])
    out = emitter(0)
    p1, p2 = gated("p1", "foo"), gated("p2", "bar", "baz")
    s.enqueue(p1, 0, "", out)
    s.enqueue(p2, 0, "", out)
    assert decided(out)[1][3]["message"] == "waiting for scheduling gates: [bar baz]"  # PreEnqueue's status
    assert run(s, 0) == []  # neither is in the queue
    one_left = pod("p2", schedulingGates=[{"name": "baz"}])
    assert s.gates_updated(one_left, SECOND, emitter(1))
    assert run(s, 1) == []  # still gated
    assert s.gates_updated(pod("p2"), 2 * SECOND, emitter(2))
    assert [(k, w) for k, _, w, _ in run(s, 2)] == [("PodScheduled", "default/p2")]
    assert s.is_known("default/p1") and "default/p1" in s.gated


def test_a_pod_for_another_scheduler_is_left_to_it() -> None:
    """A pod naming a schedulerName other than default-scheduler is another scheduler's
    (kube-scheduler's profiles: pods of an unknown scheduler are not queued)."""
    s = scheduler([node("n1", {})], [])
    s.enqueue(pod("mine"), 0, "")
    s.enqueue(pod("theirs", schedulerName="my-scheduler"), 0, "")
    assert [w for _, _, w, _ in run(s, 0)] == ["default/mine"]
    assert not s.is_known("default/theirs")


# -- scheduler_test.go: TestUnschedulablePodBecomesSchedulable ---------------------------------------------
def test_a_pod_with_pod_affinity_is_scheduled_once_a_matching_pod_is_added() -> None:
    """TestUnschedulablePodBecomesSchedulable "pod with pod-affinity gets added": the pod
    refused by InterPodAffinity goes back to the queue when a pod is added, and fits."""
    s = scheduler([node("node-1", {"kubernetes.io/hostname": "node-1"})], [])
    term = {"labelSelector": {"matchLabels": {"foo": "bar"}}, "topologyKey": "kubernetes.io/hostname"}
    s.enqueue(pod("pod-1", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}), 0, "")
    ((kind, _, _, data),) = run(s, 0)
    assert kind == "PodUnschedulable"
    assert data["message"].startswith("0/1 nodes are available: 1 node(s) didn't match pod affinity rules.")
    assert run(s, 5) == []  # in the unschedulable pool: a node-less tick moves nothing
    s.running(pod("pod-2", {"foo": "bar"}, node_name="node-1"), 5 * SECOND)
    s.pod_placed(5 * SECOND, emitter(5))
    assert [(k, w) for k, w, *_ in run(s, 15)] == [("PodScheduled", "node-1")]


def test_a_pod_refused_by_resources_only_is_not_moved_by_a_pod_added() -> None:
    """NodeResourcesFit does not register pod adds (``EventsToRegister``): such a pod stays
    in the unschedulable pool when another pod is bound."""
    s = scheduler([node("node-1", {})], [])
    s.enqueue(pod("big", containers=[{"name": "c", "resources": {"requests": {"cpu": "8"}}}]), 0, "")
    assert run(s, 0)[0][0] == "PodUnschedulable"
    s.running(pod("other", node_name="node-1"), SECOND)
    s.pod_placed(SECOND, emitter(1))
    assert run(s, 30) == []
