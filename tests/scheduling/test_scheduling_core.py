"""The pure scheduler: requests, filters, queue, admission, quota, preemption.

Examples are upstream's where they exist (``component-helpers/resource/helpers_test.go``,
``backoff_queue_test.go``, ``validation_test.go``, ``default_preemption_test.go``) and
scheduler_perf's PreemptionBasic shape (4 x 900m low pods on 4-CPU nodes, a 3-CPU pod).
"""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.apiserver.admission import (
    admit_pod,
)
from ledgerlet_core.apiserver.priority_admission import AdmissionError
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import LabelSelector, RuntimeClass, Taint
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import schedule_one
from ledgerlet_core.scheduling.filters import fit_error, run_filters
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    PDB,
    num_candidates,
    preempt,
    select_victims_on_node,
)
from ledgerlet_core.scheduling.queue import QueuedPod, backoff_duration, failed, move_all, ready
from ledgerlet_core.scheduling.scores import num_feasible_nodes_to_find
from ledgerlet_core.scheduling.status import FITS, UNSCHEDULABLE, NodeStatus
from tests.support.pods import c, make_pod

S = 10**9
CPU = 10**9  # nanocores in a core
Mi = (1 << 20) * 10**9


def info(
    name: str, cpu_m: int, priority: int = 0, *, start: int | None = 0, labels: dict[str, str] | None = None
) -> PodInfo:
    p = pod_info(make_pod(name, {"containers": [c("a", f"{cpu_m}m", "500Mi")]}, labels=labels or {}))
    p.priority = priority
    p.start = start
    return p


def node(name: str, order: int, cpu: int = 4, pods: list[PodInfo] | None = None, max_pods: int = 110) -> NodeInfo:
    n = NodeInfo(name, order, {}, {"cpu": cpu * CPU, "memory": 32 * 1024 * Mi, "pods": max_pods * S})
    for p in pods or []:
        n.add(p)
    return n


# -- requests (RH: PodRequests) ----------------------------------------------------------
@pytest.mark.parametrize(
    ("init", "regular", "overhead", "want_cpu"),
    [
        ([c("i", "4")], [c("a", "1")], None, "4"),  # init 4 vs containers 1 -> 4
        ([c("i", "2")], [c("a", "2"), c("b", "3")], None, "5"),  # 2+3 vs init 2 -> 5
        ([c("i", "2")], [c("a", "2"), c("b", "3")], {"cpu": "1"}, "6"),  # plus overhead 1 -> 6
        ([c("s", "1", sidecar=True)], [c("a", "1")], None, "2"),  # sidecar 1 + regular 1
        (
            [
                c("i1", "5"),
                c("s1", "1", sidecar=True),
                c("s2", "2", sidecar=True),
                c("i2", "5"),
                c("s3", "3", sidecar=True),
            ],
            [c("a", "1")],
            None,
            "8",
        ),
        ([c("s", "10", sidecar=True), c("i", "200")], [c("a", "100")], None, "210"),
    ],
)
def test_effective_requests_follow_upstreams_examples(
    init: list[dict[str, Any]], regular: list[dict[str, Any]], overhead: dict[str, str] | None, want_cpu: str
) -> None:
    spec: dict[str, Any] = {"initContainers": init, "containers": regular}
    if overhead:
        spec["overhead"] = overhead
    assert pod_info(make_pod("p", spec)).requests["cpu"] == int(want_cpu) * CPU


def test_kata_fc_pod_requests_2250m_and_320Mi_with_its_overhead() -> None:
    rc = convert(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "kata-fc"},
            "handler": "kata-fc",
            "overhead": {"podFixed": {"memory": "120Mi", "cpu": "250m"}},
        },
        RuntimeClass,
    )
    pod = make_pod(
        "test-pod",
        {
            "runtimeClassName": "kata-fc",
            "containers": [
                c("busybox-ctr", "500m", "100Mi", limits=True),
                c("nginx-ctr", "1500m", "100Mi", limits=True),
            ],
        },
    )
    admitted = admit_pod(pod, {}, {"kata-fc": rc})
    assert {k: str(v) for k, v in (admitted.spec.overhead or {}).items()} == {"cpu": "250m", "memory": "120Mi"}
    p = pod_info(admitted)
    assert p.requests["cpu"] == 2250 * 10**6 and p.requests["memory"] == 320 * Mi
    # the same overhead pre-set is accepted (upstream), another is refused, so is an unknown class
    same = make_pod(
        "s", {"runtimeClassName": "kata-fc", "overhead": {"cpu": "250m", "memory": "120Mi"}, "containers": [c("a")]}
    )
    assert admit_pod(same, {}, {"kata-fc": rc}).spec.overhead is not None
    other = make_pod("o", {"runtimeClassName": "kata-fc", "overhead": {"cpu": "1"}, "containers": [c("a")]})
    with pytest.raises(AdmissionError, match="Pod's Overhead doesn't match RuntimeClass's defined Overhead"):
        admit_pod(other, {}, {"kata-fc": rc})
    with pytest.raises(AdmissionError, match='RuntimeClass "gvisor" not found'):
        admit_pod(make_pod("g", {"runtimeClassName": "gvisor", "containers": [c("a")]}), {}, {"kata-fc": rc})
    with pytest.raises(AdmissionError, match="Pod Overhead set without corresponding RuntimeClass"):
        admit_pod(make_pod("n", {"overhead": {"cpu": "1"}, "containers": [c("a")]}), {}, {})


