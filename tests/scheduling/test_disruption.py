"""PodDisruptionBudget status as the disruption controller counts it, on upstream's own
cases (``pkg/controller/disruption/disruption_test.go``). Each check is upstream's
``VerifyPdbStatus(allowed, currentHealthy, desiredHealthy, expectedPods)``.

A pod is Ready here when its kubelet has started it (``PodInfo.start`` set)."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import LabelSelector, Pod, PodDisruptionBudget
from ledgerlet_core.model.k8s.selection import label_selector
from ledgerlet_core.scheduling.disruption import Budget, Controller, budget_status, scaled_value
from ledgerlet_core.scheduling.info import PodInfo, pod_info

FOO_BAR = {"foo": "bar"}
Controllers = dict[tuple[str, str, str], Controller]


def budget(
    *, min_available: int | str | None = None, max_unavailable: int | str | None = None, **spec: Any
) -> PodDisruptionBudget:
    """``newMinAvailablePodDisruptionBudget`` / ``newMaxUnavailablePodDisruptionBudget``:
    selector foo=bar unless told."""
    body: dict[str, Any] = {"selector": {"matchLabels": FOO_BAR}, **spec}
    if min_available is not None:
        body["minAvailable"] = min_available
    if max_unavailable is not None:
        body["maxUnavailable"] = max_unavailable
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "foobar", "namespace": "default"},
    }
    return convert({**doc, "spec": body}, PodDisruptionBudget)


def pod(
    name: str, owner: tuple[str, str] | None = None, *, ready: bool = True, labels: dict[str, str] | None = None
) -> PodInfo:
    """``newPod``: labelled foo=bar, Ready; ``updatePodOwnerTo..``: a controller reference."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels if labels is not None else FOO_BAR}
    if owner is not None:
        kind, owner_name = owner
        api = "v1" if kind == "ReplicationController" else "apps/v1"
        meta["ownerReferences"] = [
            {"apiVersion": api, "kind": kind, "name": owner_name, "uid": "u", "controller": True}
        ]
    made = apply_defaults(
        convert({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}, Pod)
    )
    assert isinstance(made, Pod)
    info = pod_info(made)
    info.start = 0 if ready else None
    return info


def controller(
    kind: str, replicas: int, name: str = "foobar", labels: dict[str, str] | None = None, deployment: str = ""
) -> Controller:
    selector = label_selector(LabelSelector(match_labels=labels or FOO_BAR))
    return Controller("default", kind, name, selector, replicas, deployment)


def registry(*cs: Controller) -> Controllers:
    return {(c.namespace, c.kind, c.name): c for c in cs}


def status(
    pdb: PodDisruptionBudget, pods: list[PodInfo], controllers: Controllers | None = None
) -> tuple[int, int, int, int]:
    b: Budget = budget_status(pdb, pods, controllers or {})
    return b.allowed, b.healthy, b.desired, b.expected


def test_no_selector_matches_every_pod() -> None:
    """TestNoSelector: an empty selector matches all pods."""
    pdb = budget(min_available=3, selector={})
    assert status(pdb, []) == (0, 0, 3, 0)
    assert status(pdb, [pod("yo-yo-yo", labels={})]) == (0, 1, 3, 1)


def test_a_missing_selector_matches_no_pod() -> None:
    """``getPodsForPdb``: a nil selector selects nothing."""
    doc = {"metadata": {"name": "foobar", "namespace": "default"}, "spec": {"minAvailable": 1}}
    assert status(convert(doc, PodDisruptionBudget), [pod("a"), pod("b")]) == (0, 0, 1, 0)


def test_unavailable() -> None:
    """TestUnavailable: counts go up as pods come; an unready pod is not healthy."""
    pdb = budget(min_available=3)
    pods: list[PodInfo] = []
    for i in range(4):
        assert status(pdb, pods) == (0, i, 3, i)
        pods.append(pod(f"yo-yo-yo {i}"))
    assert status(pdb, pods) == (1, 4, 3, 4)
    pods[0].start = None
    assert status(pdb, pods) == (0, 3, 3, 4)


def test_a_terminating_pod_is_not_healthy() -> None:
    """``countHealthyPods``: a pod with a deletionTimestamp does not count."""
    pods = [pod(f"p{i}") for i in range(4)]
    pods[1].terminating = True
    assert status(budget(min_available=3), pods) == (0, 3, 3, 4)


