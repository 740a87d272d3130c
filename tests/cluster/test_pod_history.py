"""One pod's history as the API server held it, folded from its stored events.

Each scenario is an upstream pod life told as the run stores it: the events a kubelet,
the scheduler, the controllers and a user leave, in store order.
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec

from ledgerlet_core.cluster.pod_history import (
    POD_HISTORY_TYPES,
    Condition,
    Deletion,
    Ending,
    PodEvent,
    PodHistory,
    Termination,
    pod_history,
)
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import EVENT_TYPES, make_envelope, pod_stream
from ledgerlet_core.model.duration import SECOND

POD = "web/api-0"
NODE = "node-a"
#: far past every event of these stories
END = 3600 * SECOND


class Story:
    """A pod's stored events, in store order, one at a time."""

    def __init__(self) -> None:
        self.events: list[Envelope] = []

    def at(self, seconds: float, data: msgspec.Struct, node: str | None = None) -> Envelope:
        t = round(seconds * SECOND)
        env = make_envelope(data, run="r", t=t, order=[0, len(self.events)], stream=pod_stream(POD), node=node, pod=POD)
        self.events.append(env)
        return env

    def until(self, seconds: float) -> PodHistory:
        return pod_history(self.events, round(seconds * SECOND))

    def last(self) -> PodHistory:
        return pod_history(self.events, END)


def manifest(*, node: str = "", phase: str = "", grace: int | None = None, uid: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}, {"name": "sidecar", "image": "envoy"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "api-0", "namespace": "web", "labels": {"app": "api"}},
        "spec": spec,
    }
    if uid:
        obj["metadata"]["uid"] = uid
    if phase:
        obj["status"] = {"phase": phase, "qosClass": "Burstable"}
    return obj


def admitted(**written: Any) -> dec.PodAdmitted:
    return dec.PodAdmitted(priority=written.pop("priority", 0), qos_class="BestEffort", overhead={}, **written)


def submitted_and_running(s: Story) -> None:
    """``kubectl apply``, admission, binding, the kubelet starts it: at 1, 1, 2 and 3 s."""
    s.at(1, inp.ObjectApplied(object=manifest()))
    s.at(1, admitted())
    s.at(2, dec.PodScheduled(requests={}), node=NODE)
    s.at(3, internal.PodStarted(node=NODE, pod=POD))


def test_a_submitted_pod_exists_from_its_admission_with_what_admission_wrote() -> None:
    s = Story()
    s.at(1, inp.ObjectApplied(object=manifest()))
    assert not s.until(1).exists and s.until(1).submitted is not None  # accepted, not yet admitted
    written = admitted(
        priority=1000,
        priority_class_name="high",
        preemption_policy="Never",
        tolerations=[{"key": "gpu", "operator": "Exists"}],
    )
    s.at(2, msgspec.structs.replace(written, overhead={"cpu": "250m"}, qos_class="Burstable"))
    h = s.last()
    assert h.exists and h.created == 2 * SECOND and h.phase == "Pending" and h.qos == "Burstable"
    assert set(h.containers) == {"app", "sidecar"}
    spec = h.spec()
    assert spec["priority"] == 1000 and spec["priorityClassName"] == "high"
    assert spec["preemptionPolicy"] == "Never" and spec["overhead"] == {"cpu": "250m"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}] and "nodeSelector" not in spec
    spec["containers"].clear()  # a copy: what the reader changes is its own
    assert len(h.spec()["containers"]) == 2
    assert h.node == "" and "PodScheduled" not in h.conditions


def test_a_running_pod_has_its_node_start_and_conditions_with_their_times() -> None:
    s = Story()
    submitted_and_running(s)
    assert s.until(2.5).phase == "Pending" and s.until(2.5).node == NODE and s.until(2.5).started is None
    h = s.last()
    assert h.phase == "Running" and h.started == 3 * SECOND and h.changed == 3 * SECOND
    assert h.conditions["PodScheduled"] == Condition("True", "", "", 2 * SECOND)
    assert h.conditions["Ready"] == Condition("True", "", "", 3 * SECOND)
    assert all(c.running_since == 3 * SECOND for c in h.containers.values())