# -- NodeResourcesFit and the FitError sentence ------------------------------------------------
def test_fit_reports_pod_count_first_then_every_short_resource() -> None:
    full = node("n", 0, cpu=1, pods=[info("x", 900)], max_pods=1)
    status = run_filters(info("p", 500), full)
    assert status == NodeStatus(UNSCHEDULABLE, ("Too many pods", "Insufficient cpu"), "NodeResourcesFit")
    # equality fits (strict >), and a pod requesting nothing is only checked for the pod count
    assert run_filters(info("q", 100), node("m", 0, cpu=1, pods=[info("y", 900)])).fits
    nothing = pod_info(make_pod("z", {"containers": [{"name": "a"}]}))
    assert run_filters(nothing, node("o", 0, cpu=0)).fits


def test_fit_error_sorts_counts_as_strings_and_appends_the_preemption_message() -> None:
    statuses = [NodeStatus(UNSCHEDULABLE, ("Insufficient cpu",))] * 10 + [
        NodeStatus(UNSCHEDULABLE, ("Too many pods",))
    ] * 2
    assert fit_error(12, statuses) == "0/12 nodes are available: 10 Insufficient cpu, 2 Too many pods."
    three = [NodeStatus(UNSCHEDULABLE, ("Insufficient cpu",))] * 3
    assert fit_error(
        3,
        three,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
    ) == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod."
    )


