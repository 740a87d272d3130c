"""What follows from a pod's spec is remembered by the spec object, never by equal looks
or by a recycled identity: pods of one template share one spec, others get their own."""

from __future__ import annotations

import msgspec
import pytest

from ledgerlet_core.kubelet.eviction.local_storage import has_local_storage_limits
from ledgerlet_core.model.k8s import spec_memo
from ledgerlet_core.model.k8s.objects import PodSpec
from ledgerlet_core.model.k8s.spec_memo import per_spec
from ledgerlet_core.node_sim.stats import pod_images
from ledgerlet_core.scheduling.info import pod_info
from tests.core.helpers import pod


def test_a_value_is_worked_out_once_per_spec_object() -> None:
    calls: list[int] = []

    @per_spec
    def containers(spec: PodSpec) -> int:
        calls.append(1)
        return len(spec.containers)

    a = pod("a")
    b = msgspec.structs.replace(pod("b"), spec=a.spec)  # (stamped from one template)
    assert containers(a.spec) == containers(b.spec) == 1
    assert len(calls) == 1
    other = pod("c")  # an equal spec, but its own object: worked out again
    assert containers(other.spec) == 1
    assert len(calls) == 2


def test_a_table_that_fills_up_starts_again_and_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_memo, "KEPT", 8)

    @per_spec
    def name(spec: PodSpec) -> str:
        return spec.containers[0].name

    pods = [pod(f"p{i}") for i in range(spec_memo.KEPT * 2 + 3)]
    assert [name(p.spec) for p in pods] == [p.metadata.name for p in pods]
    assert name(pods[0].spec) == "p0"


def test_the_shared_answers_follow_each_spec() -> None:
    plain = pod("plain")
    limited = pod("limited", limits={"ephemeral-storage": "1Gi"})
    sized = pod("sized", volumes=[{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}])
    assert not has_local_storage_limits(plain)
    assert has_local_storage_limits(limited)
    assert has_local_storage_limits(sized)
    imaged = pod("imaged", extra_spec={"containers": [{"name": "c", "image": "nginx:1"}]})
    assert pod_images(imaged) == frozenset({"nginx:1"})
    assert pod_images(plain) == frozenset()


def test_the_schedulers_view_of_pods_sharing_a_spec_keeps_each_pods_own_identity() -> None:
    a = pod("a", requests={"cpu": "100m", "memory": "64Mi"}, extra_spec={"nodeName": ""})
    b = msgspec.structs.replace(pod("b"), spec=a.spec)
    ia, ib = pod_info(a), pod_info(b)
    assert (ia.key, ib.key) == ("default/a", "default/b")
    assert ia.requests == ib.requests and ia.requests["cpu"] == 100 * 10**6
    assert ia.sched is ib.sched
    # another namespace: the same spec object, but its own constraints looked up
    c = msgspec.structs.replace(pod("c", namespace="other"), spec=a.spec)
    assert pod_info(c).namespace == "other"
