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
from typing import cast

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_HOUSEKEEPING, PHASE_TIMERS, ClockTick, NodeObserved, PodStarted
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.reclaim import ReclaimAction
from ledgerlet_core.kubelet.eviction.signals import Signal
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
from ledgerlet_core.model.summary import PodStats, Summary
from ledgerlet_core.model.timefmt import format_rfc3339
from ledgerlet_core.model.usage import ZERO, NodeUsage, PodUsage, effective_layout, parse_pod_usage
from ledgerlet_core.node_sim.oom import ContainerRun, NodeMemory
from ledgerlet_core.node_sim.stats import (
    NodeCapacity,
    PodPlan,
    PodTotals,
    images_in_use,
    node_capacity,
    node_stats,
    plan_pod,
    pod_images,
    pod_stats_json,
    pod_writable_bytes,
    running_containers,
)


@dataclass(slots=True)
class _Node:
    node: Node
    config: KubeletConfig
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
    #: each pod's stats as the last observation told them (None: tell the next one whole)
    reported: dict[str, bytes] | None = None
    #: bumped whenever the running pods or their plans change (what ``passes`` holds for)
    plans_version: int = 0
    passes: _PassCache | None = None
    images_running: dict[str, int] = field(default_factory=dict)  # image -> running containers using it
    off: bool = False  # powered off or shut down: nothing observes it


@dataclass(slots=True)
class _PassCache:
    """A node's pods as a pass sees them, kept while they do not change (``version`` of
    the node's plans, the same stopped containers): what the pods whose stats never
    change use together, and the pods whose stats must be worked out every pass."""

    version: int
    stopped: dict[str, set[str]]
    fixed: PodTotals
    varying: list[str]


#: PodTerminated reasons after which the kubelet deletes the pod's containers at once
REMOVED_ON_EXIT = frozenset({"Evicted", "Deleted", "ForceDeleted", "Preempted", "TaintEviction"})


class Machines:
    """Every node's machine in one run; handlers take the event they fold (pure)."""

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
            self.nodes[name] = _Node(node=node, config=config)
        else:
            existing.node, existing.config = node, config
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
        node.pods[pod.key] = pod
        node.stale.add(pod.key)
        for image in pod_images(pod):
            node.images_running[image] = node.images_running.get(image, 0) + 1
        self.pod_node[pod.key] = node.node.metadata.name

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
        node.plans_version += 1
        for key, pod in node.pods.items():
            if key in stale:
                node.plans[key] = plan_pod(pod, self._usage_for(pod))
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
        node.reported = None  # (whatever the kubelet made of the node meanwhile: told whole again)
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
        node.plans_version += 1
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
        for name, node in self.nodes.items():
            if node.off:
                node.pending_stats = [s for s in node.pending_stats if s[0].t > env.t]
                continue
            self._fresh(node)
            stats = [s for s in node.pending_stats if s[0].t <= env.t]
            node.pending_stats = [s for s in node.pending_stats if s[0].t > env.t]
            memcg = env.t in node.memcg_passes
            node.memcg_passes.discard(env.t)
            if stats:
                # A recorded Summary replaces the derived observation at its instant.
                for stats_env, report in stats:
                    self._observe_stats(name, node, stats_env, report, out)
                if node.next_pass == env.t:
                    self._advance(node, env.t, out)
            elif node.next_pass is not None and node.next_pass <= env.t:
                self._observe_usage(name, node, env, out)
                self._advance(node, env.t, out)
            elif memcg and node.usage is not None:
                # kernelMemcgNotification: the kubelet hears of the crossing when it happens
                self._observe_usage(name, node, env, out)
            else:
                continue
            self._schedule_kernel(node, env.t, out)
            yield

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
        node.reported = None  # the kubelet saw other pods' stats: the next derived ones are told whole
        out.emit(
            NodeObserved(node=name, summary=summary, source="stats", after_reclaim=after, runtime=runtime),
            node=name,
            causes=[env.id],
        )

    def _observe_usage(self, name: str, node: _Node, tick: Envelope, out: Emitter) -> None:
        """The Summary the kubelet reads now (as :func:`derive_summary` has it), its pods'
        stats told as a change from the node's previous observation where they can be
        (``NodeObserved.podsDelta``). Most pods of a fleet report the same stats pass after
        pass (the same bytes): while a node's pods, plans and stopped containers stay as
        they were, a pass works out only the pods whose stats vary (:class:`_PassCache`)."""
        assert node.usage is not None and node.capacity is not None
        if self._unobserved(name):
            out.skip()
            return
        t = tick.t
        stopped = node.memory.stopped(t) if node.memory is not None else {}
        before, cache = node.reported, node.passes
        changed: dict[str, bytes]
        gone: list[str] = []
        if (
            before is not None
            and cache is not None
            and cache.version == node.plans_version
            and cache.stopped == stopped
        ):
            changed = {}
            uses = []
            for key in cache.varying:
                use, js = pod_stats_json(node.plans[key], t, stopped.get(key, frozenset()))
                uses.append(use)
                if js != before[key]:
                    changed[key] = before[key] = js
            totals = cache.fixed + PodTotals.of(uses)
            delta = True
        else:
            stats = {key: pod_stats_json(plan, t, stopped.get(key, frozenset())) for key, plan in node.plans.items()}
            varying = [k for k, p in node.plans.items() if p.fixed is None or k in stopped]
            node.passes = _PassCache(
                node.plans_version,
                stopped,
                PodTotals.of(stats[k][0] for k, p in node.plans.items() if p.fixed is not None and k not in stopped),
                varying,
            )
            totals = PodTotals.of(use for use, _ in stats.values())
            reported = node.reported = {k: js for k, (_, js) in stats.items()}
            delta = before is not None and _appended_only(before, reported)
            if delta:
                assert before is not None
                changed = {k: js for k, js in reported.items() if before.get(k) is not js and before.get(k) != js}
                gone = [k for k in before if k not in reported]
        summary = Summary(
            node=node_stats(
                name,
                t,
                self._clock_text(t),
                node.usage,
                node.capacity,
                node.layout,
                node.images,
                node.dead_container_bytes,
                totals,
                self._pods_memory_limit(node),
                node.dead_container_log_bytes,
            )
        )
        observed = NodeObserved(node=name, summary=summary, source="usage", runtime=self._runtime_view(node))
        if delta:
            observed.pods_delta = True
            observed.pods_changed = cast(dict[str, PodStats], {k: msgspec.Raw(js) for k, js in changed.items()})
            observed.pods_gone = gone
        else:  # (the list as JSON already: encoded as it is)
            assert node.reported is not None
            summary.pods = cast(list[PodStats], msgspec.Raw(b"[" + b",".join(node.reported.values()) + b"]"))
        out.emit(observed, node=name, causes=[tick.id])

    def _runtime_view(self, node: _Node) -> RuntimeView:
        in_use = images_in_use(node.images, set(node.images_running))
        images = [msgspec.structs.replace(i, in_use=i.name in in_use) for i in node.images]
        return RuntimeView(
            layout=node.layout,
            images=images,
            dead_containers=node.dead_containers,
            dead_container_bytes=node.dead_container_bytes,
            dead_container_log_bytes=node.dead_container_log_bytes,
        )

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


def _appended_only(before: Mapping[str, bytes], now: Mapping[str, bytes]) -> bool:
    """Whether the pods ``now`` are those ``before`` that remain, in their order, then new
    ones: what a change applied to ``before`` gives (pods replaced in place, new ones at
    the end). A pod that left and came back stands elsewhere: then the list goes whole."""
    remaining = [k for k in before if k in now]
    return list(now)[: len(remaining)] == remaining
