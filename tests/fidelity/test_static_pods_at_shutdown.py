"""Static pods keep their manifest's priority at shutdown (``nodeshutdown_manager.go:
groupByPriority`` reads the kubelet's own pod; only the mirror pod passes priority
admission): a static pod with only ``priorityClassName: system-node-critical`` is killed
in the lowest group, a known upstream defect ledgerlet follows and explain names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledgerlet_services.app.cli import main
from tests.services.run_helpers import run_file

SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: static-shutdown}
spec:
  duration: 2m
  kubeletConfig: {shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 10s}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: etcd-n1, namespace: kube-system, annotations: {kubernetes.io/config.source: file}}
      spec: {nodeName: n1, priorityClassName: system-node-critical, containers: [{name: etcd}]}
    - apiVersion: v1
      kind: Pod
      metadata: {name: apiserver-n1, namespace: kube-system, annotations: {kubernetes.io/config.source: file}}
      spec: {nodeName: n1, priorityClassName: system-node-critical, priority: 2000001000, containers: [{name: a}]}
    - apiVersion: v1
      kind: Pod
      metadata: {name: proxy, namespace: kube-system}
      spec: {nodeName: n1, priorityClassName: system-node-critical, containers: [{name: p}]}
    - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {nodeName: n1, containers: [{name: w}]}}
  events:
    - {at: 10s, shutdown: {node: n1}}
"""


async def test_a_static_pod_without_its_own_priority_is_killed_in_the_lowest_group(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    (plan,) = [r["data"] for r in records if r["type"] == "NodeShutdownStarted"]
    groups = {g["priority"]: sorted(g["pods"]) for g in plan["groups"]}
    assert groups == {
        0: ["default/web", "kube-system/etcd-n1"],  # the static pod's manifest sets no priority: 0
        2000000000: ["kube-system/apiserver-n1", "kube-system/proxy"],  # its own priority; an API pod
    }
    kills = {k["pod"]: k for g in plan["groups"] for k in g["kills"]}
    assert "static pod" in kills["kube-system/etcd-n1"]["priorityFrom"]
    assert "priorityFrom" in kills["kube-system/apiserver-n1"]  # static too, with its own priority
    assert "priorityFrom" not in kills["kube-system/proxy"]
    # the mirror pod is still critical for the scheduler and the API: admission resolved its class
    admitted_priority = [r for r in records if r["type"] == "PodAdmitted"]
    assert admitted_priority == []  # (objects come admitted; nothing was created later)


def test_explain_says_why_a_critical_static_pod_went_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    dsn = f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["run", str(path), "--decisions", str(tmp_path / "d.jsonl"), "--store", dsn, "--quiet"]) == 0
    assert main(["explain", "kube-system/etcd-n1", "--store", dsn, "--json"]) == 0
    explanation = json.loads(capsys.readouterr().out)
    assert "killed it in the group of priority 0" in explanation["verdict"]
    assert "static pod" in explanation["verdict"] and "known upstream defect" in explanation["verdict"]
