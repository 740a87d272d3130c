"""kube-scheduler over its cache: the queue of pods waiting to be placed, and one
scheduling cycle per ready pod, in queue order (``pkg/scheduler/schedule_one.go``).

Binding is a ``PodScheduled`` decision the kubelet acts on; preemption is a
``PodNominated`` decision and one ``PodPreempted`` per victim, which the kubelet stops
with its own grace period. A cluster event (a pod gone, a node changed) moves the
unschedulable pods back to the active queue once their back-off is over; a pod placed
moves those that PodTopologySpread or InterPodAffinity refused (the events those plugins
register). A pod with scheduling gates waits outside the queue until they are removed
(``schedulinggates``: PreEnqueue); a pod for another scheduler is not this one's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, overload

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
from ledgerlet_core.scheduling.terms import DEFAULT_SCHEDULER

#: the plugins that register pod additions among the events that can make a pod schedulable
MOVED_BY_POD_ADDED: Final = frozenset({"PodTopologySpread", "InterPodAffinity"})


class LazyBudgets(Sequence[PDB]):
    """The disruption budgets' views, worked out only if preemption reads them."""

    def __init__(self, scheduler: KubeScheduler) -> None:
        self._scheduler = scheduler
        self._views: list[PDB] | None = None

    def _all(self) -> list[PDB]:
        if self._views is None:
            pending = (p.info for p in self._scheduler.pending.values())
            self._views = self._scheduler.cache.pdb_views(pending)
        return self._views

    @overload
    def __getitem__(self, i: int) -> PDB: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[PDB]: ...
    def __getitem__(self, i: int | slice) -> PDB | Sequence[PDB]:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[PDB]:
        return iter(self._all())


@dataclass(slots=True)
class _Pending:
    pod: Pod
    info: PodInfo
    #: the event that admitted it (a pod's decisions cite it)
    cause: str


