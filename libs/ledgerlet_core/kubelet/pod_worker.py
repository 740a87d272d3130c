"""The kubelet's pod workers: how a pod told to stop gets its grace period and when it
exits (``pkg/kubelet/pod_workers.go``, ``kuberuntime_container.go: killContainer``).

A pod gets SIGTERM when it is told to stop and exits after its ``ledgerlet/exit-after``
or when its grace period runs out, whichever is first; a pod already stopping that is
killed again with a shorter grace keeps the shorter one
(``calculateEffectiveGracePeriod``). While the kubelet is down nothing is confirmed:
the pod stays Terminating until the kubelet comes back, unless it is force-deleted.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts.internal import PHASE_TIMERS
from ledgerlet_core.kubelet.node import KubeletNode
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.annotations import exit_after_seconds
from ledgerlet_core.model.duration import SECOND, seconds
from ledgerlet_core.model.k8s.objects import Pod

SortKey = tuple[int, tuple[int, ...]]


def exit_delay(pod: Pod, grace_seconds: int) -> int:
    """How long (ns) after SIGTERM the pod exits: its own exit time, at most its grace."""
    return min(seconds(exit_after_seconds(pod)), max(grace_seconds, 0) * SECOND)


@dataclass(order=True, slots=True)
class Exit:
    at: int
    #: the (time, order) of the decision that stopped the pod: ties broken the same way
    #: whatever order the loops' events were consumed in
    source: SortKey
    pod: str = field(compare=False)
    node: str = field(compare=False)
    data: dec.PodTerminated = field(compare=False)
    cause: str = field(compare=False)


class PodWorkers:
    """Pods stopping on every node: when each exits, and the graceful shutdown's kills."""

    def __init__(self, timers: Timers) -> None:
        self.timers = timers
        self.exits: list[Exit] = []
        #: the graceful shutdown's kills: (at, seq, pod, node, grace, cause)
        self.kills: list[tuple[int, int, str, str, int, str]] = []

    def stop(
        self,
        node: KubeletNode,
        pod: Pod,
        grace: int,
        reason: str,
        cause: str,
        out: Emitter,
        message: str = "",
    ) -> bool:
        """SIGTERM now; the pod exits later (a timer) or now (``PodTerminated``, True).
        ``cause``: the id of the decision that stopped it."""
        now = out.trigger.t
        data = dec.PodTerminated(reason=reason, grace_period_seconds=grace, killed_at=now / SECOND, message=message)
        if node.off and reason != "ForceDeleted":
            # the kubelet is gone: the pod stays Terminating until it comes back (or is force-deleted;
            # a force delete removes the object from the API server whatever the kubelet does)
            node.terminating[pod.key] = (data, cause)
            return False
        delay = exit_delay(pod, grace)
        if delay == 0:
            out.decide(data, node=node.name, pod=pod.key, causes=[cause])
            return True
        if reason == "Evicted":
            node.evicted[pod.key] = now  # the next passes wait for it to go
        at = now + delay
        source = (now, (*out.trigger.order, len(self.exits)))
        heapq.heappush(self.exits, Exit(at, source, pod.key, node.name, data, cause))
        self.timers.want(at, PHASE_TIMERS, out)
        return False

    def shorten(self, key: str, grace: int, out: Emitter) -> None:
        """A pod already stopping is killed again with ``grace``: the shorter grace wins."""
        now = out.trigger.t
        for i, e in enumerate(self.exits):
            if e.pod != key:
                continue
            at = now + grace * SECOND
            if at < e.at:
                self.exits[i] = Exit(at, e.source, e.pod, e.node, e.data, e.cause)
                heapq.heapify(self.exits)
                self.timers.want(at, PHASE_TIMERS, out)
            return

    def went_off(self, node: KubeletNode) -> None:
        """The machine went down: pods killed and not yet exited stay Terminating."""
        for e in self.exits:
            if e.node == node.name:
                node.terminating[e.pod] = (e.data, e.cause)

    def plan_kills(self, node: str, kills: list[tuple[str, int, int]], cause: str, out: Emitter) -> None:
        """The graceful shutdown's plan: (pod, at, grace) each, killed at its time."""
        for pod, at, grace in kills:
            heapq.heappush(self.kills, (at, len(self.kills), pod, node, grace, cause))
            self.timers.want(at, PHASE_TIMERS, out)

    def kills_due(self, now: int) -> list[tuple[str, str, int, str]]:
        """The shutdown kills due now: (pod, node, grace, cause), in plan order."""
        due = []
        while self.kills and self.kills[0][0] <= now:
            _, _, key, node, grace, cause = heapq.heappop(self.kills)
            due.append((key, node, grace, cause))
        return due

    def exits_due(self, now: int) -> list[Exit]:
        due = []
        while self.exits and self.exits[0].at <= now:
            due.append(heapq.heappop(self.exits))
        return due
