"""Sidecar containers and the kernel's OOM killer (``pkg/kubelet/qos/policy.go:
GetContainerOOMScoreAdjust``, ``kuberuntime_container_linux.go``): a restartable init
container runs beside the main ones under its own memory limit and oom_score_adj."""

from __future__ import annotations

from pathlib import Path

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.k8s.qos import container_oom_score_adj
from tests.services.run_helpers import run_file

CAPACITY = 8_000_000_000

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "app", "namespace": "default"},
    "spec": {
        "nodeName": "n1",
        "initContainers": [
            {
                "name": "log",
                "restartPolicy": "Always",
                "resources": {"requests": {"memory": "400000000"}, "limits": {"memory": "1000001000"}},
            }
        ],
        "containers": [{"name": "main", "resources": {"requests": {"memory": "1000000000"}}}],
    },
}


def test_a_sidecar_takes_the_lower_of_its_own_score_and_the_smallest_main_containers() -> None:
    pod = apply_defaults(convert(POD, Pod))
    assert isinstance(pod, Pod)
    sidecar, main = pod.spec.init_containers[0], pod.spec.containers[0]
    # 1000 - 1000 * 1e9 / 8e9 = 875 for main; the sidecar's own 950 is lowered to 875
    assert container_oom_score_adj(pod, main, CAPACITY) == 875
    assert container_oom_score_adj(pod, sidecar, CAPACITY) == 875


SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: sidecar-oom}
spec:
  duration: 1m
  kubeletConfig: {evictionHard: {memory.available: 100Mi}}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {memory: "8000000000"}}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: app, namespace: default}
      spec:
        nodeName: n1
        initContainers:
          - name: log
            restartPolicy: Always
            resources: {requests: {memory: "400000000"}, limits: {memory: "1000001000"}}
        containers: [{name: main, resources: {requests: {memory: "1000000000"}}}]
  usage:
    node/n1: {system: {memory: 1Gi}}
    default/app:
      containers:
        main: {memory: 500Mi}
        log: {memory: [[0, 100Mi], [20, "1200000000"]]}
"""


async def test_a_sidecar_over_its_own_limit_is_oom_killed_with_its_own_score(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    kills = [
        (r["data"]["container"], r["data"]["oomScoreAdj"], r["data"]["limit"])
        for r in records
        if r["type"] == "OOMKilled"
    ]
    assert kills and kills[0] == ("log", 875, 1_000_001_000)
