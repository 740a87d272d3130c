"""NodeAffinity, NodeName, NodePorts, PodTopologySpread and InterPodAffinity filters on
upstream's own cases (each test names its upstream file and case). Topology spread and
inter-pod affinity run both ways, node by node and over every node at once, and must agree."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import schedule_one
from ledgerlet_core.scheduling.cyclestate import prefilter
from ledgerlet_core.scheduling.filters import run_filters
from ledgerlet_core.scheduling.info import PodInfo
from ledgerlet_core.scheduling.plugins.inter_pod_affinity import ERR_AFFINITY, ERR_ANTI, ERR_EXISTING_ANTI
from tests.scheduling.plugin_support import (
    SUCCESS,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    affinity_filter_codes,
    exists,
    node,
    place,
    pod,
    spread,
    spread_filter_codes,
    vector_parts,
)

ERR_POD = "node(s) didn't match Pod's node affinity/selector"


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


# -- NodeAffinity (nodeaffinity/node_affinity_test.go: TestNodeAffinity) ---------------------------------
@pytest.mark.parametrize(
    ("case", "spec", "labels", "fits"),
    [
        ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, False),
        ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, True),
        ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, True),
        ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, False),
        (
            "Pod with matchExpressions using In operator that matches the existing node",
            {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})},
            {"foo": "bar"},
            True,
        ),
        (
            "Pod with matchExpressions using Gt operator that matches the existing node",
            {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})},
            {"kernel-version": "0206"},
            True,
        ),
        (
            "Pod with matchExpressions using NotIn operator that matches the existing node",
            {"affinity": required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})},
            {"mem-type": "DDR3"},
            True,
        ),
        (
            "Pod with matchExpressions using Exists operator that matches the existing node",
            {"affinity": required({"matchExpressions": [expr("GPU", "Exists")]})},
            {"GPU": "NVIDIA-GRID-K1"},
            True,
        ),
        (
            "Pod with affinity that don't match node's labels won't schedule onto the node",
            {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})},
            {"foo": "bar"},
            False,
        ),
        (
            "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule "
            "onto the node",
            {"affinity": required({"matchExpressions": []})},
            {"foo": "bar"},
            False,
        ),
        ("Pod with no Affinity will schedule onto a node", {}, {"foo": "bar"}, True),
        (
            "Pod with Affinity but nil NodeSelector will schedule onto a node",
            {"affinity": {"nodeAffinity": {}}},
            {"foo": "bar"},
            True,
        ),
        (
            "Pod with multiple matchExpressions ANDed that matches the existing node",
            {"affinity": required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]})},
            {"GPU": "NVIDIA-GRID-K1"},
            True,
        ),
        (
            "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
            {"affinity": required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]})},
            {"GPU": "NVIDIA-GRID-K1"},
            False,
        ),
        (
            "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule "
            "onto the node",
            {
                "affinity": required(
                    {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                    {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
                )
            },
            {"foo": "bar"},
            True,
        ),
        (
            "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
            "satisfied, will schedule onto the node",
            {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
            {"foo": "bar"},
            True,
        ),
        (
            "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
            "deprecating) is not satisfied, won't schedule onto the node",
            {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
            {"foo": "barrrrrr"},
            False,
        ),
        (
            "Pod with an invalid value in Affinity term won't be scheduled onto the node",
            {"affinity": required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})},
            {"foo": "bar"},
            False,
        ),
    ],
)
def test_node_affinity_filter(case: str, spec: dict[str, Any], labels: dict[str, str], fits: bool) -> None:
    status = run_filters(pod(**spec), node("node1", labels))
    assert status.fits is fits, case
    if not fits:
        assert (status.code, status.reasons, status.plugin) == (UNRESOLVABLE, (ERR_POD,), "NodeAffinity")


@pytest.mark.parametrize(
    ("case", "terms", "node_name", "labels", "fits"),
    [
        (
            "Pod with matchFields using In operator that matches the existing node",
            [{"matchFields": [expr("metadata.name", "In", "node1")]}],
            "node1",
            {},
            True,
        ),
        (
            "Pod with matchFields using In operator that does not match the existing node",
            [{"matchFields": [expr("metadata.name", "In", "node1")]}],
            "node2",
            {},
            False,
        ),
        (
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            [
                {"matchFields": [expr("metadata.name", "In", "node1")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            ],
            "node2",
            {"foo": "bar"},
            True,
        ),
        (
            "Pod with one term: matchFields does not match, but matchExpressions matches",
            [{"matchFields": [expr("metadata.name", "In", "node1")], "matchExpressions": [expr("foo", "In", "bar")]}],
            "node2",
            {"foo": "bar"},
            False,
        ),
    ],
)
def test_node_affinity_match_fields(
    case: str, terms: list[dict[str, Any]], node_name: str, labels: dict[str, str], fits: bool
) -> None:
    assert run_filters(pod(affinity=required(*terms)), node(node_name, labels)).fits is fits, case


def test_node_affinity_prefilter_narrows_the_nodes_and_counts_the_others_in_the_message() -> None:
    """``NodeAffinity.PreFilter``: a term naming nodes gives a node set; the nodes left out
    are "node(s) didn't satisfy plugin(s) [NodeAffinity]" (``findNodesThatFitPod``); terms
    whose names exclude each other: "pod affinity terms conflict"
    (node_affinity_test.go: "Pod with matchFields using In operator that matches the existing node")."""
    nodes = place([node("node1"), node("node2"), node("node3")], [])
    incoming = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "node2")]}))
    state = prefilter(incoming, nodes)
    assert state.node_names == frozenset({"node2"})
    for vector in (False, True):
        parts = dict(zip(("table", "index"), vector_parts(nodes), strict=True)) if vector else {}
        got = schedule_one(incoming, nodes, {}, [], SchedulerConfig(), now=0, start_index=0, **parts)
        assert (got.node, got.evaluated) == ("node2", 1)
    full = place([node("node1", {"x": "y"}), node("node2"), node("node3")], [])
    pinned = pod(
        affinity=required(
            {"matchFields": [expr("metadata.name", "In", "node1")], "matchExpressions": [expr("x", "In", "z")]}
        )
    )
    got = schedule_one(pinned, full, {}, [], SchedulerConfig(), now=0, start_index=0)
    assert got.message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    conflict = pod(
        affinity=required({"matchFields": [expr("metadata.name", "In", "node1"), expr("metadata.name", "In", "node2")]})
    )
    got = schedule_one(conflict, full, {}, [], SchedulerConfig(), now=0, start_index=0)
    assert got.reasons == ["pod affinity terms conflict"]
    assert got.message.startswith("0/3 nodes are available: pod affinity terms conflict. preemption:")


# -- NodeName (nodename/node_name_test.go: TestNodeName) --------------------------------------------------------
@pytest.mark.parametrize(
    ("case", "pod_node", "fits"),
    [("no host specified", "", True), ("host matches", "foo", True), ("host doesn't match", "bar", False)],
)
def test_node_name(case: str, pod_node: str, fits: bool) -> None:
    incoming = pod(nodeName=pod_node) if pod_node else pod()
    status = run_filters(incoming, node("foo"))
    assert status.fits is fits, case
    if not fits:
        assert (status.code, status.reasons) == (UNRESOLVABLE, ("node(s) didn't match the requested node name",))


# -- NodePorts (nodeports/node_ports_test.go: TestNodePorts) ----------------------------------------------------
def ported(name: str, *ports: str, node_name: str = "m1") -> PodInfo:
    """``newPod(host, "PROTO/IP/PORT", ...)``."""
    specs = []
    for p in ports:
        proto, ip, port = p.split("/")
        specs.append({"containerPort": int(port), "hostPort": int(port), "protocol": proto, "hostIP": ip})
    return pod(name, node_name=node_name, containers=[{"name": "c", "image": "pause", "ports": specs}])


@pytest.mark.parametrize(
    ("case", "want", "have", "fits"),
    [
        ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
        ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
        ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
        ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
        ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
        ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
        (
            "first tcp port conflict",
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            False,
        ),
        ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
        (
            "TCP hostPort conflict due to 0.0.0.0 hostIP",
            ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            False,
        ),
        ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
        ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            ["UDP/127.0.0.1/8001"],
            ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            False,
        ),
    ],
)
def test_node_ports(case: str, want: list[str], have: list[str], fits: bool) -> None:
    [m1] = place([node("m1")], [ported("existing", *have)])
    status = run_filters(ported("incoming", *want, node_name=""), m1)
    assert status.fits is fits, case
    if not fits:
        assert (status.code, status.reasons, status.plugin) == (
            UNSCHEDULABLE,
            ("node(s) didn't have free ports for the requested pod ports",),
            "NodePorts",
        )


def test_node_ports_count_sidecars_but_not_other_init_containers() -> None:
    """node_ports_test.go: "non-sidecar initContainer using hostPort" (skipped) and "TCP
    hostPort conflict from sidecar initContainer"."""
    [m1] = place([node("m1")], [ported("existing", "TCP/0.0.0.0/8001")])
    port = [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]
    plain_init = pod(initContainers=[{"name": "i", "image": "pause", "ports": port}])
    sidecar = pod(initContainers=[{"name": "i", "image": "pause", "ports": port, "restartPolicy": "Always"}])
    assert plain_init.sched.host_ports == ()
    assert run_filters(plain_init, m1).fits
    assert not run_filters(sidecar, m1).fits