def test_integer_max_unavailable_allows_nothing_for_pods_without_a_controller() -> None:
    """TestIntegerMaxUnavailable."""
    pdb = budget(max_unavailable=1)
    assert status(pdb, [])[0] == 0
    assert status(pdb, [pod("naked")])[0] == 0


def test_integer_max_unavailable_with_scaling() -> None:
    """TestIntegerMaxUnavailableWithScaling."""
    pdb = budget(max_unavailable=2)
    p = pod("pod", ("ReplicaSet", "foobar"))
    assert status(pdb, [p], registry(controller("ReplicaSet", 7))) == (0, 1, 5, 7)
    assert status(pdb, [p], registry(controller("ReplicaSet", 5))) == (0, 1, 3, 5)


def test_percentage_max_unavailable_with_scaling() -> None:
    """TestPercentageMaxUnavailableWithScaling: 30% of 7 rounds up to 3, of 3 to 1."""
    pdb = budget(max_unavailable="30%")
    p = pod("pod", ("ReplicaSet", "foobar"))
    assert status(pdb, [p], registry(controller("ReplicaSet", 7))) == (0, 1, 4, 7)
    assert status(pdb, [p], registry(controller("ReplicaSet", 3))) == (0, 1, 2, 3)


def test_naked_pod() -> None:
    """TestNakedPod / TestStatusForUnmanagedPod: a percentage over an unmanaged pod allows
    nothing (the pod is left out of the expected count, no error)."""
    pdb = budget(min_available="28%")
    assert status(pdb, [])[0] == 0
    assert status(pdb, [pod("naked")]) == (0, 1, 0, 0)


def test_unsupported_controller_pod_fails_safe() -> None:
    """TestUnsupportedControllerPod: a controller the finders do not know fails the sync
    (``failSafe``: disruptionsAllowed 0)."""
    pdb = budget(min_available="28%")
    assert status(pdb, [pod("naked", ("TestWorkload", "fake-controller"))])[0] == 0


def test_a_controller_without_scale_fails_safe() -> None:
    """``getScaleController``: a Job or DaemonSet does not implement the scale subresource."""
    pdb = budget(max_unavailable=1)
    pods = [pod(f"p{i}", ("Job", "batch")) for i in range(3)]
    assert status(pdb, pods, registry(controller("Job", 3, "batch")))[0] == 0
    pods = [pod(f"d{i}", ("DaemonSet", "agent")) for i in range(3)]
    assert status(pdb, pods, registry(controller("DaemonSet", 1, "agent")))[0] == 0


def test_replica_set() -> None:
    """TestReplicaSet: a ReplicaSet's scale counts even when no Deployment owns it."""
    pdb = budget(min_available="20%")
    assert status(pdb, [pod("pod", ("ReplicaSet", "foobar"))], registry(controller("ReplicaSet", 10))) == (0, 1, 2, 10)


def test_a_deployments_replica_set_counts_the_deployments_scale() -> None:
    """``getPodDeployment``: the pod's ReplicaSet is the Deployment's, whose scale counts
    (once for all its pods); a ReplicaSet whose Deployment is gone counts its own."""
    pdb = budget(max_unavailable=1)
    pods = [pod(f"web-{i}", ("ReplicaSet", "web-abc")) for i in range(3)]
    rs = controller("ReplicaSet", 3, "web-abc", deployment="web")
    assert status(pdb, pods, registry(rs, controller("Deployment", 5, "web"))) == (0, 3, 4, 5)
    assert status(pdb, pods, registry(rs)) == (1, 3, 2, 3)


def test_multiple_pods_of_one_controller_count_its_scale_once() -> None:
    """TestMultipleControllers: two pods of one RC of scale 1, 1% of 1 rounds up to 1, two
    healthy: one disruption allowed; no controller yet: none."""
    pdb = budget(min_available="1%")
    assert status(pdb, [pod("pod 0"), pod("pod 1")])[0] == 0
    pods = [pod(f"pod {i}", ("ReplicationController", "rc 1")) for i in range(2)]
    assert status(pdb, pods, registry(controller("ReplicationController", 1, "rc 1"))) == (1, 2, 1, 1)


RC_LABELS = {"foo": "bar", "baz": "quux"}


