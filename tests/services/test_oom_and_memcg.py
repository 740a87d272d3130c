"""OOM kills between housekeeping passes, restarts, and kernelMemcgNotification, end to end."""

from __future__ import annotations

from pathlib import Path

from .run_helpers import run_file

SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: oom}
spec:
  duration: %(duration)s
  kubeletConfig: {evictionHard: {memory.available: 1Gi}, kernelMemcgNotification: %(memcg)s}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {memory: 8Gi}}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: leaky, namespace: default}
      spec:
        nodeName: n1
        restartPolicy: %(policy)s
        containers: [{name: app, resources: {requests: {memory: 256Mi}, limits: {memory: 1Gi}}}]
    - apiVersion: v1
      kind: Pod
      metadata: {name: batch, namespace: default}
      spec: {nodeName: n1, containers: [{name: work}]}
  usage:
    node/n1: {system: {memory: 1Gi}}
    default/leaky: {memory: [[0, 100Mi], [100, 1100Mi]]}
    default/batch: {memory: %(batch)s}
"""


def scenario(
    tmp_path: Path, *, policy: str = "Always", memcg: str = "false", batch: str = "100Mi", duration: str = "2m"
) -> Path:
    p = tmp_path / "oom.yaml"
    p.write_text(SCENARIO % {"policy": policy, "memcg": memcg, "batch": batch, "duration": duration})
    return p


async def test_a_container_over_its_limit_is_oom_killed_between_passes(tmp_path: Path) -> None:
    records, _ = await run_file(scenario(tmp_path), f"sqlite:///{tmp_path / 's.db'}")
    ooms = [r for r in records if r["type"] == "OOMKilled"]
    first = ooms[0]
    assert first["pod"] == "default/leaky" and 92 < first["t"] < 93  # not on the 10 s grid
    d = first["data"]
    assert (d["container"], d["scope"], d["limit"], d["restartCount"]) == ("app", "limit", 1 << 30, 1)
    assert d["oomScoreAdj"] == 1000 - (1000 * 256 * 2**20) // (8 * 2**30)  # Burstable formula
    assert d["restartAt"] == first["t"] + 1
    # it comes back still over its limit: killed again at each restart, backing off 10 s, 20 s ...
    assert [round(r["t"] - first["t"], 3) for r in ooms[:3]] == [0, 1.0, 11.0]
    assert not any(r["type"] == "PodEvicted" for r in records)  # the kubelet never saw pressure


async def test_restart_policy_never_fails_the_pod(tmp_path: Path) -> None:
    records, _ = await run_file(scenario(tmp_path, policy="Never"), f"sqlite:///{tmp_path / 's.db'}")
    ooms = [r for r in records if r["type"] == "OOMKilled"]
    assert len(ooms) == 1 and ooms[0]["data"]["podFailed"] and "restartAt" not in ooms[0]["data"]


async def test_node_oom_when_usage_outruns_the_kubelet(tmp_path: Path) -> None:
    # batch jumps from 100Mi to 7Gi within one housekeeping interval (between 20s and 30s):
    # the node runs out of memory before the kubelet's next pass can evict anything.
    p = scenario(tmp_path, batch="[[0, 100Mi], [21, 100Mi], [22, 7Gi]]", duration="40s")
    records, _ = await run_file(p, f"sqlite:///{tmp_path / 's.db'}")
    node_ooms = [r for r in records if r["type"] == "OOMKilled" and r["data"]["scope"] == "node"]
    assert node_ooms and 21 < node_ooms[0]["t"] < 22
    assert node_ooms[0]["pod"] == "default/batch" and node_ooms[0]["data"]["oomScoreAdj"] == 1000


async def test_memcg_notification_runs_a_pass_at_the_crossing(tmp_path: Path) -> None:
    # batch grows 102.4Mi/s and leaky 10Mi/s: memory.available (8Gi - 1Gi system - both) drops
    # under 1Gi once they pass 6Gi together, at about 52.9s, between the 50s and 60s passes
    slow = "[[0, 100Mi], [100, 10340Mi]]"
    grid, _ = await run_file(scenario(tmp_path, batch=slow, duration="70s"), f"sqlite:///{tmp_path / 'a.db'}")
    notified, _ = await run_file(
        scenario(tmp_path, batch=slow, memcg="true", duration="70s"), f"sqlite:///{tmp_path / 'b.db'}"
    )
    on_grid = [r["t"] for r in grid if r["type"] == "PodEvicted"]
    at_crossing = [r["t"] for r in notified if r["type"] == "PodEvicted"]
    assert on_grid == [60.0]
    assert len(at_crossing) == 1 and 52.8 < at_crossing[0] < 53