# -- PodTopologySpread (podtopologyspread/filtering_test.go: TestSingleConstraint) ------------------------------
def four_nodes(**b_labels: str) -> list[Any]:
    b = {"zone": "zone1", "node": "node-b"} if not b_labels else {**b_labels, "node": "node-b"}
    return [
        node("node-a", {"zone": "zone1", "node": "node-a"}),
        node("node-b", b),
        node("node-x", {"zone": "zone2", "node": "node-x"}),
        node("node-y", {"zone": "zone2", "node": "node-y"}),
    ]


def foo_pods(*where: str, labels: dict[str, str] | None = None) -> list[PodInfo]:
    return [pod(f"p-{n}-{i}", labels if labels is not None else {"foo": ""}, node_name=n) for i, n in enumerate(where)]


def zone_pod(key: str = "zone", skew: int = 1, **spec: Any) -> PodInfo:
    return pod("p", {"foo": ""}, topologySpreadConstraints=[spread(skew, key, "DoNotSchedule", exists("foo"))], **spec)


S, U, UU = SUCCESS, UNSCHEDULABLE, UNRESOLVABLE


@pytest.mark.parametrize(
    ("case", "incoming", "nodes", "existing", "want"),
    [
        ("no existing pods", zone_pod(), four_nodes(), [], [S, S, S, S]),
        (
            "no existing pods, incoming pod doesn't match itself",
            pod("p", {"foo": ""}, topologySpreadConstraints=[spread(1, "zone", "DoNotSchedule", exists("bar"))]),
            four_nodes(),
            [],
            [S, S, S, S],
        ),
        (
            "existing pods in a different namespace do not count",
            zone_pod(),
            four_nodes(),
            [
                pod("p-a1", {"foo": ""}, namespace="ns1", node_name="node-a"),
                pod("p-b1", {"foo": ""}, namespace="ns2", node_name="node-a"),
                *foo_pods("node-x", "node-y"),
            ],
            [S, S, U, U],
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            zone_pod(),
            four_nodes(),
            foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
            [S, S, S, S],
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            zone_pod(),
            four_nodes(zon="zone1"),
            foo_pods("node-a", "node-b", "node-x", "node-y"),
            [S, UU, U, U],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            zone_pod("node"),
            four_nodes(),
            foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
            [U, U, S, U],
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            zone_pod("node", 2),
            four_nodes(),
            foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
            [U, S, S, U],
        ),
        (
            "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            pod("p", {"bar": ""}, topologySpreadConstraints=[spread(1, "node", "DoNotSchedule", exists("foo"))]),
            four_nodes(),
            foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
            [U, S, S, U],
        ),
        (
            "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            zone_pod("node", affinity=required({"matchExpressions": [expr("node", "In", "node-a", "node-y")]})),
            four_nodes(),
            foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
            [S, S, S, U],
        ),
    ],
)
def test_spread_single_constraint(
    case: str, incoming: PodInfo, nodes: list[Any], existing: list[PodInfo], want: list[str]
) -> None:
    codes = spread_filter_codes(incoming, place(nodes, existing))
    assert [codes[n.name] for n in nodes] == want, case