def test_an_evicted_pod_stays_failed_with_the_kubelets_reason_and_disruption_target() -> None:
    s = Story()
    submitted_and_running(s)
    message = "The node was low on resource: memory. "
    s.at(
        10,
        dec.PodEvicted(
            signal="memory.available",
            threshold="memory.available<100Mi",
            observed=1,
            grace_period_seconds=0,
            message=message,
            ranking=[POD],
        ),
        node=NODE,
    )
    s.at(12, dec.PodTerminated(reason="Evicted", grace_period_seconds=0, killed_at=10.0), node=NODE)
    during = s.until(11)
    assert during.phase == "Running" and during.conditions["Ready"].status == "True"
    assert during.conditions["DisruptionTarget"] == Condition("True", "TerminationByKubelet", message, 10 * SECOND)
    h = s.last()
    assert h.exists and h.phase == "Failed" and h.reason == "Evicted" and h.message == message
    assert h.ended_by_kubelet and h.ending == Ending(12 * SECOND, "Evicted", 0, kept=True)
    assert h.conditions["Ready"] == Condition("False", "PodFailed", "", 12 * SECOND)
    assert h.conditions["ContainersReady"] == Condition("False", "PodFailed", "", 12 * SECOND)
    assert h.conditions["PodReadyToStartContainers"] == Condition("False", "", "", 12 * SECOND)
    assert h.conditions["Initialized"].status == "True"


def test_a_shut_down_pod_fails_terminated_with_the_shutdown_message() -> None:
    s = Story()
    s.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running"), initial=True))
    msg = "Pod was terminated in response to imminent node shutdown."
    s.at(30, dec.PodTerminated(reason="NodeShutdown", grace_period_seconds=20, killed_at=10.0, message=msg), node=NODE)
    h = s.last()
    assert h.exists and h.phase == "Failed" and h.reason == "Terminated" and h.message == msg
    assert h.conditions["DisruptionTarget"] == Condition("True", "TerminationByKubelet", msg, 30 * SECOND)
    assert h.started == 0 and h.created == 0 and h.qos == "Burstable"


def test_an_oom_killed_container_backs_off_and_restarts_then_fails_the_pod() -> None:
    s = Story()
    submitted_and_running(s)
    s.at(20, dec.OOMKilled(container="app", oom_score_adj=1000, restart_count=1, restart_at=30.0), node=NODE)
    app = s.last().containers["app"]
    assert app.restarts == 1 and app.last == Termination(20 * SECOND, "OOMKilled", 137)
    assert app.running_since is None and app.back_off_until == 30 * SECOND and app.terminated is None
    assert s.last().phase == "Running" and s.last().containers["sidecar"].running_since == 3 * SECOND
    s.at(40, dec.OOMKilled(container="app", oom_score_adj=1000, pod_failed=True), node=NODE)
    h = s.last()
    app = h.containers["app"]
    assert app.restarts == 1  # (a count of 0 is not stored: the last one is kept)
    assert app.terminated == app.last == Termination(40 * SECOND, "OOMKilled", 137)
    assert h.phase == "Failed" and h.conditions["Ready"] == Condition("False", "PodFailed", "", 40 * SECOND)
    assert not h.ended_by_kubelet and h.exists


def test_an_oom_kill_without_a_restart_terminates_the_container_for_good() -> None:
    s = Story()
    submitted_and_running(s)
    s.at(20, dec.OOMKilled(container="sidecar", oom_score_adj=-997), node=NODE)
    sidecar = s.last().containers["sidecar"]
    assert sidecar.terminated == Termination(20 * SECOND, "OOMKilled", 137) and sidecar.back_off_until is None


def test_a_preempted_pod_is_terminating_until_it_exits_then_gone() -> None:
    s = Story()
    submitted_and_running(s)
    s.at(50, dec.PodPreempted(preemptor="web/urgent", grace_period_seconds=30, message="preempted"), node=NODE)
    during = s.until(60)
    assert during.exists and during.deletion == Deletion(50 * SECOND, 30)
    assert during.deletion.deadline == 80 * SECOND
    assert during.conditions["DisruptionTarget"] == Condition("True", "PreemptionByScheduler", "preempted", 50 * SECOND)
    s.at(70, dec.PodTerminated(reason="Preempted", grace_period_seconds=30, killed_at=50.0), node=NODE)
    h = s.last()
    assert not h.exists and h.ending == Ending(70 * SECOND, "Preempted", 30, kept=False)


def test_a_pod_its_kubelet_refuses_fails_with_the_admission_reason() -> None:
    s = Story()
    s.at(1, inp.ObjectApplied(object=manifest()))
    s.at(1, admitted())
    s.at(2, dec.PodScheduled(requests={}), node=NODE)
    s.at(2, internal.PodStarted(node=NODE, pod=POD))  # (started, then refused: the conditions go)
    s.at(2, dec.PodRejected(reason="OutOfcpu", message="Node didn't have enough resource: cpu", admitter="kubelet"))
    h = s.last()
    assert h.exists and h.phase == "Failed" and h.reason == "OutOfcpu" and h.ended_by_kubelet
    assert h.message == "Pod was rejected: Node didn't have enough resource: cpu"
    assert set(h.conditions) == {"PodScheduled"}


