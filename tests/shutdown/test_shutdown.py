"""Graceful node shutdown and the out-of-service path: the pure rules with the reference's
examples (``nodeshutdown_manager_test.go``'s migrateConfig cases, seed 004's tables), then
the examples end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledgerlet_core.controllers.node_loss import force_detach, last_heartbeat, toleration_delay, unknown_at
from ledgerlet_core.kubelet.graceful_shutdown import Group, ShutdownPod, group_of, migrate_config, plan_shutdown
from ledgerlet_core.model.k8s.objects import Taint, Toleration
from tests.conftest import EXAMPLES
from tests.services.run_helpers import run_file

S = 10**9
CRIT = 2_000_000_000


@pytest.mark.parametrize(
    ("period", "critical", "groups"),
    [
        (300, 120, [Group(0, 180), Group(CRIT, 120)]),
        (100, 0, [Group(0, 100), Group(CRIT, 0)]),
        (30, 10, [Group(0, 20), Group(CRIT, 10)]),
        (5, 5, [Group(0, 0), Group(CRIT, 5)]),
        (0, 0, []),
        (1, 100, []),
    ],
)
def test_migrate_config(period: int, critical: int, groups: list[Group]) -> None:
    assert migrate_config(period, critical) == groups


SEED_TABLE = [Group(0, 60), Group(1000, 120), Group(10000, 180), Group(100000, 10)]


def test_a_pod_between_two_priorities_goes_to_the_lower_group() -> None:
    assert group_of(SEED_TABLE, 5000) == 1  # 1000
    assert group_of(SEED_TABLE, 10000) == 2  # exact
    assert group_of(SEED_TABLE, 2_000_000_000) == 3  # above the top: the top group
    assert group_of(SEED_TABLE, -5) == 0  # below the lowest: the lowest
    two = migrate_config(30, 10)
    assert group_of(two, 1_000_000_000) == 0  # the highest user priority is not "critical"


def test_seed_priority_table_timeline() -> None:
    pods = [ShutdownPod(k, p, 300, 1000 * S) for k, p in (("a", 100000), ("b", 10000), ("c", 1000), ("d", 0))]
    plan = plan_shutdown(0, SEED_TABLE, pods)
    kills = {k.pod: (k.at // S, k.grace) for g in plan.groups for k in g.kills}
    assert kills == {"d": (0, 60), "c": (60, 120), "b": (180, 180), "a": (360, 10)}
    assert plan.end == 370 * S
    # with the API default terminationGracePeriodSeconds (30) each pod's grace is capped at 30
    capped = plan_shutdown(0, SEED_TABLE, [ShutdownPod("b", 10000, 30, 1000 * S)])
    assert capped.groups[2].kills[0].grace == 30 and capped.groups[2].kills[0].grace_from.startswith("the pod's")


def test_empty_groups_are_skipped_and_zero_second_groups_do_not_wait() -> None:
    plan = plan_shutdown(0, SEED_TABLE, [ShutdownPod("a", 100000, None, 5 * S)])
    assert [g.ended_by for g in plan.groups[:3]] == ["empty: skipped"] * 3
    assert plan.groups[3].start == 0 and plan.end == 5 * S  # all pods exited before the period
    zero = plan_shutdown(0, migrate_config(5, 5), [ShutdownPod("x", 0, 30, 9 * S), ShutdownPod("y", CRIT, 30, S)])
    assert zero.groups[0].kills[0].grace == 0 and zero.groups[0].end == 0
    assert zero.groups[1].start == 0 and zero.end == S


def test_taint_eviction_delay() -> None:
    unreachable = Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")
    oos = Taint(key="node.kubernetes.io/out-of-service", value="nodeshutdown", effect="NoExecute")
    default = [Toleration(key=unreachable.key, operator="Exists", effect="NoExecute", toleration_seconds=300)]
    assert toleration_delay(default, [unreachable]) == 300
    assert toleration_delay(default, [unreachable, oos]) == 0  # not tolerated: now
    forever = [Toleration(key=unreachable.key, operator="Exists", effect="NoExecute")]
    assert toleration_delay(forever, [unreachable]) is None  # DaemonSet pods
    assert toleration_delay(default, [Taint(key="k", effect="NoSchedule")]) is None
    short = [*default, Toleration(operator="Exists", effect="NoExecute", toleration_seconds=-5)]
    assert toleration_delay(short, [unreachable]) == 0


def test_node_monitor_and_force_detach_rules() -> None:
    assert last_heartbeat(63 * S, 10 * S) == 60 * S
    assert unknown_at(60 * S, 40 * S) == 105 * S  # strictly after 100 s, on the 5 s grid
    assert unknown_at(61 * S, 40 * S) == 105 * S
    six = 360 * S
    assert force_detach(healthy=False, out_of_service=True, unwanted_for=0, disable_on_timeout=True) == "OutOfService"
    assert force_detach(healthy=False, out_of_service=False, unwanted_for=six, disable_on_timeout=False) is None
    assert (
        force_detach(healthy=False, out_of_service=False, unwanted_for=six + 1, disable_on_timeout=False) == "Timeout"
    )
    assert force_detach(healthy=False, out_of_service=False, unwanted_for=six + 1, disable_on_timeout=True) is None


def brief(records: list[dict[str, Any]], pod: str) -> list[tuple[float, str]]:
    return [(r["t"], r["type"]) for r in records if r.get("pod") == pod]


async def test_graceful_shutdown_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "graceful-shutdown.yaml", f"sqlite:///{tmp_path / 'g.db'}")
    ready = [
        (r["t"], r["data"]["status"], r["data"]["reason"], r["data"]["message"])
        for r in records
        if r["type"] == "NodeConditionChanged" and r["node"] == "worker-1"
    ]
    assert ready == [
        (60.0, "False", "KubeletNotReady", "node is shutting down"),
        (125.0, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        (300.0, "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    started = next(r["data"] for r in records if r["type"] == "NodeShutdownStarted")
    assert [(g["priority"], g["gracePeriodSeconds"], g["pods"]) for g in started["groups"]] == [
        (0, 20, ["default/web-x7k2p", "default/batch"]),
        (CRIT, 10, ["kube-system/node-agent"]),
    ]
    assert started["periodRequestedSeconds"] == 30
    ended = {
        r["pod"]: (r["t"], r["data"]["killedAt"], r["data"]["gracePeriodSeconds"])
        for r in records
        if r["type"] == "PodTerminated"
    }
    assert ended == {
        "default/batch": (65.0, 60.0, 20),
        "default/web-x7k2p": (80.0, 60.0, 20),
        "kube-system/node-agent": (83.0, 80.0, 10),
    }
    done = next(r for r in records if r["type"] == "NodeShutdownCompleted")
    assert done["t"] == 83.0 and done["data"]["endTimeSeconds"] - done["data"]["startTimeSeconds"] == 23.0
    late = next(r for r in records if r.get("pod") == "default/late" and r["type"] == "PodRejected")
    assert late["data"]["reason"] == "NodeShutdown"
    assert late["data"]["message"] == "Pod was rejected as the node is shutting down."
    replacement = next(r["data"]["replacement"] for r in records if r["type"] == "PodReplaced")
    scheduled = next(r for r in records if r.get("pod") == replacement and r["type"] == "PodScheduled")
    assert scheduled["node"] == "worker-2"  # worker-1 carries the not-ready taint
    assert "node(s) had untolerated taint {node.kubernetes.io/not-ready: }" in scheduled["data"]["filtered"]


async def test_graceful_shutdown_by_priority_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "graceful-shutdown-by-priority.yaml", f"sqlite:///{tmp_path / 'p.db'}")
    plans = {r["node"]: r["data"] for r in records if r["type"] == "NodeShutdownStarted"}
    a = plans["node-a"]
    assert [(g["priority"], g["pods"], g.get("start"), g.get("end")) for g in a["groups"]] == [
        (0, ["default/d"], 10.0, 70.0),
        (1000, ["default/c", "default/e"], 70.0, 190.0),
        (10000, ["default/b"], 190.0, 370.0),
        (100000, ["default/a"], 370.0, 380.0),
    ]
    assert a["periodRequestedSeconds"] == 370
    b = plans["node-b"]
    assert [(g["priority"], g["pods"], g["endedBy"]) for g in b["groups"]] == [
        (0, ["default/d2"], "period over"),
        (1000, ["default/b2", "default/c2"], "period over"),
        (100000, [], "empty: skipped"),
    ]
    completed = {r["node"]: r["t"] for r in records if r["type"] == "NodeShutdownCompleted"}
    assert completed == {"node-b": 190.0, "node-a": 380.0}
    # node-a is NotReady for more than 300 s: the taint manager deletes a at 310 s (its default
    # not-ready toleration), then the shutdown manager's kill with 10 s grace shortens that
    assert brief(records, "default/a") == [(380.0, "PodTerminated")]
    killed_a = next(r["data"] for r in records if r.get("pod") == "default/a")
    assert killed_a["reason"] == "TaintEviction" and killed_a["killedAt"] == 310.0


async def test_out_of_service_statefulset_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "out-of-service-statefulset.yaml", f"sqlite:///{tmp_path / 'o.db'}")
    unknown = {
        r["node"]: r["t"] for r in records if r["type"] == "NodeConditionChanged" and r["data"]["status"] == "Unknown"
    }
    assert unknown == {"worker-1": 105.0, "worker-3": 105.0}
    taints = [
        (r["t"], r["data"]["key"], r["data"]["effect"])
        for r in records
        if r["type"] == "NodeTaintAdded" and r["node"] == "worker-1"
    ]
    assert taints == [
        (105.0, "node.kubernetes.io/unreachable", "NoSchedule"),
        (105.0, "node.kubernetes.io/unreachable", "NoExecute"),
    ]
    db = brief(records, "default/db-0")
    assert db[:2] == [(120.0, "PodForceDeleted"), (120.0, "PodReplaced")]
    forced = next(r for r in records if r["type"] == "PodForceDeleted")
    assert forced["data"]["reason"] == "out-of-service" and forced["data"]["by"] == "pod-garbage-collector"
    detached = {
        r["data"]["volume"]: (r["t"], r["data"]["forced"], r["data"]["reason"])
        for r in records
        if r["type"] == "VolumeDetached"
    }
    assert detached == {"pv-db-0": (120.0, True, "OutOfService"), "pv-archive": (490.1, True, "Timeout")}
    again = next(r for r in records if r["type"] == "PodScheduled" and r["pod"] == "default/db-0")
    assert again["t"] == 120.0 and again["node"] == "worker-2"
    back = [
        (r["t"], r["data"]["status"])
        for r in records
        if r["type"] == "NodeConditionChanged" and r["node"] == "worker-1"
    ]
    assert back[-1] == (400.0, "True")
    assert {
        (r["data"]["key"], r["data"]["effect"])
        for r in records
        if r["type"] == "NodeTaintRemoved" and r["node"] == "worker-1"
    } == {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}


LIFECYCLE = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: lifecycle}
spec:
  duration: 8m
  controllerConfig: {disableForceDetachOnTimeout: true}
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
    - {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
    - {apiVersion: v1, kind: Node, metadata: {name: n3}, status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
    - apiVersion: v1
      kind: PersistentVolume
      metadata: {name: pv-keep}
      spec: {csi: {driver: d, volumeHandle: h}, claimRef: {namespace: default, name: keep}}
    - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: keep}, spec: {volumeName: pv-keep}}
    - apiVersion: v1
      kind: Pod
      metadata: {name: keep}
      spec: {nodeName: n1, containers: [{name: c}], volumes: [{name: v, persistentVolumeClaim: {claimName: keep}}]}
    - {apiVersion: v1, kind: Pod, metadata: {name: stranded}, spec: {nodeName: n2, containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {nodeName: n3, containers: [{name: c}]}}
  events:
    - {at: 10s, powerOff: {node: n1}}
    - {at: 10s, powerOff: {node: n3}}
    - {at: 20s, delete: {kind: Pod, namespace: default, name: keep, gracePeriodSeconds: 0, force: true}}
    - {at: 20s, delete: {kind: Pod, namespace: default, name: web}}
    - {at: 30s, delete: {kind: Node, name: n2}}
    - {at: 100s, powerOn: {node: n3}}
    - {at: 400s, powerOn: {node: n1}}
"""


async def test_orphans_disabled_force_detach_and_power_on(tmp_path: Path) -> None:
    path = tmp_path / "lifecycle.yaml"
    path.write_text(LIFECYCLE)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 'l.db'}")
    # PodGC: pods of a deleted node go after the 40 s quarantine, at the next 20 s pass
    orphan = next(r for r in records if r.get("pod") == "default/stranded")
    assert (orphan["t"], orphan["type"], orphan["data"]["reason"]) == (80.0, "PodForceDeleted", "orphaned")
    assert orphan["data"]["message"] == "PodGC: node no longer exists"
    # deleted while its node was down: Terminating until the kubelet comes back and finishes it
    web = next(r for r in records if r.get("pod") == "default/web" and r["type"] == "PodTerminated")
    assert (web["t"], web["data"]["reason"], web["data"]["killedAt"]) == (100.0, "Deleted", 20.0)
    # force detach on timeout disabled: no Timeout detach; the volume goes when n1 is healthy again
    detached = [(r["t"], r["data"]["forced"], r["data"]["reason"]) for r in records if r["type"] == "VolumeDetached"]
    assert detached == [(400.0, False, "Normal")]