def test_taints_unschedulable_and_selector_are_unresolvable() -> None:
    n = node("n", 0)
    n.taints = [Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")]
    status = run_filters(info("p", 100), n)
    assert status.code == "UnschedulableAndUnresolvable"
    assert status.reasons == ("node(s) had untolerated taint {node.kubernetes.io/not-ready: }",)
    n.taints = [Taint(key="k", value="v", effect="PreferNoSchedule")]
    assert run_filters(info("p", 100), n).fits  # only scoring looks at PreferNoSchedule
    n.taints, n.unschedulable = [], True
    assert run_filters(info("p", 100), n).reasons == ("node(s) were unschedulable",)


def test_nominated_pods_of_at_least_equal_priority_count_on_their_node() -> None:
    n = node("n", 0, pods=[info("x", 2000)])
    me = info("me", 1500, priority=5)
    assert run_filters(me, n, [info("lower", 1000, priority=1)]).fits
    assert not run_filters(me, n, [info("higher", 1000, priority=9)]).fits


def test_percentage_of_nodes_to_score_is_upstreams_adaptive_default() -> None:
    assert num_feasible_nodes_to_find(0, 50) == 50
    assert num_feasible_nodes_to_find(0, 500) == 230  # 50 - 500/125 = 46%
    assert num_feasible_nodes_to_find(0, 5000) == 500  # 50 - 40 = 10%
    assert num_feasible_nodes_to_find(0, 10000) == 500  # floor of 5%
    assert num_feasible_nodes_to_find(1, 1000) == 100  # never fewer than 100


# -- queue -------------------------------------------------------------------------------------
def test_backoff_doubles_from_1s_to_10s() -> None:
    assert [backoff_duration(a, S, 10 * S) // S for a in range(7)] == [0, 1, 2, 4, 8, 10, 10]


def test_queue_orders_by_priority_then_timestamp_and_backs_off_after_a_failure() -> None:
    q = {
        "low-early": QueuedPod("low-early", 1, 0, 1),
        "high-late": QueuedPod("high-late", 10, 5 * S, 2),
        "low-late": QueuedPod("low-late", 1, 3 * S, 3),
    }
    assert [p.key for p in ready(q, 5 * S)] == ["high-late", "low-early", "low-late"]
    failed(q["high-late"], 5 * S)
    assert [p.key for p in ready(q, 5 * S)] == ["low-early", "low-late"]  # waits for a cluster event
    assert move_all(q, 5 * S, S, 10 * S) == [6 * S]  # then 1 s after its failed attempt
    assert next(p.key for p in ready(q, 6 * S)) == "high-late"


# -- PriorityClass rules --------------------------------------------------------------------------
def basic_node(name: str, order: int, labels: dict[str, str] | None = None) -> NodeInfo:
    """PreemptionBasic: four 900m low-priority pods on a 4-CPU node."""
    return node(name, order, pods=[info(f"{name}-low-{i}", 900, start=i * S, labels=labels) for i in range(4)])


def test_remove_all_then_reprieve_keeps_the_most_important_victim() -> None:
    high = info("high", 3000, priority=10)
    n = basic_node("n1", 0)
    result = select_victims_on_node(high, n, [], [], now=100 * S)
    assert not isinstance(result, NodeStatus)
    victims, violations = result
    # the earliest-started low pod is the most important and is spared; the three others go
    assert [v.key for v in victims] == ["default/n1-low-1", "default/n1-low-2", "default/n1-low-3"]
    assert violations == 0
    # equal priority is never preempted
    same = select_victims_on_node(info("same", 3000, priority=0), n, [], [], now=0)
    assert isinstance(same, NodeStatus) and same.reasons == ("No preemption victims found for incoming pod",)


def test_node_pick_prefers_fewest_pdb_violations_then_lowest_victims() -> None:
    high = info("high", 3000, priority=10)
    protected = basic_node("n1", 0, labels={"app": "db"})
    free = basic_node("n2", 1, labels={"app": "batch"})
    pdb = PDB("db", "default", LabelSelector(match_labels={"app": "db"}), disruptions_allowed=0)
    statuses = {"n1": run_filters(high, protected), "n2": run_filters(high, free)}
    out = preempt(high, [protected, free], statuses, [pdb], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate == "n2" and out.decided_by == "fewest PDB violations"
    assert {c.node: c.pdb_violations for c in out.candidates} == {"n1": 3, "n2": 0}
    # only the PDB-protected node can help: PDBs are best effort
    n2_full = node("n2", 1, pods=[info("big", 3800, priority=20)])
    statuses = {"n1": run_filters(high, protected), "n2": run_filters(high, n2_full)}
    out = preempt(high, [protected, n2_full], statuses, [pdb], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate == "n1" and len(out.victims) == 3


def test_node_pick_chain_lowest_top_priority_then_fewest_victims_then_latest_start() -> None:
    high = info("high", 3000, priority=100)
    a = node("a", 0, pods=[info("a1", 3500, priority=50)])
    b = node("b", 1, pods=[info("b1", 3500, priority=5)])
    st = {n.name: run_filters(high, n) for n in (a, b)}
    out = preempt(high, [a, b], st, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate == "b" and out.decided_by == "lowest highest-priority victim"
    c1 = node("c1", 0, pods=[info("x1", 1500, priority=5), info("x2", 1500, priority=5)])
    c2 = node("c2", 1, pods=[info("y1", 3500, priority=5)])
    st = {n.name: run_filters(high, n) for n in (c1, c2)}
    out = preempt(high, [c1, c2], st, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate == "c2" and out.decided_by == "smallest sum of victim priorities"
    old = node("old", 0, pods=[info("o", 3500, priority=5, start=10 * S)])
    young = node("young", 1, pods=[info("y", 3500, priority=5, start=50 * S)])
    st = {n.name: run_filters(high, n) for n in (old, young)}
    out = preempt(high, [old, young], st, [], {}, now=100 * S, min_percentage=10, min_absolute=100)
    assert out.nominate == "young" and out.decided_by == "latest start of highest-priority victims"
    twin1 = node("t1", 0, pods=[info("t1p", 3500, priority=5, start=S)])
    twin2 = node("t2", 1, pods=[info("t2p", 3500, priority=5, start=S)])
    st = {n.name: run_filters(high, n) for n in (twin1, twin2)}
    out = preempt(high, [twin1, twin2], st, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate == "t1" and out.decided_by.startswith("node order") and out.tied == ["t1", "t2"]


def test_never_and_waiting_for_terminating_victims_are_not_eligible() -> None:
    never = info("never", 3000, priority=10)
    never.preemption_policy = "Never"
    n = basic_node("n1", 0)
    out = preempt(never, [n], {"n1": run_filters(never, n)}, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate is None and out.message == f"preemption: {NOT_ELIGIBLE_NEVER}"
    waiting = info("w", 3000, priority=10)
    waiting.nominated = "n1"
    victim = next(iter(n.pods.values()))
    victim.terminating, victim.by_preemption = True, True
    out = preempt(waiting, [n], {"n1": run_filters(waiting, n)}, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert out.nominate is None and out.message == f"preemption: {NOT_ELIGIBLE_TERMINATING}"


def test_unresolvable_nodes_are_never_candidates() -> None:
    high = info("high", 3000, priority=10)
    n = basic_node("n1", 0)
    n.taints = [Taint(key="dedicated", value="gpu", effect="NoSchedule")]
    out = preempt(high, [n], {"n1": run_filters(high, n)}, [], {}, now=0, min_percentage=10, min_absolute=100)
    assert (
        out.nominate == ""
        and out.message == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_number_of_candidates_dry_run() -> None:
    assert num_candidates(5000, 10, 100) == 500
    assert num_candidates(500, 10, 100) == 100
    assert num_candidates(50, 10, 100) == 50


def test_a_scheduling_cycle_tries_the_nominated_node_first_and_ties_go_to_node_order() -> None:
    p = info("p", 1000)
    nodes = [node("a", 0), node("b", 1)]
    out = schedule_one(p, nodes, {}, [], SchedulerConfig(), now=0, start_index=0)
    assert out.node == "a" and "tied" in out.why
    p.nominated = "b"
    out = schedule_one(p, nodes, {}, [], SchedulerConfig(), now=0, start_index=0)
    assert out.node == "b" and out.why == "its nominated node fits"
    assert FITS.fits