def test_a_pod_the_api_server_refuses_never_exists() -> None:
    s = Story()
    s.at(1, inp.ObjectApplied(object=manifest()))
    s.at(1, dec.PodRejected(reason="Forbidden", message="no PriorityClass", admitter="apiserver"))
    s.at(1, admitted())  # (nothing to admit: the object was refused)
    h = s.last()
    assert not h.exists and h.submitted is None and h.admitted is None


def test_a_deleted_pod_is_terminating_for_its_own_grace_then_a_new_one_takes_its_name() -> None:
    s = Story()
    s.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running", grace=45, uid="u-1"), initial=True))
    s.at(10, inp.ObjectDeleted(kind="Pod", name="api-0", namespace="web"))
    assert s.until(10).deletion == Deletion(10 * SECOND, 45) and s.until(10).exists
    s.at(20, dec.PodTerminated(reason="Deleted", grace_period_seconds=45, killed_at=10.0), node=NODE)
    assert not s.until(20).exists
    s.at(25, internal.ObjectCreated(object=manifest(uid="u-2"), owner="StatefulSet/web/api"))
    waiting = s.until(25)
    assert not waiting.exists and waiting.incarnation == 1 and waiting.changed == 25 * SECOND
    assert waiting.deletion is None and waiting.conditions == {} and waiting.node == ""
    s.at(25, admitted())
    s.at(26, dec.PodScheduled(requests={}), node="node-b")
    h = s.last()
    assert h.exists and h.created == 25 * SECOND and h.node == "node-b" and h.started is None
    assert h.submitted is not None and h.submitted["metadata"]["uid"] == "u-2"
    assert h.conditions["PodScheduled"].since == 26 * SECOND and h.ending is None


def test_an_unbound_or_forced_delete_removes_the_pod_at_once() -> None:
    unbound = Story()
    unbound.at(1, inp.ObjectApplied(object=manifest()))
    unbound.at(1, admitted())
    unbound.at(5, inp.ObjectDeleted(kind="Pod", name="api-0", namespace="web", grace_period_seconds=30))
    assert not unbound.last().exists
    forced = Story()
    submitted_and_running(forced)
    forced.at(5, inp.ObjectDeleted(kind="Pod", name="api-0", namespace="web", force=True, grace_period_seconds=0))
    assert not forced.last().exists
    gc = Story()
    submitted_and_running(gc)
    gc.at(5, dec.PodForceDeleted(reason="NodeLost", by="pod-garbage-collector"), node=NODE)
    assert not gc.last().exists


def test_a_taint_eviction_and_a_scheduling_failure_set_their_conditions() -> None:
    s = Story()
    s.at(1, inp.ObjectApplied(object=manifest()))
    s.at(1, admitted())
    s.at(2, dec.PodUnschedulable(reasons=["Insufficient cpu"], message="0/3 nodes are available", nominated_node=NODE))
    s.at(4, dec.PodUnschedulable(reasons=["Insufficient cpu"], message="0/3 nodes are available: again"))
    pending = s.last()
    # the same status and reason: the transition stays when it was, the message is the last
    assert pending.conditions["PodScheduled"] == Condition(
        "False", "Unschedulable", "0/3 nodes are available: again", 2 * SECOND
    )
    assert pending.nominated == NODE
    s.at(5, dec.PodScheduled(requests={}), node=NODE)
    s.at(6, internal.PodStarted(node=NODE, pod=POD))
    s.at(
        9,
        internal.PodDeletionRequested(
            node=NODE, pod=POD, grace_period_seconds=10, by="taint-eviction-controller", reason="TaintEviction",
            message="Taint manager: deleting due to NoExecute taint",
        ),
    )  # fmt: skip
    h = s.last()
    assert h.nominated == "" and h.conditions["PodScheduled"] == Condition("True", "", "", 5 * SECOND)
    assert h.deletion == Deletion(9 * SECOND, 10)
    assert h.conditions["DisruptionTarget"].reason == "DeletionByTaintManager"


def test_an_update_changes_the_metadata_only_and_later_events_wait_for_their_instant() -> None:
    s = Story()
    s.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running"), initial=True))
    changed = manifest(node="elsewhere")
    changed["metadata"]["labels"] = {"app": "api", "track": "canary"}
    changed["spec"]["containers"] = []
    s.at(7, inp.ObjectApplied(object=changed))
    h = s.until(6.9)
    assert h.submitted is not None and h.submitted["metadata"]["labels"] == {"app": "api"} and h.changed == 0
    h = s.last()
    assert h.submitted is not None and h.submitted["metadata"]["labels"]["track"] == "canary"
    assert h.node == NODE and len(h.spec()["containers"]) == 2 and h.incarnation == 0


