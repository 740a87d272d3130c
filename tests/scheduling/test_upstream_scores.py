"""The default profile's scores, on upstream's own test cases, each run node by node and
over every node at once (the two must agree).

Cases from ``pkg/scheduler/framework/plugins``: ``nodeaffinity/node_affinity_test.go``
(TestNodeAffinityPriority), ``imagelocality/image_locality_test.go``
(TestImageLocalityPriority), ``podtopologyspread/scoring_test.go``
(TestPodTopologySpreadScore) and ``interpodaffinity/scoring_test.go``
(TestPreferredAffinity).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ledgerlet_core.model.k8s.objects import LabelSelector, Taint
from ledgerlet_core.model.k8s.selection import label_selector
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins import image_locality, node_affinity
from ledgerlet_core.scheduling.terms import normalized_image
from tests.scheduling.plugin_support import (
    affinity_scores,
    exists,
    node,
    place,
    pod,
    profile_scores,
    spread,
    spread_scores,
)

MB = 1024 * 1024


# -- NodeAffinity (node_affinity_test.go: TestNodeAffinityPriority) ---------------------------------
def preferred(*weighted: tuple[int, dict[str, list[str]]]) -> dict[str, Any]:
    terms = [
        {
            "weight": w,
            "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in reqs.items()]},
        }
        for w, reqs in weighted
    ]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, {"foo": ["bar"]}))
AFFINITY2 = preferred(
    (2, {"foo": ["bar"]}), (4, {"key": ["value"]}), (5, {"foo": ["bar"], "key": ["value"], "az": ["az1"]})
)


@pytest.mark.parametrize(
    ("case", "affinity", "labels", "want"),
    [
        ("all nodes are same priority as NodeAffinity is nil", None, [LABEL1, LABEL2, LABEL3], None),
        (
            "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
            AFFINITY1,
            [LABEL4, LABEL2, LABEL3],
            [0, 0, 0],
        ),
        (
            "only node1 matches the preferred scheduling requirements of pod",
            AFFINITY1,
            [LABEL1, LABEL2, LABEL3],
            [100, 0, 0],
        ),
        (
            "all nodes matches the preferred scheduling requirements of pod but with different priorities",
            AFFINITY2,
            [LABEL1, LABEL5, LABEL2],
            [18, 100, 36],
        ),
    ],
)
def test_node_affinity_priority(
    case: str, affinity: dict[str, Any] | None, labels: list[dict[str, str]], want: list[int] | None
) -> None:
    nodes = place([node(f"node{i}", ls) for i, ls in enumerate(labels)], [])
    incoming = pod("p", affinity=affinity) if affinity else pod("p")
    # None: PreScore skips ("Skip is returned in PreScore when NodeAffinity is nil"), no score recorded
    assert profile_scores(incoming, nodes, node_affinity.NAME) == want, case


# -- ImageLocality (image_locality_test.go: TestImageLocalityPriority) ------------------------------
def image_node(name: str, *images: tuple[list[str], int]) -> NodeInfo:
    """``makeImageNode``: ``status.images`` read as the cache reads them."""
    n = node(name)
    n.images = {normalized_image(x): size * MB for names, size in images for x in names}
    return n


def node403002000(name: str) -> NodeInfo:
    return image_node(
        name,
        (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
        (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
        (["gcr.io/2000:latest"], 2000),
    )


def node25010(name: str) -> NodeInfo:
    return image_node(name, (["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))


def node60040900(name: str) -> NodeInfo:
    return image_node(name, (["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900))


def node300600900(name: str) -> NodeInfo:
    return image_node(name, (["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900))


def node400030(name: str) -> NodeInfo:
    return image_node(name, (["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))


def node203040(name: str) -> NodeInfo:
    return image_node(name, (["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))


def images_pod(*images: str, init: tuple[str, ...] = ()) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": x} for i, x in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": x} for i, x in enumerate(init)]
    return pod("p", **spec)


@pytest.mark.parametrize(
    ("case", "incoming", "nodes", "want"),
    [
        (
            "two images spread on two nodes, prefer the larger image one",
            images_pod("gcr.io/40", "gcr.io/250"),
            [node403002000("node1"), node25010("node2")],
            [0, 5],
        ),
        (
            "two images on one node, prefer this node",
            images_pod("gcr.io/40", "gcr.io/300"),
            [node403002000("node1"), node25010("node2")],
            [7, 0],
        ),
        (
            "if exceed limit, use limit",
            images_pod("gcr.io/10", "gcr.io/4000"),
            [node400030("node1"), node25010("node2")],
            [100, 0],
        ),
        (
            "if exceed limit, use limit (with node which has no images present)",
            images_pod("gcr.io/10", "gcr.io/4000"),
            [node400030("node1"), node25010("node2"), image_node("node3")],
            [66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            images_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
            [node60040900("node1"), node300600900("node2"), image_node("node3")],
            [32, 36, 0],
        ),
        (
            "pod with multiple small images",
            images_pod("gcr.io/30", "gcr.io/40"),
            [node203040("node1"), node400030("node2")],
            [1, 0],
        ),
        (
            "include InitContainers: two images spread on two nodes, prefer the larger image one",
            images_pod("gcr.io/30", init=("gcr.io/300",)),
            [node403002000("node1"), node203040("node2")],
            [6, 0],
        ),
    ],
)
def test_image_locality_priority(case: str, incoming: PodInfo, nodes: list[NodeInfo], want: list[int]) -> None:
    assert profile_scores(incoming, place(nodes, []), image_locality.NAME) == want, case


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("root", "root:latest"),  # "add :latest postfix 1"
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),  # "add :latest postfix 2"
        ("root:tag", "root:tag"),  # "keep it as is 1"
        ("root@sha256:" + "0" * 64, "root@sha256:" + "0" * 64),  # "keep it as is 2"
    ],
)
def test_normalized_image_name(given: str, want: str) -> None:
    """image_locality_test.go TestNormalizedImageName."""
    assert normalized_image(given) == want


# -- PodTopologySpread (scoring_test.go: TestPodTopologySpreadScore) -------------------------------
FOO = exists("foo")
BAR = exists("bar")


def hostname_nodes(*names: str, key: str = "kubernetes.io/hostname") -> list[NodeInfo]:
    return [node(n, {key: n}) for n in names]


def zone_nodes(*pairs: tuple[str, str]) -> list[NodeInfo]:
    return [node(n, {"zone": z, "kubernetes.io/hostname": n}) for n, z in pairs]


_names = itertools.count()


def existing(*where: str, labels: dict[str, str] | None = None, **kw: Any) -> list[PodInfo]:
    """Pods (each its own name) on the nodes given, labelled ``foo`` unless told."""
    return [pod(f"p-{n}-{next(_names)}", {"foo": ""} if labels is None else labels, node_name=n, **kw) for n in where]


def spread_pod(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> PodInfo:
    return pod("p", labels if labels is not None else {"foo": ""}, topologySpreadConstraints=list(constraints), **spec)


HOST = "kubernetes.io/hostname"
ANY = "ScheduleAnyway"


def score_case(
    incoming: PodInfo, nodes: list[NodeInfo], failed: list[NodeInfo], pods: list[PodInfo]
) -> list[int] | None:
    everyone = place([*nodes, *failed], pods)
    return spread_scores(incoming, nodes, everyone)


@pytest.mark.parametrize(
    ("case", "incoming", "nodes", "failed", "pods", "want"),
    [
        (
            "one constraint on node, no existing pods",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b"),
            [],
            [],
            [100, 100],
        ),
        (
            "one constraint on node, only one node is candidate",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a"),
            hostname_nodes("node-b"),
            existing("node-a", "node-a", "node-b"),
            [100],
        ),
        (
            "one constraint on node, all nodes have the same number of matching pods",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b"),
            [],
            existing("node-a", "node-b"),
            [100, 100],
        ),
        (
            "one constraint on node, all 4 nodes are candidates",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b", "node-c", "node-d"),
            [],
            existing("node-a", "node-a", "node-b", "node-d", "node-d", "node-d"),
            [20, 60, 100, 0],
        ),
        (
            "one constraint on node, null selector",
            spread_pod(spread(1, HOST, ANY, None)),
            hostname_nodes("node-a", "node-b", "node-c", "node-d"),
            [],
            existing("node-a", "node-a", "node-b", "node-d", "node-d", "node-d"),
            [100, 100, 100, 100],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            spread_pod(spread(2, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b", "node-c", "node-d"),
            [],
            existing("node-a", "node-a", "node-b", "node-d", "node-d", "node-d"),
            [33, 66, 100, 16],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            spread_pod(spread(3, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b", "node-c", "node-d"),
            [],
            existing(*["node-a"] * 4, *["node-b"] * 3, *["node-c"] * 2, "node-d"),
            [44, 66, 77, 100],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b", "node-x"),
            hostname_nodes("node-y"),
            existing(*["node-a"] * 4, *["node-b"] * 2, "node-x", *["node-y"] * 3),
            [33, 83, 100],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            spread_pod(spread(1, HOST, ANY, FOO)),
            [node("node-a", {HOST: "node-a"}), node("node-b", {"n": "node-b"}), node("node-x", {HOST: "node-x"})],
            hostname_nodes("node-y"),
            existing(*["node-a"] * 4, *["node-b"] * 2, "node-x", *["node-y"] * 3),
            [16, 0, 100],
        ),
        (
            "one constraint on zone, 3 out of 4 nodes are candidates",
            spread_pod(spread(1, "zone", ANY, FOO)),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
            zone_nodes(("node-y", "zone2")),
            existing(*["node-a"] * 4, *["node-b"] * 2, "node-x", *["node-y"] * 3),
            [75, 75, 100],
        ),
        (
            "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            spread_pod(spread(1, "zone", ANY, FOO), spread(1, HOST, ANY, FOO)),
            zone_nodes(("node-a", "zone1"), ("node-x", "zone2")),
            zone_nodes(("node-b", "zone1"), ("node-y", "zone2")),
            existing("node-a", "node-a", "node-b", "node-x", "node-x", *["node-y"] * 4),
            [100, 63],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors",
            spread_pod(spread(1, "zone", ANY, FOO), spread(1, HOST, ANY, BAR), labels={"foo": "", "bar": ""}),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")),
            [],
            [
                *existing("node-a"),
                *existing("node-b", labels={"foo": "", "bar": ""}),
                *existing("node-y"),
                *existing("node-y", labels={"bar": ""}),
            ],
            [60, 20, 100, 60],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
            spread_pod(spread(1, "zone", ANY, FOO), spread(1, HOST, ANY, BAR), labels={"foo": "", "bar": ""}),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")),
            [],
            [
                *existing("node-b", labels={"bar": ""}),
                *existing("node-x"),
                *existing("node-y", labels={"foo": "", "bar": ""}),
            ],
            [100, 60, 40, 0],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
            spread_pod(spread(1, "zone", ANY, FOO), spread(1, HOST, ANY, BAR), labels={"foo": "", "bar": ""}),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
            zone_nodes(("node-y", "zone2")),
            [
                *existing("node-a"),
                *existing("node-b", labels={"foo": "", "bar": ""}),
                *existing("node-y"),
                *existing("node-y", labels={"bar": ""}),
            ],
            [50, 25, 100],
        ),
        (
            "existing pods in a different namespace do not count",
            spread_pod(spread(1, HOST, ANY, FOO)),
            hostname_nodes("node-a", "node-b"),
            [],
            [*existing("node-a", namespace="ns1"), *existing("node-a", "node-b", "node-b")],
            [100, 33],
        ),
        (
            "minDomains has no effect when ScheduleAnyway",
            spread_pod(spread(2, "node", ANY, FOO, minDomains=10)),
            hostname_nodes("node-a", "node-b", "node-c", key="node"),
            [],
            existing("node-a", "node-a", "node-b", "node-b", "node-c"),
            [75, 75, 100],
        ),
        (
            "NodeAffinityPolicy honoed with labelSelectors",
            spread_pod(spread(1, "node", ANY, FOO), nodeSelector={"foo": ""}),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            [],
            existing("node-a", "node-a", "node-b", "node-c"),
            [0, 33, 100],
        ),
        (
            "NodeAffinityPolicy ignored with labelSelectors",
            spread_pod(spread(1, "node", ANY, FOO, nodeAffinityPolicy="Ignore"), nodeSelector={"foo": ""}),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            [],
            existing("node-a", "node-a", "node-b", "node-c"),
            [66, 100, 100],
        ),
        (
            "NodeAffinityPolicy honoed with nodeAffinity",
            spread_pod(
                spread(1, "node", ANY, FOO),
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
                            ]
                        }
                    }
                },
            ),
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            [],
            existing("node-a", "node-a", "node-b", "node-c"),
            [0, 33, 100],
        ),
        (
            "NodeTaintsPolicy honored",
            spread_pod(spread(1, "node", ANY, FOO, nodeTaintsPolicy="Honor")),
            [
                node("node-a", {"node": "node-a"}),
                node("node-b", {"node": "node-b"}),
                node(
                    "node-c",
                    {"node": "node-c"},
                    taints=[Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")],
                ),
            ],
            [],
            existing("node-a", "node-a", "node-b", "node-c"),
            [0, 33, 100],
        ),
        (
            "NodeTaintsPolicy ignored",
            spread_pod(spread(1, "node", ANY, FOO)),
            [
                node("node-a", {"node": "node-a"}),
                node("node-b", {"node": "node-b"}),
                node(
                    "node-c",
                    {"node": "node-c"},
                    taints=[Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")],
                ),
            ],
            [],
            existing("node-a", "node-a", "node-b", "node-c"),
            [66, 100, 100],
        ),
        (
            "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
            spread_pod(
                spread(1, "zone", ANY, {}, matchLabelKeys=["foo"]),
                spread(1, HOST, ANY, {}, matchLabelKeys=["bar"]),
                labels={"foo": "", "bar": ""},
            ),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2")),
            [],
            [
                *existing("node-a"),
                *existing("node-b", labels={"foo": "", "bar": ""}),
                *existing("node-c"),
                *existing("node-c", labels={"bar": ""}),
            ],
            [60, 20, 60, 100],
        ),
        (
            "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
            spread_pod(
                spread(1, "zone", ANY, FOO),
                spread(1, HOST, ANY, BAR, matchLabelKeys=["baz"]),
                labels={"foo": "", "bar": "", "baz": ""},
            ),
            zone_nodes(("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2")),
            [],
            [
                *existing("node-a"),
                *existing("node-b", labels={"foo": "", "bar": "", "baz": ""}),
                *existing("node-c"),
                *existing("node-c", labels={"bar": ""}),
                *existing("node-c", labels={"bar": "", "baz": ""}),
            ],
            [60, 20, 60, 100],
        ),
    ],
)
def test_pod_topology_spread_score(
    case: str,
    incoming: PodInfo,
    nodes: list[NodeInfo],
    failed: list[NodeInfo],
    pods: list[PodInfo],
    want: list[int],
) -> None:
    assert score_case(incoming, nodes, failed, pods) == want, case


def test_pod_topology_spread_score_terminating_pods_are_excluded() -> None:
    """scoring_test.go: "terminating Pods should be excluded"."""
    nodes = hostname_nodes("node-a", "node-b")
    pods = existing("node-a", "node-b")
    pods[0].terminating = True
    assert score_case(spread_pod(spread(1, HOST, ANY, FOO)), nodes, [], pods) == [100, 0]


def test_pod_topology_spread_system_default_constraints() -> None:
    """scoring_test.go: "system defaulting, nodes don't have zone, pods match service": the
    default constraints (zone maxSkew 5, hostname maxSkew 3, ScheduleAnyway) over the
    pods of the pod's controller; without zones, the hostname one scores as maxSkew=3."""
    nodes = hostname_nodes("node-a", "node-b", "node-c", "node-d")
    pods = existing(*["node-a"] * 4, *["node-b"] * 3, *["node-c"] * 2, "node-d")
    everyone = place(nodes, pods)
    selector = label_selector(LabelSelector(match_labels={"foo": ""}))
    incoming = pod("p", {"foo": ""})
    assert spread_scores(incoming, nodes, everyone, selector) == [44, 66, 77, 100]
    # with no controller to take a selector from, PreScore skips: no score
    assert spread_scores(incoming, nodes, everyone, None) is None


