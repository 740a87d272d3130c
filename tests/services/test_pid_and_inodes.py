"""PID and inode pressure, end to end: the signal, the condition, the ranking."""

from __future__ import annotations

from pathlib import Path

from .run_helpers import run_file

PID = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: pids}
spec:
  duration: 1m
  kubeletConfig: {evictionHard: {pid.available: "500", nodefs.inodesFree: "5%"}}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {memory: 8Gi}}}
    - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
    - apiVersion: v1
      kind: Pod
      metadata: {name: forker, namespace: a}
      spec: {nodeName: n1, priorityClassName: high, containers: [{name: c}]}
    - {apiVersion: v1, kind: Pod, metadata: {name: busy, namespace: a}, spec: {nodeName: n1, containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: calm, namespace: a}, spec: {nodeName: n1, containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: files, namespace: b}, spec: {nodeName: n1, containers: [{name: c}]}}
  usage:
    node/n1: {capacity: {pids: 4096, nodefs: 100Gi, nodefsInodes: 100000}, system: {pids: 600}}
    a/forker: {pids: [[0, 100], [30, 3000]]}
    a/busy: {pids: 300}
    a/calm: {pids: 50}
    b/files: {inodes: [[0, 1000], [45, 98000]]}
"""


async def test_pid_and_inode_pressure(tmp_path: Path) -> None:
    p = tmp_path / "pids.yaml"
    p.write_text(PID)
    records, _ = await run_file(p, f"sqlite:///{tmp_path / 'p.db'}")
    cond = [
        (r["t"], r["data"]["condition"], r["data"]["status"]) for r in records if r["type"] == "NodeConditionChanged"
    ]
    assert cond[0][1:] == ("PIDPressure", "True")
    evicted = [r for r in records if r["type"] == "PodEvicted"]
    pid = evicted[0]["data"]
    assert pid["signal"] == "pid.available" and pid["resource"] == "pids"
    # PIDs rank by priority, then process count: busy (300), calm (50), files (0); the forker,
    # with by far the most processes, last because of its priority
    assert pid["ranking"] == ["a/busy", "a/calm", "b/files", "a/forker"]
    assert evicted[0]["pod"] == "a/busy"
    assert pid["message"].startswith("The node was low on resource: pids. Threshold quantity: 500, available: ")
    inode = [r for r in evicted if r["data"]["signal"] == "nodefs.inodesFree"]
    assert inode and inode[0]["pod"] == "b/files" and inode[0]["data"]["resource"] == "inodes"
    assert ("DiskPressure", "True") in [(c, s) for _, c, s in cond]