def test_the_types_folded_are_registered_with_the_models_the_fold_reads() -> None:
    """The store is asked for these types and each is decoded by its registered model: a
    model renamed or moved in ``contracts/`` must fail here, not fold nothing."""
    assert [EVENT_TYPES[name].model for name in POD_HISTORY_TYPES] == list(get_args(PodEvent))


def test_other_events_of_the_pod_change_nothing() -> None:
    s = Story()
    submitted_and_running(s)
    before = s.last()
    s.at(5, dec.PodReplaced(replacement=POD, owner="StatefulSet/web/api"))
    assert s.last() == before and s.last().changed == 3 * SECOND


def evicted_at_60(s: Story) -> None:
    """A StatefulSet's pod on ``NODE`` from the start, evicted at 60 s, exited at 61 s (as
    the golden ``workloads-create-their-pods-and-replace-evicted-ones`` stores ``shop/db-0``)."""
    s.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running", uid="u-old"), initial=True))
    evicted = dec.PodEvicted(
        signal="memory.available",
        threshold="memory.available<1Gi",
        observed=0,
        grace_period_seconds=1,
        message="The node was low on resource: memory. ",
        ranking=[POD],
    )
    s.at(60, evicted, node=NODE)
    s.at(61, dec.PodTerminated(reason="Evicted", grace_period_seconds=1, killed_at=60.0), node=NODE)


def test_an_evicted_statefulset_pod_created_again_is_a_new_pod_with_its_own_history() -> None:
    """The controller creates ``db-0`` again only once the failed one is deleted
    (``pkg/controller/statefulset``): its admission, binding, start and OOM kills are the
    new pod's, and the evicted one is gone."""
    s = Story()
    evicted_at_60(s)
    s.at(61, internal.ObjectCreated(object=manifest(uid="u-new"), owner="StatefulSet/web/api"))
    s.at(61, dec.PodReplaced(replacement=POD, owner="StatefulSet/api"))
    s.at(61, admitted())
    s.at(61, dec.PodScheduled(requests={}), node="node-b")
    s.at(61, internal.PodStarted(node="node-b", pod=POD))
    s.at(61, dec.OOMKilled(container="app", oom_score_adj=1000, restart_count=1, restart_at=62.0), node="node-b")
    old = s.until(60.5)
    assert old.submitted is not None and old.submitted["metadata"]["uid"] == "u-old"
    assert old.phase == "Running" and old.node == NODE and old.conditions["DisruptionTarget"].status == "True"
    h = s.until(62)
    assert h.exists and h.incarnation == 1 and h.submitted is not None and h.submitted["metadata"]["uid"] == "u-new"
    assert h.created == 61 * SECOND and h.node == "node-b" and h.phase == "Running" and h.started == 61 * SECOND
    assert h.reason == "" and h.message == "" and h.ending is None and not h.ended_by_kubelet
    assert "DisruptionTarget" not in h.conditions and h.conditions["PodScheduled"].since == 61 * SECOND
    app = h.containers["app"]
    assert app.restarts == 1 and app.back_off_until == 62 * SECOND and h.containers["sidecar"].restarts == 0


def test_a_pod_applied_over_an_ended_one_is_new_and_an_update_keeps_the_uid() -> None:
    """The API server admits a pod applied over a failed one as new (the loops let the
    failed one go), while an update of a live pod changes its metadata, never its uid."""
    s = Story()
    evicted_at_60(s)
    assert s.until(61).ended and not s.until(60).ended
    s.at(70, inp.ObjectApplied(object=manifest()))
    waiting = s.until(70)
    assert not waiting.exists and waiting.incarnation == 1 and waiting.origin == s.events[-1].id
    s.at(70, admitted())
    h = s.last()
    assert h.exists and h.phase == "Pending" and h.node == "" and h.reason == "" and not h.ended
    live = Story()
    live.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running", uid="u-1"), initial=True))
    relabelled = manifest(uid="u-2")
    relabelled["metadata"]["labels"] = {"app": "api", "track": "canary"}
    live.at(5, inp.ObjectApplied(object=relabelled))
    updated = live.last()
    assert updated.incarnation == 0 and updated.submitted is not None
    assert (
        updated.submitted["metadata"]["uid"] == "u-1" and updated.submitted["metadata"]["labels"]["track"] == "canary"
    )
    unnamed = Story()
    unnamed.at(0, inp.ObjectApplied(object=manifest(node=NODE, phase="Running"), initial=True))
    unnamed.at(5, inp.ObjectApplied(object=manifest(uid="u-3")))
    kept = unnamed.last()
    assert kept.submitted is not None and "uid" not in kept.submitted["metadata"]
    assert kept.origin == unnamed.events[0].id  # (the uid it was given from its origin)