# -- InterPodAffinity (interpodaffinity/scoring_test.go: TestPreferredAffinity) -----------------------------
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
SEC_S1 = {"security": "S1"}
SEC_S2 = {"security": "S2"}


def weighted(weight: int, exprs: list[dict[str, Any]], topology: str) -> dict[str, Any]:
    return {
        "weight": weight,
        "podAffinityTerm": {"labelSelector": {"matchExpressions": exprs}, "topologyKey": topology},
    }


def sec_in(*values: str) -> dict[str, Any]:
    return {"key": "security", "operator": "In", "values": list(values)}


SECURITY_EXISTS = [
    {"key": "security", "operator": "Exists"},
    {"key": "wrongkey", "operator": "DoesNotExist"},
]
STAY_WITH_S1_IN_REGION = {
    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, [sec_in("S1")], "region")]}
}
STAY_WITH_S2_IN_REGION = {
    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(6, [sec_in("S2")], "region")]}
}
AFFINITY3 = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(8, [{"key": "security", "operator": "NotIn", "values": ["S1"]}, sec_in("S2")], "region"),
            weighted(2, SECURITY_EXISTS, "region"),
        ]
    }
}
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [sec_in("S1", "value2")]}, "topologyKey": "region"},
            {"labelSelector": {"matchExpressions": SECURITY_EXISTS}, "topologyKey": "region"},
        ]
    }
}
AWAY_FROM_S1_IN_AZ = {
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, [sec_in("S1")], "az")]}
}
AWAY_FROM_S2_IN_AZ = {
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, [sec_in("S2")], "az")]}
}
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(8, [sec_in("S1")], "region")]},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, [sec_in("S2")], "az")]},
}


