"""Recorded stats (open loop), afterReclaim, pod deletion and delayed exits."""

from __future__ import annotations

from pathlib import Path

from .run_helpers import run_file

STATS_SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: open-loop}
spec:
  duration: 1m
  kubeletConfig: {evictionHard: {nodefs.available: 10Gi}}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: rec-1}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: logger, namespace: default, uid: u-logger}
      spec: {nodeName: rec-1, containers: [{name: logger}]}
    - apiVersion: v1
      kind: Pod
      metadata: {name: web, namespace: default, uid: u-web, annotations: {ledgerlet/exit-after: "5"}}
      spec: {nodeName: rec-1, terminationGracePeriodSeconds: 30, containers: [{name: web}]}
  events:
    - at: 10s
      stats:
        node:
          nodeName: rec-1
          fs: {time: "1970-01-01T00:00:10Z", availableBytes: 8589934592, capacityBytes: 107374182400}
        pods:
          - podRef: {name: logger, namespace: default, uid: u-logger}
            containers: [{name: logger, rootfs: {usedBytes: 1000}, logs: {usedBytes: 5368709120}}]
          - podRef: {name: web, namespace: default, uid: u-web}
            containers: [{name: web, rootfs: {usedBytes: 1000}, logs: {usedBytes: 1000}}]
      afterReclaim:
        node:
          nodeName: rec-1
          fs: {time: "1970-01-01T00:00:10Z", availableBytes: 9663676416, capacityBytes: 107374182400}
    - at: 20s
      stats:
        node:
          nodeName: rec-1
          fs: {time: "1970-01-01T00:00:20Z", availableBytes: 53687091200, capacityBytes: 107374182400}
    - at: 30s
      delete: {kind: Pod, namespace: default, name: web}
"""


async def test_recorded_stats_drive_passes_and_after_reclaim_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(STATS_SCENARIO)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    brief = [(r["t"], r["type"], r.get("pod", "")) for r in records]
    assert brief[:4] == [
        (10.0, "NodeConditionChanged", ""),
        (10.0, "NodeReclaimed", ""),  # afterReclaim shows 1Gi freed, not enough for 10Gi
        (10.0, "PodEvicted", "default/logger"),
        (10.0, "PodTerminated", "default/logger"),
    ]
    reclaimed = records[1]["data"]
    assert reclaimed["bytesFreed"] == 1 << 30 and reclaimed["signal"] == "nodefs.available"
    evicted = records[2]["data"]
    assert evicted["message"] == (
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 8Gi. "
        "Container logger was using 5368710120, request is 0, has larger consumption of ephemeral-storage. "
    )
    # open loop: no passes happen between stats events (only at 10s and 20s)
    assert {r["t"] for r in records if r["type"] == "NodeConditionChanged"} == {10.0}
    # a graceful delete: SIGTERM at 30s, the pod exits after its 5 s (its grace is 30 s)
    deleted = [r for r in records if r.get("pod") == "default/web"]
    assert [(r["t"], r["type"], r["data"]) for r in deleted] == [
        (35.0, "PodTerminated", {"reason": "Deleted", "gracePeriodSeconds": 30, "killedAt": 30.0})
    ]


async def test_hard_eviction_cuts_a_slow_exit_to_one_second(tmp_path: Path) -> None:
    text = STATS_SCENARIO.replace(
        "name: logger, namespace: default, uid: u-logger}",
        'name: logger, namespace: default, uid: u-logger, annotations: {ledgerlet/exit-after: "20"}}',
        1,
    )
    path = tmp_path / "s.yaml"
    path.write_text(text)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    term = [r for r in records if r["type"] == "PodTerminated" and r["pod"] == "default/logger"]
    assert [(r["t"], r["data"]["killedAt"], r["data"]["gracePeriodSeconds"]) for r in term] == [(11.0, 10.0, 1)]
