"""A Node's declared ``capacity.pods`` is its kubelet's maxPods unless maxPods is given for
that node (scenario spec §1; ``nodestatus/setters.go: MachineInfo``)."""

from __future__ import annotations

import json
from pathlib import Path

from ledgerlet_core.kubelet.config import config_for_node, resolve_kubelet_config
from ledgerlet_core.kubelet.node_status import status_capacity
from ledgerlet_core.model.quantity import parse_quantity
from tests.services.run_helpers import run_file


def pods(
    capacity: dict[str, str], kubelet: dict[str, object] | None = None, annotations: dict[str, str] | None = None
) -> str:
    config = config_for_node(kubelet or {}, annotations or {}) if annotations else resolve_kubelet_config(kubelet or {})
    return str(status_capacity({k: parse_quantity(v) for k, v in capacity.items()}, config)["pods"])


def test_the_declared_pod_capacity_is_kept_unless_max_pods_is_given() -> None:
    assert pods({"cpu": "4", "pods": "32"}) == "32"  # a recorded node: what its kubelet publishes
    assert pods({"cpu": "4"}) == "110"  # nothing declared: upstream's default
    assert pods({"cpu": "4", "pods": "32"}, {"maxPods": 50}) == "50"  # given for every node
    override = {"ledgerlet/kubelet-config": json.dumps({"maxPods": 8})}
    assert pods({"cpu": "4", "pods": "32"}, {}, override) == "8"  # given for this node
    assert pods({"cpu": "4", "pods": "32"}, {"podsPerCore": 2}) == "8"  # podsPerCore still caps it


SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: small-node}
spec:
  duration: 5s
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "4", memory: 8Gi, pods: "2"}}}
    - {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {nodeName: n1, containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {nodeName: n1, containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: c}, spec: {containers: [{name: c}]}}
"""


async def test_a_node_declaring_two_pods_refuses_a_third(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    (unschedulable,) = [r for r in records if r["type"] == "PodUnschedulable"][:1]
    assert unschedulable["data"]["reasons"] == ["Too many pods"]
