"""kube-scheduler over its cache: the queue of pods waiting to be placed, and one
scheduling cycle per ready pod, in queue order (``pkg/scheduler/schedule_one.go``).

Binding is a ``PodScheduled`` decision the kubelet acts on; preemption is a
``PodNominated`` decision and one ``PodPreempted`` per victim, which the kubelet stops
with its own grace period. A cluster event (a pod gone, a node changed) moves the
unschedulable pods back to the active queue once their back-off is over.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledgerlet_core.contracts.internal import PHASE_TIMERS
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.scheduling import records
from ledgerlet_core.scheduling.cache import SchedulerCache
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import CycleResult, schedule_one
from ledgerlet_core.scheduling.info import PodInfo, pod_info
from ledgerlet_core.scheduling.preemption import PDB, DryRuns, Preemption, pdb_violations
from ledgerlet_core.scheduling.queue import QueuedPod, backoff_duration, failed, flush_stale, move_all, ready


@dataclass(slots=True)
class _Pending:
    pod: Pod
    info: PodInfo
    #: the event that admitted it (a pod's decisions cite it)
    cause: str


class KubeScheduler:
    def __init__(self, owner: str) -> None:
        self.timers = Timers(owner)
        self.config = SchedulerConfig()
        self.cache = SchedulerCache()
        self.pending: dict[str, _Pending] = {}
        self.queue: dict[str, QueuedPod] = {}
        self.start_index = 0
        self._seq = 0
        #: filter and score every node at once, and keep preemption's dry runs while their
        #: nodes do not change (the same decisions; off: node by node, every time)
        self.vectorized = True
        self.dry_runs = DryRuns()

    def configure(self, config: SchedulerConfig) -> None:
        self.config = config

    @property
    def initial_backoff(self) -> int:
        return self.config.pod_initial_backoff_seconds * SECOND

    @property
    def max_backoff(self) -> int:
        return self.config.pod_max_backoff_seconds * SECOND

    def _wake(self, at: int, out: Emitter) -> None:
        self.timers.want(at, PHASE_TIMERS, out)

    # -- pods in and out -----------------------------------------------------------------
    def running(self, pod: Pod, started_at: int | None) -> None:
        """A pod bound from the start (or by its creator): it holds resources, no scheduling.
        ``started_at``: None until its kubelet starts it."""
        info = pod_info(pod)
        info.start = started_at
        self.cache.bind(info, pod.spec.node_name)

    def enqueue(self, pod: Pod, now: int, cause: str) -> None:
        """An admitted pod that waits for a node."""
        self._seq += 1
        info = pod_info(pod)
        self.pending[pod.key] = _Pending(pod, info, cause)
        self.queue[pod.key] = QueuedPod(pod.key, info.priority, now, self._seq, ready_at=now)

    def is_known(self, key: str) -> bool:
        return key in self.pending or key in self.cache.pod_node

    def deleted(self, key: str) -> bool:
        """A delete: a pod still queued is gone at once (True); a bound one is terminating."""
        if key in self.queue:
            p = self.pending.pop(key, None)
            self.queue.pop(key, None)
            if p is not None:
                self.cache.unnominate(p.info)
            return True
        info = self.cache.bound(key)
        if info is not None:
            info.terminating = True
        return False

    def started(self, key: str, now: int) -> None:
        self.cache.started(key, now)

    def terminating(self, key: str) -> None:
        info = self.cache.bound(key)
        if info is not None:
            info.terminating = True

    def cluster_event(self, now: int, out: Emitter) -> None:
        """Something that may make a pending pod fit: unschedulable pods go back (after backoff)."""
        for at in sorted(set(move_all(self.queue, now, self.initial_backoff, self.max_backoff))):
            self._wake(at, out)

    def gone(self, key: str, now: int, out: Emitter) -> bool:
        """The pod no longer holds resources; True if it held some here (a cluster event)."""
        if self.cache.gone(key):
            self.cluster_event(now, out)
            return True
        return False

    # -- scheduling ----------------------------------------------------------------------
    def schedule(self, tick: str, now: int, out: Emitter) -> None:
        """One cycle per pod ready now, in activeQ order (``tick``: the clock tick's id)."""
        for at in flush_stale(self.queue, now, self.initial_backoff, self.max_backoff):
            self._wake(at, out)
        for q in ready(self.queue, now):
            if q.key in self.queue:
                self._attempt(tick, now, q, out)

    def _attempt(self, tick: str, now: int, q: QueuedPod, out: Emitter) -> None:
        p = self.pending[q.key]
        info = p.info
        pdbs = self.cache.pdb_views()
        result = schedule_one(
            info,
            self.cache.in_order(),
            self.cache.nominated_view(),
            pdbs,
            self.config,
            now=now,
            start_index=self.start_index,
            table=self.cache.table() if self.vectorized else None,
            dry_runs=self.dry_runs if self.vectorized else None,
        )
        self.start_index = result.next_start
        causes = [tick, p.cause] if p.cause else [tick]
        if result.node:
            self._bound(q, p, result, causes, out)
            return
        post = result.preemption
        if post is not None and post.nominate:
            self._nominate(now, p, post, result, pdbs, causes, out)
        elif post is not None and post.nominate == "" and info.nominated:
            self.cache.unnominate(info)
            info.nominated = ""
        failed(q, now)
        backoff = backoff_duration(q.attempts, self.initial_backoff, self.max_backoff) / SECOND
        out.decide(
            records.unschedulable(info, result, attempts=q.attempts, backoff_seconds=backoff),
            pod=info.key,
            causes=causes,
        )

    def _bound(self, q: QueuedPod, p: _Pending, result: CycleResult, causes: list[str], out: Emitter) -> None:
        info = p.info
        nominated = info.nominated
        self.cache.unnominate(info)
        del self.pending[q.key]
        del self.queue[q.key]
        self.cache.bind(info, result.node)
        record = records.scheduled(info, result, nominated=nominated, attempts=q.attempts + 1)
        out.decide(record, node=result.node, pod=info.key, causes=causes)

    def _nominate(
        self,
        now: int,
        p: _Pending,
        post: Preemption,
        result: CycleResult,
        pdbs: list[PDB],
        causes: list[str],
        out: Emitter,
    ) -> None:
        """Record the nomination, delete the victims (their own grace), and clear the
        nominations of lower-priority pods on that node (``prepareCandidate``)."""
        info = p.info
        node = post.nominate or ""
        cleared = self.cache.nominate(info, node)
        violating = {v.key for v in pdb_violations(post.victims, pdbs)[0]}
        nomination = out.decide(
            records.nominated(info, post, result, node=node, cleared=cleared), node=node, pod=info.key, causes=causes
        )
        for victim in post.victims:
            if victim.terminating:
                continue  # already being deleted: no second delete
            victim.terminating = True
            victim.by_preemption = True
            out.decide(
                records.preempted(victim, info, violates_pdb=victim.key in violating),
                node=node,
                pod=victim.key,
                causes=[nomination],
            )
        for key in cleared:
            if key in self.queue:
                for at in move_all({key: self.queue[key]}, now, self.initial_backoff, self.max_backoff):
                    self._wake(at, out)