#: scheduling cycles between two of the pass's yields (:meth:`KubeScheduler.scheduling`)
CYCLES_PER_STEP: Final = 256


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
        #: pods waiting for their scheduling gates to be removed
        self.gated: dict[str, _Pending] = {}
        #: unschedulable pods that a pod being placed may help (PodTopologySpread, InterPodAffinity)
        self._waiting_on_pods = 0

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

    def enqueue(self, pod: Pod, now: int, cause: str, out: Emitter | None = None) -> None:
        """An admitted pod that waits for a node: into the queue, unless another scheduler
        is to place it, or scheduling gates hold it (then it waits for them, said once)."""
        if (pod.spec.scheduler_name or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            return  # another scheduler's pod: not in this one's queue (named at load)
        info = pod_info(pod)
        pending = _Pending(pod, info, cause)
        if info.sched.gates:
            self.gated[pod.key] = pending
            if out is not None:
                out.decide(records.gated(info), pod=info.key, causes=[cause] if cause else None)
            return
        if pod.status.nominated_node_name and pod.status.nominated_node_name in self.cache.nodes:
            self.cache.nominate(info, pod.status.nominated_node_name)
        self._seq += 1
        self.pending[pod.key] = pending
        self.queue[pod.key] = QueuedPod(pod.key, info.priority, now, self._seq, ready_at=now)

    def gates_updated(self, pod: Pod, now: int, out: Emitter) -> bool:
        """An update of a gated pod (gates can only be removed): once none is left, it
        joins the queue. True when the pod was gated here."""
        held = self.gated.get(pod.key)
        if held is None:
            return False
        if pod.spec.scheduling_gates:
            return True
        del self.gated[pod.key]
        self.enqueue(pod, now, held.cause)
        self._wake(now, out)
        return True

    def is_known(self, key: str) -> bool:
        return key in self.pending or key in self.cache.pod_node or key in self.gated

    def deleted(self, key: str) -> bool:
        """A delete: a pod still queued (or gated) is gone at once (True); a bound one is
        terminating."""
        if key in self.gated:
            del self.gated[key]
            return True
        if key in self.queue:
            p = self.pending.pop(key, None)
            q = self.queue.pop(key, None)
            if p is not None:
                self.cache.unnominate(p.info)
            if q is not None and q.state == "unschedulable" and q.plugins & MOVED_BY_POD_ADDED:
                self._waiting_on_pods -= 1
            return True
        info = self.cache.bound(key)
        if info is not None:
            self.cache.mark_terminating(info)
        return False

    def started(self, key: str, now: int) -> None:
        self.cache.started(key, now)

    def terminating(self, key: str) -> None:
        info = self.cache.bound(key)
        if info is not None:
            self.cache.mark_terminating(info)

    def cluster_event(self, now: int, out: Emitter) -> None:
        """Something that may make a pending pod fit: unschedulable pods go back (after backoff)."""
        for at in sorted(set(move_all(self.queue, now, self.initial_backoff, self.max_backoff))):
            self._wake(at, out)
        self._waiting_on_pods = 0

    def pod_placed(self, now: int, out: Emitter) -> None:
        """A pod was bound: the unschedulable pods that spread or inter-pod affinity refused
        go back (after backoff), as the events those plugins register move them."""
        if self._waiting_on_pods <= 0:
            return
        moved = {k: q for k, q in self.queue.items() if q.state == "unschedulable" and q.plugins & MOVED_BY_POD_ADDED}
        self._waiting_on_pods = 0
        for at in sorted(set(move_all(moved, now, self.initial_backoff, self.max_backoff))):
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
        for _ in self.scheduling(tick, now, out):
            pass

    def scheduling(self, tick: str, now: int, out: Emitter) -> Iterator[None]:
        """:meth:`schedule`, yielding every :data:`CYCLES_PER_STEP` cycles: tens of
        thousands of pending pods take seconds, and whoever runs it may go on meanwhile."""
        for at in flush_stale(self.queue, now, self.initial_backoff, self.max_backoff):
            self._wake(at, out)
        for n, q in enumerate(ready(self.queue, now), start=1):
            if q.key in self.queue:
                self._attempt(tick, now, q, out)
            if n % CYCLES_PER_STEP == 0:
                yield

    def _attempt(self, tick: str, now: int, q: QueuedPod, out: Emitter) -> None:
        p = self.pending[q.key]
        info = p.info
        pdbs = LazyBudgets(self)
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
            index=self.cache.index if self.vectorized else None,
            default_selector=self.cache.default_selector(info),
        )
        self.start_index = result.next_start
        causes = [tick, p.cause] if p.cause else [tick]
        if result.node:
            self._bound(now, q, p, result, causes, out)
            return
        post = result.preemption
        if post is not None and post.nominate:
            self._nominate(now, p, post, result, pdbs, causes, out)
        elif post is not None and post.nominate == "" and info.nominated:
            self.cache.unnominate(info)
            info.nominated = ""
        failed(q, now, frozenset(s.plugin for s in result.statuses.values()))
        if q.plugins & MOVED_BY_POD_ADDED:
            self._waiting_on_pods += 1
        backoff = backoff_duration(q.attempts, self.initial_backoff, self.max_backoff) / SECOND
        out.decide(
            records.unschedulable(info, result, attempts=q.attempts, backoff_seconds=backoff),
            pod=info.key,
            causes=causes,
        )

    def _bound(self, now: int, q: QueuedPod, p: _Pending, result: CycleResult, causes: list[str], out: Emitter) -> None:
        info = p.info
        nominated = info.nominated
        self.cache.unnominate(info)
        del self.pending[q.key]
        del self.queue[q.key]
        self.cache.bind(info, result.node)
        record = records.scheduled(info, result, nominated=nominated, attempts=q.attempts + 1)
        out.decide(record, node=result.node, pod=info.key, causes=causes)
        self.pod_placed(now, out)

    def _nominate(
        self,
        now: int,
        p: _Pending,
        post: Preemption,
        result: CycleResult,
        pdbs: Sequence[PDB],
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
            self.cache.mark_terminating(victim)
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
