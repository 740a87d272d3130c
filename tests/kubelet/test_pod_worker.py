"""The pod workers' kill rules (``pod_workers.go``): exit time, the shorter grace wins,
nothing confirmed while the kubelet is down."""

from __future__ import annotations

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.node import KubeletNode
from ledgerlet_core.kubelet.pod_worker import PodWorkers, exit_delay
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Node
from tests.core.helpers import pod
from tests.support.emit import asked, decided, emitter

S = SECOND


def kubelet_node() -> KubeletNode:
    node = convert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}, Node)
    return KubeletNode(node, resolve_kubelet_config({}), "single")


def slow(name: str, exit_after: str) -> object:
    return pod(name, annotations={"ledgerlet/exit-after": exit_after})


def test_a_pod_exits_after_its_exit_time_or_its_grace_whichever_is_first() -> None:
    assert exit_delay(pod("a", annotations={"ledgerlet/exit-after": "4"}), 30) == 4 * S
    assert exit_delay(pod("b", annotations={"ledgerlet/exit-after": "40"}), 30) == 30 * S
    assert exit_delay(pod("c", annotations={"ledgerlet/exit-after": "40"}), -5) == 0
    assert exit_delay(pod("d"), 30) == 0  # exits at once by default


def test_an_immediate_exit_is_decided_now_and_a_slow_one_at_its_time() -> None:
    workers, node = PodWorkers(Timers("eviction-manager")), kubelet_node()
    out = emitter(10)
    assert workers.stop(node, pod("fast"), 30, "Deleted", "cause", out)
    assert [(t, p, d["reason"]) for t, _, p, d in decided(out)] == [("PodTerminated", "default/fast", "Deleted")]
    out = emitter(10)
    assert not workers.stop(node, pod("lazy", annotations={"ledgerlet/exit-after": "20"}), 30, "Evicted", "c", out)
    assert asked(out) == [30.0] and "default/lazy" in node.evicted
    assert workers.exits_due(29 * S) == []
    (due,) = workers.exits_due(30 * S)
    assert (due.pod, due.data.killed_at) == ("default/lazy", 10.0)


def test_a_second_kill_with_a_shorter_grace_brings_the_exit_forward() -> None:
    workers, node = PodWorkers(Timers("eviction-manager")), kubelet_node()
    workers.stop(node, pod("db", annotations={"ledgerlet/exit-after": "60"}), 30, "Deleted", "c", emitter(0))
    later = emitter(5)
    workers.shorten("default/db", 10, later)  # a shutdown kills it again with 10 s
    assert asked(later) == [15.0]
    longer = emitter(6)
    workers.shorten("default/db", 60, longer)  # a longer grace changes nothing
    assert asked(longer) == []
    (due,) = workers.exits_due(15 * S)
    assert due.pod == "default/db"


def test_while_the_kubelet_is_down_a_stop_waits_unless_forced() -> None:
    workers, node = PodWorkers(Timers("eviction-manager")), kubelet_node()
    node.off = True
    out = emitter(0)
    assert not workers.stop(node, pod("web"), 30, "Deleted", "c", out)
    assert decided(out) == [] and "default/web" in node.terminating
    forced = emitter(0)
    assert workers.stop(node, pod("db"), 0, "ForceDeleted", "c", forced)
