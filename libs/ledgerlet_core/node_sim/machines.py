"""The simulated machines under the nodes: what their workloads consume, observed once
per housekeeping pass, and their kernels (OOM kills, restarts, memcg notifications).

Closed-loop nodes (with a ``usage`` entry) are observed every ``housekeepingInterval``
from time 0, derived from usage and what runs there; a ``stats`` event replaces the
derived observation at its instant. Open-loop nodes are observed only by their
``stats`` events. Reclaim and pod exits change what later observations show: deleted
images and collected containers are gone, an exited pod's writable layer and logs stay
on disk as a dead container until container GC removes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import msgspec
import numpy as np

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_HOUSEKEEPING, PHASE_TIMERS, ClockTick, NodeObserved, PodStarted
from ledgerlet_core.contracts.registry import make_envelope, node_stream
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.local_storage import has_local_storage_limits
from ledgerlet_core.kubelet.eviction.manager import node_thresholds
from ledgerlet_core.kubelet.eviction.reclaim import ReclaimAction
from ledgerlet_core.kubelet.eviction.signals import Signal
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.loop.timers import Timers, next_multiple
from ledgerlet_core.model.annotations import FILESYSTEMS_ANNOTATION, WORKLOAD_ANNOTATION
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Node, Pod
from ledgerlet_core.model.k8s.qos import container_oom_score_adj
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.model.runtime import RuntimeImage, RuntimeView
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.model.timefmt import format_rfc3339
from ledgerlet_core.model.usage import ZERO, NodeUsage, PodUsage, effective_layout, parse_pod_usage
from ledgerlet_core.node_sim.columns import PodTerms, SeriesTable
from ledgerlet_core.node_sim.observing import NodeColumns, batches, emit_batch, needs_pods, plan_terms
from ledgerlet_core.node_sim.oom import ContainerRun, NodeMemory
from ledgerlet_core.node_sim.stats import (
    NodeCapacity,
    PodPlan,
    PodTotals,
    derive_summary,
    images_in_use,
    node_capacity,
    plan_pod,
    pod_images,
    pod_stats_json,
    pod_use,
    pod_writable_bytes,
    running_containers,
)


@dataclass(slots=True)
class _Node:
    node: Node
    config: KubeletConfig
    #: its row in the columns a tick's observations are made from (node_sim/observing.py)
    row: int
    usage: NodeUsage | None = None
    capacity: NodeCapacity | None = None
    layout: str = "single"
    images: list[RuntimeImage] = field(default_factory=list)
    dead_containers: int = 0
    dead_container_bytes: int = 0  # writable layers of exited containers
    dead_container_log_bytes: int = 0  # their logs (on nodefs)
    next_pass: int | None = None
    pending_stats: list[tuple[Envelope, inp.StatsReported]] = field(default_factory=list)
    memory: NodeMemory | None = None  # the kernel's view (closed loop)
    oom_checks: set[int] = field(default_factory=set)
    memcg_passes: set[int] = field(default_factory=set)
    pods: dict[str, Pod] = field(default_factory=dict)  # running, in admission order
    plans: dict[str, PodPlan] = field(default_factory=dict)  # what feeds each running pod's stats
    #: running pods whose plan and kernel view are not worked out yet (see Machines._fresh)
    stale: set[str] = field(default_factory=set)
    images_running: dict[str, int] = field(default_factory=dict)  # image -> running containers using it
    off: bool = False  # powered off or shut down: nothing observes it
    #: something its observations are made of changed since its columns were set
    dirty: bool = True
    #: the runtime view its observations carry, kept while nothing of it changes
    runtime: RuntimeView | None = None
    #: running pods that set local-storage limits (their pass reads the pods' stats)
    limited: set[str] = field(default_factory=set)


#: PodTerminated reasons after which the kubelet deletes the pod's containers at once
REMOVED_ON_EXIT = frozenset({"Evicted", "Deleted", "ForceDeleted", "Preempted", "TaintEviction"})


class Machines:
    """Every node's machine in one run; handlers take the event they fold (pure)."""

    #: the reference path the columns are held to (the property tests set it): a tick's
    #: derived observations made one at a time, pod by pod, each sent alone and whole
    one_by_one = False

    def __init__(self, owner: str, pods: Mapping[str, Pod], start: Callable[[], datetime]) -> None:
        """``pods``: the cluster view's live mapping of the pods that exist; ``start``: the
        run's wall-clock start (observations carry clock times)."""
        self.pods = pods
        self.start = start
        self.timers = Timers(owner)
        self.nodes: dict[str, _Node] = {}
        self.pod_node: dict[str, str] = {}
        self.pod_usage: dict[str, PodUsage] = {}
        #: the clock time of the last instant observed, as observations print it (every
        #: node observed at one tick prints the same)
        self._clock: tuple[datetime, int, str] | None = None
        #: nodes whose observations are not made, their places in the order kept (a quick
        #: verified replay: nodes on which the recorded run decided nothing)
        self.quiet: frozenset[str] = frozenset()
        #: this process's share of the nodes, when the collector is split (loop/membership.py)
        self.member: Membership | None = None
        #: whether the run keeps its derived observations whole (pods' stats of every node)
        self.whole = False

        #: the columns a tick's observations are made from (node_sim/observing.py)
        self._series = SeriesTable()
        self._terms = PodTerms(self._series)
        self._columns = NodeColumns(self._series)

    def _unobserved(self, name: str) -> bool:
        return name in self.quiet or (self.member is not None and not self.member.owns(name))

    def _clock_text(self, t: int) -> str:
        start = self.start()
        if self._clock is None or self._clock[0] != start or self._clock[1] != t:
            self._clock = (start, t, format_rfc3339(start, t))
        return self._clock[2]

    def node_applied(self, node: Node, config: KubeletConfig) -> None:
        name = node.metadata.name
        existing = self.nodes.get(name)
        if existing is None:
            self.nodes[name] = _Node(node=node, config=config, row=len(self.nodes))
        else:
            existing.node, existing.config = node, config
            existing.dirty = True
        self._refresh_layout(self.nodes[name])

    def running(self, pod: Pod) -> None:
        """A pod running on its node from the start."""
        self._place(pod)

    def pod_started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        # Only the kubelet knows whether a pod that arrived later runs: wait for it to say so.
        pod = self.pods.get(data.pod)  # (bound to data.node by the cluster view)
        if pod is not None and pod.metadata.uid == data.uid:
            self._place(pod)
            node = self.nodes.get(data.node)
            if node is not None and node.memory is not None:
                # look again for OOMs once this instant's pods are all in (one tick, not one per pod)
                node.oom_checks.add(env.t)
                self.timers.want(env.t, PHASE_TIMERS, out)

    def _place(self, pod: Pod) -> None:
        node = self.nodes.get(pod.spec.node_name) if pod.spec.node_name else None
        if node is None:
            return
        key = pod.key
        node.pods[key] = pod
        node.stale.add(key)
        for image in pod_images(pod):
            node.images_running[image] = node.images_running.get(image, 0) + 1
        node.dirty = True
        if has_local_storage_limits(pod):
            node.limited.add(key)
        self.pod_node[key] = node.node.metadata.name

    def usage_declared(
        self, env: Envelope, data: inp.UsageDeclared, node_usage: NodeUsage | None, out: Emitter
    ) -> None:
        """``node_usage``: a node entry as parsed (the cluster view parses it once)."""
        key = data.key
        if key.startswith("node/"):
            node = self.nodes.get(key[len("node/") :])
            if node is None or node_usage is None:
                return
            node.usage = node_usage
            node.capacity = node_capacity(node.node, node.usage)
            node.images = [
                RuntimeImage(name=i.name, size=i.size, in_use=i.in_use, pinned=i.pinned, first_detected=env.t)
                for i in node.usage.images
            ]
            node.dead_containers = node.usage.dead_containers_count
            node.dead_container_bytes = node.usage.dead_containers_bytes
            node.memory = NodeMemory(
                node.capacity.memory, node.usage.system.get("memory", ZERO), self._pods_memory_limit(node)
            )
            node.stale.update(node.pods)  # the kernel's view of each, anew
            node.dirty = True
            self._refresh_layout(node)
            node.next_pass = next_multiple(env.t, node.config.housekeeping_interval)
            self.timers.want(node.next_pass, PHASE_HOUSEKEEPING, out)
        else:
            self.pod_usage[key] = parse_pod_usage(data.usage, f"usage.{key}")
            self._replan(key)

    def _replan(self, usage_key: str) -> None:
        """Re-plan the running pods a new usage entry applies to (and only those)."""
        if usage_key.count("/") == 1:
            node_name = self.pod_node.get(usage_key)
            targets = [(node_name, usage_key)] if node_name else []
        else:
            ns, kind, name = usage_key.split("/")
            targets = [
                (n, k)
                for n, node in self.nodes.items()
                for k, p in node.pods.items()
                if p.metadata.namespace == ns
                and any(r.kind == kind and r.name == name for r in p.metadata.owner_references)
            ]
        for node_name, pod_key in targets:
            self.nodes[node_name].stale.add(pod_key)

    def _fresh(self, node: _Node) -> None:
        """Work out the plans and kernel views of the pods placed or re-planned since
        last asked (a fleet's pods are placed, then given their usage: planned once,
        not twice), in the order the pods run in, before anything reads them."""
        if not node.stale:
            return
        stale, node.stale = node.stale, set()
        for key, pod in node.pods.items():
            if key in stale:
                plan = node.plans[key] = plan_pod(pod, self._usage_for(pod))
                self._terms.place(key, node.row, plan_terms(plan))
                self._track(node, key)

    def stats_reported(self, env: Envelope, data: inp.StatsReported, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None:
            return
        node.pending_stats.append((env, data))
        self.timers.want(env.t, PHASE_HOUSEKEEPING, out)

    # -- decisions ----------------------------------------------------------------
    def pod_terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        if env.pod is None:
            return
        node_name = self.pod_node.get(env.pod)
        node = self.nodes.get(node_name) if node_name else None
        pod = node.pods.get(env.pod) if node else None
        if node is None or pod is None:
            return
        self._fresh(node)
        plan = node.plans.get(env.pod)
        if plan is not None and node.usage is not None and data.reason not in REMOVED_ON_EXIT:
            # Exited containers stay on disk (writable layer, logs) until container GC...
            rootfs, logs = pod_writable_bytes(plan, env.t)
            node.dead_container_bytes += rootfs
            node.dead_container_log_bytes += logs
            node.dead_containers += len(pod.spec.containers)
        # ... except those of evicted and deleted pods, which the kubelet removes as soon as
        # they exit (pod_container_deletor: cleanUpContainersInPod, ShouldPodContentBeRemoved).
        self._stop(env.pod)
        node.dirty = True
        released = pod_images(pod)
        for i, img in enumerate(node.images):
            if img.name in released and not node.images_running.get(img.name):
                node.images[i] = msgspec.structs.replace(img, last_used=env.t)

    def pod_force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._stop(env.pod)

    # -- power ----------------------------------------------------------------------
    def _power(self, name: str, off: bool, env: Envelope, out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is None or node.off == off:
            return
        node.off = off
        node.dirty = True
        if off:
            node.next_pass = None
        elif node.usage is not None:
            node.next_pass = next_multiple(env.t, node.config.housekeeping_interval)
            self.timers.want(node.next_pass, PHASE_HOUSEKEEPING, out)

    def node_powered_off(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self._power(data.node, True, env, out)

    def node_shut_down(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self._power(env.node or "", True, env, out)

    def node_powered_on(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        self._power(data.node, False, env, out)

    def node_reclaimed(self, env: Envelope, data: dec.NodeReclaimed, out: Emitter) -> None:
        node = self.nodes.get(env.node or "")
        if node is None:
            return
        node.dirty = True
        if data.action == ReclaimAction.GARBAGE_COLLECT_CONTAINERS:
            node.dead_containers = 0
            node.dead_container_bytes = 0
            node.dead_container_log_bytes = 0
        elif data.images:
            gone = set(data.images)
            node.images = [i for i in node.images if i.name not in gone]

    def images_collected(self, env: Envelope, data: dec.ImageGarbageCollected, out: Emitter) -> None:
        node = self.nodes.get(env.node or "")
        if node is not None and data.images:
            gone = set(data.images)
            node.images = [i for i in node.images if i.name not in gone]
            node.dirty = True

    def _stop(self, pod_key: str | None) -> None:
        if pod_key is None:
            return
        node_name = self.pod_node.pop(pod_key, None)
        node = self.nodes.get(node_name) if node_name else None
        if node is None:
            return
        pod = node.pods.pop(pod_key, None)
        node.plans.pop(pod_key, None)
        node.stale.discard(pod_key)
        node.limited.discard(pod_key)
        node.dirty = True
        self._terms.remove(pod_key)
        if node.memory is not None:
            node.memory.remove_pod(pod_key)
        for image in pod_images(pod) if pod is not None else ():
            node.images_running[image] -= 1
            if not node.images_running[image]:
                del node.images_running[image]

    # -- the clock ----------------------------------------------------------------
    def tick(self, env: Envelope, data: ClockTick, out: Emitter) -> Iterator[None]:
        """A generator: it yields after each node it observed, so the shell sends the
        observations as they come (a pass over 5,000 nodes takes seconds)."""
        self.timers.fired(env.t, data.phase)
        if data.phase == PHASE_TIMERS:
            for name, node in self.nodes.items():
                if env.t in node.oom_checks and not node.off:
                    node.oom_checks.discard(env.t)
                    self._fresh(node)
                    self._kernel(name, node, env, out)
            return
        if data.phase != PHASE_HOUSEKEEPING:
            return
        together: list[_Node] = []
        places: list[int] = []
        for name, node in self.nodes.items():
            if node.off:
                if node.pending_stats:
                    node.pending_stats = [s for s in node.pending_stats if s[0].t > env.t]
                continue
            self._fresh(node)
            stats: list[tuple[Envelope, inp.StatsReported]] = []
            if node.pending_stats:
                stats = [s for s in node.pending_stats if s[0].t <= env.t]
                node.pending_stats = [s for s in node.pending_stats if s[0].t > env.t]
            memcg = False
            if node.memcg_passes:
                memcg = env.t in node.memcg_passes
                node.memcg_passes.discard(env.t)
            if stats:
                # A recorded Summary replaces the derived observation at its instant.
                for stats_env, report in stats:
                    self._observe_stats(name, node, stats_env, report, out)
                if node.next_pass == env.t:
                    self._advance(node, env.t, out)
            elif node.next_pass is not None and node.next_pass <= env.t:
                if self._unobserved(name):
                    out.skip()
                else:  # observed with the others, in a batch: its place is taken now
                    together.append(node)
                    places.append(out.reserve())
                self._advance(node, env.t, out)
            elif memcg and node.usage is not None:
                # kernelMemcgNotification: the kubelet hears of the crossing when it happens
                if self._unobserved(name):
                    out.skip()
                else:
                    together.append(node)
                    places.append(out.reserve())
            else:
                continue
            self._schedule_kernel(node, env.t, out)
        if together and self.one_by_one:
            self._observe_one_by_one(together, places, env, out)
        elif together:
            for batch, count in self._observe_together(together, places, env, out.rank):
                emit_batch(out, batch, count)
                yield

    def _observe_one_by_one(self, nodes: list[_Node], places: list[int], tick: Envelope, out: Emitter) -> None:
        """The reference path: each observation made pod by pod (``derive_summary``) and
        sent alone, whole, at the place its batch member has (:attr:`one_by_one`)."""
        t = tick.t
        for node, place in zip(nodes, places, strict=True):
            assert node.usage is not None and node.capacity is not None
            name = node.node.metadata.name
            summary = derive_summary(
                name,
                t,
                self._clock_text(t),
                node.usage,
                node.capacity,
                node.layout,
                node.images,
                node.dead_container_bytes,
                list(node.plans.values()),
                self._pods_memory_limit(node),
                node.memory.stopped(t) if node.memory is not None else None,
                node.dead_container_log_bytes,
            )
            observed = NodeObserved(node=name, summary=summary, source="usage", runtime=self._runtime_view(node))
            order = [*tick.order, out.rank, place]
            env = make_envelope(
                observed, run=tick.run, t=t, order=order, stream=node_stream(name), node=name, causes=[tick.id]
            )
            out.emit_batch(env, name, 1)  # (its place was taken already)

    def _observe_together(
        self, nodes: list[_Node], places: list[int], tick: Envelope, rank: int
    ) -> list[tuple[Envelope, int]]:
        """The derived observations of ``nodes`` at the tick, as batches (node_sim/observing.py)."""
        t = tick.t
        for node in nodes:
            if node.dirty:
                self._set_columns(node)
        rows = np.fromiter((n.row for n in nodes), dtype=np.int64, count=len(nodes))
        totals = self._terms.totals(t, self._columns.size)[rows]
        stopped: dict[int, dict[str, set[str]]] = {}
        for i, node in enumerate(nodes):
            down = node.memory.stopped(t) if node.memory is not None else {}
            if down:  # (its OOM-killed containers hold no memory meanwhile: worked out pod by pod)
                stopped[i] = down
                uses = [pod_use(plan, t, down.get(k, frozenset())) for k, plan in node.plans.items()]
                pt = PodTotals.of(uses)
                totals[i] = (pt.memory, pt.rootfs, pt.logs_volumes, pt.inodes, pt.pids)
        stats = self._columns.stats(t, rows, totals)
        if self.whole:
            needy = np.ones(len(nodes), dtype=np.bool_)
        else:
            groups: dict[tuple[int, str], int] = {}
            thresholds: list[tuple[Threshold, ...]] = []
            group = np.zeros(len(nodes), dtype=np.int64)
            limited = np.zeros(len(nodes), dtype=np.bool_)
            for i, node in enumerate(nodes):
                key = (id(node.config), node.layout)
                g = groups.get(key)
                if g is None:
                    g = groups[key] = len(thresholds)
                    thresholds.append(tuple(node_thresholds(node.config, node.layout)))
                group[i] = g
                limited[i] = bool(node.limited) and node.config.spec.local_storage_capacity_isolation
            needy = needs_pods(stats, thresholds, group, limited)

        def pods(i: int) -> bytes | None:
            if not needy[i]:
                return None
            down = stopped.get(i, {})
            each = [pod_stats_json(plan, t, down.get(k, frozenset())) for k, plan in nodes[i].plans.items()]
            return b"[" + b",".join(each) + b"]"

        return batches(
            tick,
            rank,
            [n.node.metadata.name for n in nodes],
            places,
            stats,
            [self._runtime_view(n) for n in nodes],
            pods,
            time=self._clock_text(t),
            whole=self.whole,
        )

    def _set_columns(self, node: _Node) -> None:
        """What the node's observations are made of besides its pods, as it is now."""
        assert node.usage is not None and node.capacity is not None
        node.dirty = False
        node.runtime = None
        self._columns.set(
            node.row,
            node.usage,
            node.capacity,
            node.layout,
            sum(i.size for i in node.images),
            node.dead_container_bytes,
            node.dead_container_log_bytes,
            self._pods_memory_limit(node),
        )

    def _advance(self, node: _Node, now: int, out: Emitter) -> None:
        node.next_pass = now + node.config.housekeeping_interval
        self.timers.want(node.next_pass, PHASE_HOUSEKEEPING, out)

    # -- the kernel: OOM kills, restarts, memcg notifications ----------------------------
    def _track(self, node: _Node, pod_key: str) -> None:
        """(Re)build the kernel's view of a running pod's containers, keeping restart state."""
        if node.memory is None or node.capacity is None:
            return
        pod, plan = node.pods[pod_key], node.plans[pod_key]
        by_name = {c.name: c for c in running_containers(pod)}  # sidecars have their own oom_score_adj
        for name, memory, _, _ in plan.containers:
            old = node.memory.runs.get((pod_key, name))
            run = ContainerRun(
                pod=pod_key,
                container=name,
                memory=memory,
                limit=plan.memory_limits.get(name),
                oom_score_adj=container_oom_score_adj(pod, by_name[name], node.capacity.memory)
                if name in by_name
                else 1000,
                restart_policy=pod.spec.restart_policy,
            )
            if old is not None:
                run.restarts, run.down_until, run.dead = old.restarts, old.down_until, old.dead
            node.memory.add(run)

    def _schedule_kernel(self, node: _Node, now: int, out: Emitter, *, acted: bool = False) -> None:
        """Find, until the next pass, the first OOM (or restart) and the first memcg crossing."""
        if node.memory is None or node.next_pass is None or node.capacity is None:
            return
        until = node.next_pass
        at = node.memory.next_oom(now, until, inclusive=not acted)
        if at is not None and at not in node.oom_checks:
            node.oom_checks.add(at)
            self.timers.want(at, PHASE_TIMERS, out)
        if not node.config.spec.kernel_memcg_notification:
            return
        capacity = Quantity.bytes(node.capacity.memory)
        pods_limit = self._pods_memory_limit(node)
        for t in node.config.thresholds:
            if t.signal == Signal.MEMORY_AVAILABLE:
                level = node.capacity.memory - t.value.resolve(capacity).value()
                hit = node.memory.next_crossing(level, now, until)
            elif t.signal == Signal.ALLOCATABLE_MEMORY_AVAILABLE and pods_limit is not None:
                level = pods_limit - t.value.resolve(Quantity.bytes(pods_limit)).value()
                hit = node.memory.next_crossing(level, now, until, pods_only=True)
            else:
                continue
            if hit is not None and hit < until and hit not in node.memcg_passes:
                node.memcg_passes.add(hit)
                self.timers.want(hit, PHASE_HOUSEKEEPING, out)

    def _kernel(self, name: str, node: _Node, env: Envelope, out: Emitter) -> None:
        assert node.memory is not None
        for kill in node.memory.act(env.t):
            out.emit(
                dec.OOMKilled(
                    container=kill.container,
                    oom_score_adj=kill.oom_score_adj,
                    scope=kill.scope,
                    usage=kill.usage,
                    limit=kill.limit,
                    oom_score=kill.oom_score,
                    restart_count=kill.restarts,
                    restart_at=kill.restart_at / SECOND if kill.restart_at is not None else None,
                    pod_failed=kill.pod_failed,
                ),
                node=name,
                pod=kill.pod,
            )
        self._schedule_kernel(node, env.t, out, acted=True)

    def _observe_stats(self, name: str, node: _Node, env: Envelope, report: inp.StatsReported, out: Emitter) -> None:
        if self._unobserved(name):
            out.skip()
            return
        summary = convert(report.summary, Summary)
        after = convert(report.after_reclaim, Summary) if report.after_reclaim is not None else None
        runtime = self._runtime_view(node) if node.usage is not None else None
        out.emit(
            NodeObserved(node=name, summary=summary, source="stats", after_reclaim=after, runtime=runtime),
            node=name,
            causes=[env.id],
        )

    def _runtime_view(self, node: _Node) -> RuntimeView:
        """What the runtime reports (kept until the node changes: :attr:`_Node.dirty`)."""
        if node.runtime is not None and not node.dirty:
            return node.runtime
        in_use = images_in_use(node.images, set(node.images_running))
        images = [msgspec.structs.replace(i, in_use=i.name in in_use) for i in node.images]
        node.runtime = RuntimeView(
            layout=node.layout,
            images=images,
            dead_containers=node.dead_containers,
            dead_container_bytes=node.dead_container_bytes,
            dead_container_log_bytes=node.dead_container_log_bytes,
        )
        return node.runtime

    def _pods_memory_limit(self, node: _Node) -> int | None:
        """The kubepods cgroup limit when allocatable is enforced on pods."""
        assert node.capacity is not None
        spec = node.config.spec
        if "pods" not in spec.enforce_node_allocatable:
            return None
        reserved = sum(r["memory"].value() for r in (spec.system_reserved, spec.kube_reserved) if "memory" in r)
        return node.capacity.memory - reserved

    def _usage_for(self, pod: Pod) -> PodUsage | None:
        direct = self.pod_usage.get(pod.key)
        if direct is not None:
            return direct
        for ref in pod.metadata.owner_references:
            found = self.pod_usage.get(f"{pod.metadata.namespace}/{ref.kind}/{ref.name}")
            if found is not None:
                return found
        workload = pod.metadata.annotations.get(WORKLOAD_ANNOTATION)  # a Deployment, for its ReplicaSet's pods
        return self.pod_usage.get(f"{pod.metadata.namespace}/{workload}") if workload else None

    def _refresh_layout(self, node: _Node) -> None:
        node.layout = effective_layout(
            node.node.metadata.annotations.get(FILESYSTEMS_ANNOTATION),
            node.usage is not None and node.usage.image_fs is not None,
        )