def test_replication_controller() -> None:
    """TestReplicationController: 34% of 3 rounds up to 2; a rogue pod without controller
    matches the budget, counts as healthy, and is left out of the expected count."""
    pdb = budget(min_available="34%")
    rcs = registry(controller("ReplicationController", 3, labels=RC_LABELS))
    assert status(pdb, [], rcs) == (0, 0, 0, 0)
    pods: list[PodInfo] = []
    for i in range(3):
        pods.append(pod(f"foobar {i}", ("ReplicationController", "foobar"), labels=RC_LABELS))
        assert status(pdb, pods, rcs) == ((0, i + 1, 2, 3) if i < 2 else (1, 3, 2, 3))
    pods.append(pod("rogue"))
    assert status(pdb, pods, rcs)[0] == 2


def test_stateful_set_controller() -> None:
    """TestStatefulSetController."""
    pdb = budget(min_available="34%")
    sts = registry(controller("StatefulSet", 3, labels=RC_LABELS))
    assert status(pdb, [], sts) == (0, 0, 0, 0)
    pods: list[PodInfo] = []
    for i in range(3):
        pods.append(pod(f"foobar {i}", ("StatefulSet", "foobar"), labels=RC_LABELS))
        assert status(pdb, pods, sts) == ((0, i + 1, 2, 3) if i < 2 else (1, 3, 2, 3))


def test_two_controllers() -> None:
    """TestTwoControllers: an RC and a ReplicaSet of 11 each under one 28% budget."""
    d_labels = {"foo": "bar", "baz": "quuux"}
    size, minimum_one, minimum_two = 11, 4, 7
    pdb = budget(min_available="28%")
    cs = registry(controller("ReplicationController", size, labels=RC_LABELS))
    assert status(pdb, [], cs) == (0, 0, 0, 0)
    pods: list[PodInfo] = []
    unavailable = size - minimum_one - 1
    for i in range(1, size + 1):
        pods.append(pod(f"quux {i}", ("ReplicationController", "foobar"), ready=i > unavailable, labels=RC_LABELS))
        if i <= unavailable:
            want = (0, 0, minimum_one, size)
        elif i - unavailable <= minimum_one:
            want = (0, i - unavailable, minimum_one, size)
        else:
            want = (1, i - unavailable, minimum_one, size)
        assert status(pdb, pods, cs) == want, i
    cs = registry(
        controller("ReplicationController", size, labels=RC_LABELS),
        controller("Deployment", size, labels=d_labels),
        controller("ReplicaSet", size, labels=d_labels),
    )
    assert status(pdb, pods, cs) == (1, minimum_one + 1, minimum_one, size)
    unavailable = 2 * size - (minimum_two + 2) - unavailable
    for i in range(1, size + 1):
        pods.append(pod(f"quuux {i}", ("ReplicaSet", "foobar"), ready=i > unavailable, labels=d_labels))
        healthy = minimum_one + 1 + max(i - unavailable, 0)
        if i <= unavailable:
            want = (0, minimum_one + 1, minimum_two, 2 * size)
        elif i - unavailable <= minimum_two - (minimum_one + 1):
            want = (0, healthy, minimum_two, 2 * size)
        else:
            want = (i - unavailable - (minimum_two - (minimum_one + 1)), healthy, minimum_two, 2 * size)
        assert status(pdb, pods, cs) == want, i
    assert status(pdb, pods, cs) == (2, 2 + minimum_two, minimum_two, 2 * size)
    pods[size - 1].start = None
    assert status(pdb, pods, cs) == (1, 1 + minimum_two, minimum_two, 2 * size)
    pods[size - 2].start = None
    assert status(pdb, pods, cs) == (0, minimum_two, minimum_two, 2 * size)
    pods[size - 1].start = 0
    assert status(pdb, pods, cs) == (1, 1 + minimum_two, minimum_two, 2 * size)


def test_percentages_round_up() -> None:
    """``intstr.GetScaledValueFromIntOrPercent(.., roundUp=true)``."""
    assert [scaled_value("34%", 3), scaled_value("28%", 11), scaled_value("28%", 22), scaled_value("1%", 1)] == [
        2,
        4,
        7,
        1,
    ]
    assert [scaled_value("30%", 7), scaled_value("30%", 3), scaled_value("0%", 5), scaled_value(2, 9)] == [3, 1, 0, 2]