def test_spread_terminating_pods_are_not_counted() -> None:
    """filtering_test.go TestSingleConstraint: "terminating Pods should be excluded"."""
    nodes = place(
        [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
        foo_pods("node-a", "node-b"),
    )
    next(iter(nodes[0].pods.values())).terminating = True
    assert spread_filter_codes(zone_pod("node"), nodes) == {"node-a": S, "node-b": U}


def test_spread_all_nodes_lack_the_key() -> None:
    """filtering_test.go: "pod cannot be scheduled as all nodes don't have label 'rack'"."""
    nodes = place([node("node-a", {"zone": "zone1"}), node("node-x", {"zone": "zone2"})], [])
    assert spread_filter_codes(zone_pod("rack"), nodes) == {"node-a": UU, "node-x": UU}


# -- InterPodAffinity (interpodaffinity/filtering_test.go: TestRequiredAffinitySingleNode) --------------------
SECURITY_SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
MACHINE1 = {"region": "r1", "zone": "z11"}


def term(key: str, op: str, *values: str, topology: str = "region", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": [expr(key, op, *values)]}, "topologyKey": topology, **extra}


def with_terms(
    labels: dict[str, str],
    affinity: list[dict[str, Any]] | None,
    anti: list[dict[str, Any]] | None,
    node_name: str = "",
) -> PodInfo:
    """``createPodWithAffinityTerms``."""
    a: dict[str, Any] = {}
    if affinity:
        a["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        a["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return pod(f"p-{node_name or 'in'}", labels, node_name=node_name, affinity=a)


AFF_OK, AFF_BAD = (S, ""), (UU, ERR_AFFINITY)


@pytest.mark.parametrize(
    ("case", "incoming", "existing", "want"),
    [
        (
            "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            pod(),
            [],
            AFF_OK,
        ),
        (
            "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
            "matches the existing pod",
            with_terms(S1, [term("service", "In", "securityscan", "value2")], None),
            [pod("e", SECURITY_SCAN, node_name="machine1")],
            AFF_OK,
        ),
        (
            "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
            "operator in labelSelector that matches the existing pod",
            with_terms(S1, [term("service", "NotIn", "securityscan3", "value3")], None),
            [pod("e", SECURITY_SCAN, node_name="machine1")],
            AFF_OK,
        ),
        (
            "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            with_terms(S1, [term("service", "In", "securityscan", "value2", namespaces=["DiffNameSpace"])], None),
            [pod("e", SECURITY_SCAN, namespace="ns", node_name="machine1")],
            AFF_BAD,
        ),
        (
            "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            with_terms(SECURITY_SCAN, [term("service", "In", "antivirusscan", "value2")], None),
            [pod("e", SECURITY_SCAN, node_name="machine1")],
            AFF_BAD,
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
            with_terms(
                S1,
                [term("service", "In", "securityscan", "value2")],
                [term("service", "In", "antivirusscan", "value2", topology="node")],
            ),
            [pod("e", SECURITY_SCAN, node_name="machine1")],
            AFF_OK,
        ),
        (
            "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            with_terms(
                S1,
                [term("service", "In", "securityscan", "value2")],
                [term("service", "In", "securityscan", "value2", topology="zone")],
            ),
            [pod("e", SECURITY_SCAN, node_name="machine1")],
            (U, ERR_ANTI),
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
            "existing pod",
            with_terms(
                SECURITY_SCAN,
                [term("service", "In", "securityscan", "value2")],
                [term("service", "In", "antivirusscan", "value2", topology="node")],
            ),
            [
                with_terms(
                    SECURITY_SCAN, None, [term("service", "In", "securityscan", "value2", topology="zone")], "machine1"
                )
            ],
            (U, ERR_EXISTING_ANTI),
        ),
        (
            "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            with_terms(SECURITY_SCAN, [term("service", "NotIn", "securityscan", "value2")], None),
            [pod("e", SECURITY_SCAN, node_name="machine2")],
            AFF_BAD,
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
            "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod("in", SECURITY_SCAN),
            [
                with_terms(
                    SECURITY_SCAN, None, [term("service", "In", "securityscan", "value2", topology="zone")], "machine1"
                )
            ],
            (U, ERR_EXISTING_ANTI),
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
            "satisfy PodAntiAffinity symmetry with the existing pod",
            pod("in", SECURITY_SCAN),
            [
                with_terms(
                    SECURITY_SCAN,
                    None,
                    [term("service", "NotIn", "securityscan", "value2", topology="zone")],
                    "machine1",
                )
            ],
            AFF_OK,
        ),
    ],
)
def test_required_affinity_single_node(
    case: str, incoming: PodInfo, existing: list[PodInfo], want: tuple[str, str]
) -> None:
    nodes = place([node("machine1", MACHINE1)], existing)
    assert affinity_filter_codes(incoming, nodes)["machine1"] == want, case


def test_a_pod_that_matches_its_own_affinity_may_be_the_first() -> None:
    """``satisfyPodAffinity``: no pod anywhere matches the terms, the pod matches them itself
    and the node has every topology key: it may go first (filtering_test.go:
    "satisfies the PodAffinity with different label Operators..." family; the self-match rule)."""
    first = with_terms(SECURITY_SCAN, [term("service", "In", "securityscan")], None)
    nodes = place([node("machine1", MACHINE1), node("machine2", {"zone": "z"})], [])
    assert affinity_filter_codes(first, nodes) == {"machine1": AFF_OK, "machine2": AFF_BAD}


def test_spread_and_anti_affinity_are_unschedulable_so_preemption_can_help() -> None:
    """Removing a victim satisfies anti-affinity: the node is a candidate and the victim goes
    (integration filters_test.go TestInterPodAffinity's preemption cases, default_preemption
    "preemption to resolve pod anti-affinity")."""
    low = with_terms({"app": "db"}, None, None, "machine1")
    low.priority = 0
    nodes = place([node("machine1", {"kubernetes.io/hostname": "machine1"})], [low])
    incoming = with_terms({"app": "web"}, None, [term("app", "In", "db", topology="kubernetes.io/hostname")])
    incoming.priority = 100
    for vector in (False, True):
        parts = dict(zip(("table", "index"), vector_parts(nodes), strict=True)) if vector else {}
        got = schedule_one(incoming, nodes, {}, [], SchedulerConfig(), now=0, start_index=0, **parts)
        assert got.statuses["machine1"].reasons == (ERR_ANTI,)
        assert got.preemption is not None and [v.key for v in got.preemption.victims] == [low.key]


def test_spread_taints_policy_counts_only_tolerated_nodes() -> None:
    """nodeTaintsPolicy Honor leaves a tainted node's pods out of the counts (integration
    filters_test.go TestPodTopologySpreadFilter: "NodeTaintsPolicy honored, pods spread
    across zone as 2/1"); Ignore counts them ("NodeTaintsPolicy ignored...")."""
    taint = [Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")]
    nodes = place(
        [
            node("node-1", {"node": "node-1", "zone": "zone-1", "foo": ""}),
            node("node-2", {"node": "node-2", "zone": "zone-1", "foo": ""}),
            node("node-3", {"node": "node-3", "zone": "zone-2"}, taints=taint),
            node("node-4", {"node": "node-4", "zone": "zone-2", "foo": ""}),
        ],
        foo_pods("node-1", "node-2", "node-3", "node-4"),
    )
    honor = pod(
        "p",
        {"foo": ""},
        topologySpreadConstraints=[spread(1, "zone", "DoNotSchedule", exists("foo"), nodeTaintsPolicy="Honor")],
    )
    assert spread_filter_codes(honor, nodes) == {"node-1": U, "node-2": U, "node-3": S, "node-4": S}
    assert spread_filter_codes(zone_pod(), nodes) == {"node-1": S, "node-2": S, "node-3": S, "node-4": S}
