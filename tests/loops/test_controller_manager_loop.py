"""The controller manager loop, driven by hand: it creates pods as templates say and
leaves admission to the API server."""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import ObjectCreated
from ledgerlet_services.loops.controller_manager import ControllerManager

from .harness import Drive, node, types

REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "default", "uid": "rs"},
    "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
}


def test_a_created_pod_carries_no_admission_and_a_refusal_is_retried_with_back_off() -> None:
    d = Drive(ControllerManager())
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600))
    d.apply(node("n1"))
    d.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "d"},
            "value": 7,
            "globalDefault": True,
        }
    )
    d.apply(REPLICA_SET)
    (created,) = d.tick(0)
    obj = msgspec.json.decode(created.data, type=ObjectCreated).object
    assert obj["metadata"]["name"].startswith("web-")
    assert "priority" not in obj["spec"] and "priorityClassName" not in obj["spec"]  # the API server decides
    refused = dec.PodRejected(reason="Forbidden", message="quota", admitter="apiserver")
    d.decision(refused, 0, pod=created.pod)
    assert types(d.tick(5)) == []
    again = d.tick(10)  # 10 s back-off after the first refusal
    assert types(again) == ["ObjectCreated"] and again[0].pod != created.pod