def on(node_name: str, labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> PodInfo:
    extra = {"affinity": affinity} if affinity else {}
    return pod(f"e-{node_name}-{next(_names)}", labels or {}, node_name=node_name, **extra)


def incoming_pod(labels: dict[str, str] | None, affinity: dict[str, Any] | None = None) -> PodInfo:
    return pod("p", labels or {}, **({"affinity": affinity} if affinity else {}))


def named(*labels: dict[str, str]) -> list[NodeInfo]:
    return [node(f"node{i + 1}", ls) for i, ls in enumerate(labels)]


@pytest.mark.parametrize(
    ("case", "incoming", "pods", "nodes", "want"),
    [
        (
            "all nodes are same priority as Affinity is nil",
            incoming_pod(SEC_S1),
            [],
            named(RG_CHINA, RG_INDIA, AZ1),
            None,  # PreScore: Skip
        ),
        (
            "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
            "which doesn't match either pods in nodes or in topology key",
            incoming_pod(SEC_S1, STAY_WITH_S1_IN_REGION),
            [on("node1", SEC_S1), on("node2", SEC_S2), on("node3", SEC_S1)],
            named(RG_CHINA, RG_INDIA, AZ1),
            [100, 0, 0],
        ),
        (
            "All the nodes that have the same topology key & label value with one of them has an existing pod "
            "that match the affinity rules, have the same score",
            incoming_pod(None, STAY_WITH_S1_IN_REGION),
            [on("node1", SEC_S1)],
            named(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
            [100, 100, 0],
        ),
        (
            "Affinity: nodes in one region has more matching pods comparing to other region, so the region "
            "which has more matches will get high score",
            incoming_pod(SEC_S1, STAY_WITH_S2_IN_REGION),
            [on(n, SEC_S2) for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
            named(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
            [100, 0, 100, 100, 0],
        ),
        (
            "Affinity: different Label operators and values for pod affinity scheduling preference, "
            "including some match failures",
            incoming_pod(SEC_S1, AFFINITY3),
            [on("node1", SEC_S1), on("node2", SEC_S2), on("node3", SEC_S1)],
            named(RG_CHINA, RG_INDIA, AZ1),
            [20, 100, 0],
        ),
        (
            "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod "
            "affinity symmetry",
            incoming_pod(SEC_S2),
            [on("node1", SEC_S1, STAY_WITH_S1_IN_REGION), on("node2", SEC_S2, STAY_WITH_S2_IN_REGION)],
            named(RG_CHINA, RG_INDIA, AZ1),
            [0, 100, 0],
        ),
        (
            "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            incoming_pod(SEC_S1),
            [on("node1", SEC_S1, HARD_AFFINITY), on("node2", SEC_S2, HARD_AFFINITY)],
            named(RG_CHINA, RG_INDIA, AZ1),
            [100, 100, 0],
        ),
        (
            "Anti Affinity: pod that does not match existing pods in node will get high score",
            incoming_pod(SEC_S1, AWAY_FROM_S1_IN_AZ),
            [on("node1", SEC_S1), on("node2", SEC_S2)],
            named(AZ1, RG_CHINA),
            [0, 100],
        ),
        (
            "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher "
            "score comparing to others",
            incoming_pod(SEC_S1, AWAY_FROM_S1_IN_AZ),
            [on("node1", SEC_S1), on("node2", SEC_S1)],
            named(AZ1, RG_CHINA),
            [0, 100],
        ),
        (
            "Anti Affinity: one node has more matching pods comparing to other node, so the node which has "
            "more unmatches will get high score",
            incoming_pod(SEC_S1, AWAY_FROM_S1_IN_AZ),
            [on("node1", SEC_S1), on("node1", SEC_S1), on("node2", SEC_S2)],
            named(AZ1, RG_INDIA),
            [0, 100],
        ),
        (
            "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
            incoming_pod(SEC_S2),
            [on("node1", SEC_S1, AWAY_FROM_S2_IN_AZ), on("node2", SEC_S2, AWAY_FROM_S1_IN_AZ)],
            named(AZ1, AZ2),
            [0, 100],
        ),
        (
            "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in "
            "both pod affinity & anti affinity",
            incoming_pod(SEC_S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            [on("node1", SEC_S1), on("node2", SEC_S1)],
            named(RG_CHINA, AZ1),
            [100, 0],
        ),
        (
            "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and "
            "existing pods have the same labels",
            incoming_pod(SEC_S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            [on(n, SEC_S1) for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
            named(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
            [100, 0, 100, 100, 0],
        ),
        (
            "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution "
            "in both pod affinity & anti affinity & symmetry",
            incoming_pod(SEC_S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            [
                on("node1", SEC_S1),
                on("node2", SEC_S2),
                on("node3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                on("node4", None, AWAY_FROM_S1_IN_AZ),
            ],
            named(RG_CHINA, AZ1, RG_INDIA, AZ2),
            [100, 0, 100, 0],
        ),
        (
            "Avoid panic when partial nodes in a topology don't have pods with affinity",
            incoming_pod(SEC_S1),
            [on("node1", SEC_S1), on("node2", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
            named(RG_CHINA, RG_CHINA),
            [0, 0],
        ),
    ],
)
def test_preferred_affinity(
    case: str, incoming: PodInfo, pods: list[PodInfo], nodes: list[NodeInfo], want: list[int] | None
) -> None:
    assert affinity_scores(incoming, place(nodes, pods)) == want, case
