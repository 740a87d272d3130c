"""Pod requests/limits, QoS, oom_score_adj and object decoding."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.decode import decode_object
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.k8s.priority import is_critical_pod
from ledgerlet_core.model.k8s.qos import compute_pod_qos, container_oom_score_adj
from ledgerlet_core.model.k8s.resources import kubelet_request, pod_limits, pod_requests

Gi = 1 << 30


def c(
    name: str, req: dict[str, str] | None = None, lim: dict[str, str] | None = None, restart: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": req or {}, "limits": lim or {}}}
    if restart:
        out["restartPolicy"] = restart
    return out


def mk(containers: list[dict[str, Any]], inits: list[dict[str, Any]] | None = None, **spec: Any) -> Pod:
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": containers, "initContainers": inits or [], **spec},
    }
    return apply_defaults(convert(raw, Pod))  # type: ignore[return-value]


def cpu(p: Pod, **kw: Any) -> int:
    return pod_requests(p, **kw)["cpu"].milli_value()


@pytest.mark.parametrize(
    ("containers", "inits", "overhead", "expected_milli"),
    [
        ([c("a", {"cpu": "1"})], [c("i", {"cpu": "4"})], None, 4000),  # init 4 vs containers 1 -> 4
        ([c("a", {"cpu": "2"}), c("b", {"cpu": "3"})], [c("i", {"cpu": "2"})], None, 5000),
        ([c("a", {"cpu": "2"}), c("b", {"cpu": "3"})], [c("i", {"cpu": "2"})], {"cpu": "1"}, 6000),
        ([c("a", {"cpu": "1"})], [c("s", {"cpu": "1"}, restart="Always")], None, 2000),  # sidecar + regular
        # [init 5, side 1, side 2, init 5, side 3] + regular 1 -> max(5, 5+1+2, 1+2+3+1) = 8
        (
            [c("a", {"cpu": "1"})],
            [
                c("i1", {"cpu": "5"}),
                c("s1", {"cpu": "1"}, restart="Always"),
                c("s2", {"cpu": "2"}, restart="Always"),
                c("i2", {"cpu": "5"}),
                c("s3", {"cpu": "3"}, restart="Always"),
            ],
            None,
            8000,
        ),
        ([c("a", {"cpu": "100"})], [c("s", {"cpu": "10"}, restart="Always"), c("i", {"cpu": "200"})], None, 210000),
    ],
)
def test_pod_requests_upstream_examples(
    containers: list[dict[str, Any]], inits: list[dict[str, Any]], overhead: dict[str, str] | None, expected_milli: int
) -> None:
    p = mk(containers, inits, **({"overhead": overhead} if overhead else {}))
    assert cpu(p) == expected_milli


def test_kata_fc_seed_pod_needs_2250m_and_320mi() -> None:
    # Seed 002: limits only (defaulted into requests) + RuntimeClass kata-fc overhead 250m/120Mi.
    p = mk(
        [
            c("busybox-ctr", lim={"cpu": "500m", "memory": "100Mi"}),
            c("nginx-ctr", lim={"cpu": "1500m", "memory": "100Mi"}),
        ],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    req = pod_requests(p)
    assert str(req["cpu"]) == "2250m" and str(req["memory"]) == "320Mi"
    lim = pod_limits(p)
    assert str(lim["cpu"]) == "2250m" and str(lim["memory"]) == "320Mi"


def test_limits_get_overhead_only_where_limited() -> None:
    p = mk([c("a", {"cpu": "1"}, {"cpu": "2"})], overhead={"cpu": "250m", "memory": "120Mi"})
    lim = pod_limits(p)
    assert str(lim["cpu"]) == "2250m" and "memory" not in lim


def test_kubelet_request_skips_overhead_for_zero_requests() -> None:
    p = mk([c("a")], overhead={"memory": "120Mi"})
    assert kubelet_request(p, "memory").value() == 0
    assert pod_requests(p)["memory"].value() == 120 * (1 << 20)  # the scheduler's view adds it


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([c("a")], "BestEffort"),
        ([c("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        ([c("a", lim={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),  # defaulting copies limits into requests
        ([c("a", {"memory": "1Gi"})], "Burstable"),
        ([c("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}), c("b")], "Burstable"),
        ([c("a", {"ephemeral-storage": "1Gi"})], "BestEffort"),
    ],
)
def test_qos(containers: list[dict[str, Any]], expected: str) -> None:
    assert compute_pod_qos(mk(containers)) == expected


def test_pod_level_resources_decide_qos() -> None:
    p = mk([c("a")], resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})
    assert compute_pod_qos(p) == "Guaranteed"


def test_oom_score_adj() -> None:
    node_memory = 10 * Gi
    g = mk([c("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})])
    be = mk([c("a")])
    bu = mk([c("a", {"memory": "5Gi"})])
    tiny = mk([c("a", {"memory": "1"})])
    huge = mk([c("a", {"memory": "9.99Gi"})])
    assert container_oom_score_adj(g, g.spec.containers[0], node_memory) == -997
    assert container_oom_score_adj(be, be.spec.containers[0], node_memory) == 1000
    assert container_oom_score_adj(bu, bu.spec.containers[0], node_memory) == 500
    assert container_oom_score_adj(tiny, tiny.spec.containers[0], node_memory) == 999  # 1000 -> 999
    assert container_oom_score_adj(huge, huge.spec.containers[0], node_memory) == 3  # floor 3
    node_critical = mk([c("a", {"memory": "5Gi"})], priority=2_000_001_000, priorityClassName="system-node-critical")
    assert container_oom_score_adj(node_critical, node_critical.spec.containers[0], node_memory) == -997


def test_critical_pods() -> None:
    assert is_critical_pod(mk([c("a")], priority=2_000_000_000))
    assert not is_critical_pod(mk([c("a")], priority=1_999_999_999))
    static = apply_defaults(
        convert(
            {
                "kind": "Pod",
                "metadata": {"name": "s", "annotations": {"kubernetes.io/config.source": "file"}},
                "spec": {"containers": [c("a")]},
            },
            Pod,
        )
    )
    assert is_critical_pod(static)  # type: ignore[arg-type]


def test_defaults() -> None:
    p = mk([c("a", lim={"memory": "1Gi"})])
    assert p.metadata.namespace == "default"
    assert p.spec.termination_grace_period_seconds == 30
    assert p.spec.restart_policy == "Always" and p.spec.scheduler_name == "default-scheduler"
    assert str(p.spec.containers[0].resources.requests["memory"]) == "1Gi"


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        (
            {
                "kind": "Pod",
                "metadata": {"name": "x"},
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "10Gx"}}}]},
            },
            "spec.containers[0].resources.requests.memory",
            "invalid quantity",
        ),
        ({"kind": "Pod", "metadata": {"name": "x"}, "spec": {}}, "spec.containers", "Required value"),
        (
            {"kind": "Pod", "metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "a"}]}},
            "metadata.name",
            "RFC 1123 subdomain",
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "x"},
                "spec": {
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]
                },
            },
            "spec.containers[0].resources.requests.cpu",
            "must be less than or equal to cpu limit of 1",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "x"}, "spec": {"priority": "high", "containers": [{"name": "a"}]}},
            "spec.priority",
            "expected `int`",
        ),
        (
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"memory": []}}},
            "status.capacity.memory",
            "expected a quantity",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "a"}, {"name": "a"}]}},
            "spec.containers[1].name",
            'Duplicate value: "a"',
        ),
    ],
)
def test_decode_errors_name_the_field(raw: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        decode_object(raw, label="objects[0]")
    assert err.value.field == field
    assert message.lower() in err.value.message.lower()
    assert err.value.obj == "objects[0]"


def test_objects_always_serialise_with_kind_and_api_version() -> None:
    from ledgerlet_core.model.codec import object_builtins
    from ledgerlet_core.model.k8s.objects import ObjectMeta

    built = Pod(metadata=ObjectMeta(name="x"))  # kind and apiVersion are the model's defaults
    out = object_builtins(built)
    assert out["kind"] == "Pod" and out["apiVersion"] == "v1" and out["metadata"] == {"name": "x"}
