"""PodGC in a whole run: terminated pods of the scenario and pods the kubelet evicts count
towards ``terminatedPodGCThreshold``; the excess is force-deleted at the 20 s passes,
evicted pods first (``gc_controller.go: gcTerminated``)."""

from __future__ import annotations

from pathlib import Path

from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store

SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: podgc}
spec:
  duration: 1m
  kubeletConfig: {evictionHard: {memory.available: 1Gi}}
  controllerConfig: {terminatedPodGCThreshold: 2}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {memory: 8Gi}}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: old-job, namespace: batch, creationTimestamp: "2025-01-01T00:00:00Z"}
      spec: {nodeName: n1, containers: [{name: c}]}
      status: {phase: Succeeded}
    - apiVersion: v1
      kind: Pod
      metadata: {name: older-job, namespace: batch, creationTimestamp: "2024-01-01T00:00:00Z"}
      spec: {nodeName: n1, containers: [{name: c}]}
      status: {phase: Failed}
    - apiVersion: v1
      kind: Pod
      metadata: {name: newest-job, namespace: batch, creationTimestamp: "2025-06-01T00:00:00Z"}
      spec: {nodeName: n1, containers: [{name: c}]}
      status: {phase: Succeeded}
    - apiVersion: v1
      kind: Pod
      metadata: {name: hog, namespace: web}
      spec: {nodeName: n1, containers: [{name: c}]}
  usage:
    node/n1: {system: {memory: 1Gi}}
    web/hog: {memory: [[0, 1Gi], [25, 7Gi]]}
"""


async def test_terminated_pods_beyond_the_threshold_are_force_deleted(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIO, "podgc.yaml")
    store = await open_store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        result = await run_embedded(scenario, store)
    finally:
        await store.close()
    decisions = [d.envelope for d in result.decisions]
    gc = [(d.t / 10**9, d.pod, decode_data(d)) for d in decisions if d.type == "PodForceDeleted"]
    # three terminated pods of the scenario, two allowed: the oldest goes at the first pass
    assert [(t, p, d.reason) for t, p, d in gc[:1]] == [(0.0, "batch/older-job", "terminated")]
    assert gc[0][2].by == "pod-garbage-collector"
    evicted = [d for d in decisions if d.type == "PodEvicted" and d.pod == "web/hog"]
    assert evicted, "the hog is evicted"
    # it stays Failed (reason Evicted): three again, and evicted pods go first
    later = [(t, p) for t, p, d in gc[1:]]
    assert len(later) == 1 and later[0][1] == "web/hog" and later[0][0] % 20 == 0 and later[0][0] > evicted[0].t / 10**9
