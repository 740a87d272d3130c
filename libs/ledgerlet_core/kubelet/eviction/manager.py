"""One housekeeping pass of the kubelet eviction manager, as a pure function.

Upstream: ``pkg/kubelet/eviction/eviction_manager.go: synchronize`` (order of steps),
``evictPod``, ``reclaimNodeLevelResources``, ``Admit``; ``helpers.go: evictionMessage``,
``getThresholdMetInfo``, ``byEvictionPriority``. Every intermediate value the kubelet
only logs (observations, met sets, first-observed times, the ranking) is returned, so a
decision carries the inputs it was made from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from ledgerlet_core.contracts.decisions import RankingEntry
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.local_storage import LocalStorageEviction, local_storage_evictions
from ledgerlet_core.kubelet.eviction.observations import (
    LazyObservations,
    Observation,
    SignalValue,
    any_threshold_met,
    make_signal_observations,
    merge_thresholds,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
    signal_values,
    threshold_quantity,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
)
from ledgerlet_core.kubelet.eviction.ranking import StatsLookup, rank_funcs, rank_pods, stats_lookup
from ledgerlet_core.kubelet.eviction.reclaim import (
    ReclaimResult,
    RuntimeView,
    reclaim_funcs,
    run_reclaim,
    summary_after_reclaim,
)
from ledgerlet_core.kubelet.eviction.signals import (
    CONDITION_ORDER,
    DISK_PRESSURE,
    MEMORY_PRESSURE,
    PID_PRESSURE,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    SIGNAL_TO_RESOURCE,
    Signal,
)
from ledgerlet_core.kubelet.eviction.thresholds import Threshold, update_containerfs_thresholds
from ledgerlet_core.model.k8s.objects import Pod, Taint
from ledgerlet_core.model.k8s.priority import is_critical_pod
from ledgerlet_core.model.k8s.qos import BEST_EFFORT, pod_qos
from ledgerlet_core.model.k8s.taints import NO_SCHEDULE, TAINT_NODE_MEMORY_PRESSURE, tolerations_tolerate_taint
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.model.summary import PodStats, Summary
from ledgerlet_core.model.usage import LAYOUT_DEDICATED_IMAGEFS, LAYOUT_SPLIT_IMAGEFS

#: ``immediateEvictionGracePeriodSeconds``: what a hard threshold gives a pod.
IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: Final = 1
#: ``podCleanupTimeout``: how long the kubelet waits for evicted pods before acting again
POD_CLEANUP_TIMEOUT: Final = 30 * 10**9
EVICTED_REASON: Final = "Evicted"

#: ``pkg/kubelet/nodestatus/setters.go``: reason and message per condition and status.
CONDITION_TEXT: Final[dict[tuple[str, str], tuple[str, str]]] = {
    (MEMORY_PRESSURE, "True"): ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    (MEMORY_PRESSURE, "False"): ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    (DISK_PRESSURE, "True"): ("KubeletHasDiskPressure", "kubelet has disk pressure"),
    (DISK_PRESSURE, "False"): ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    (PID_PRESSURE, "True"): ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
    (PID_PRESSURE, "False"): ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
}


@dataclass(frozen=True, slots=True)
class EvictionState:
    """What the eviction manager carries from one pass to the next, for one node."""

    first_observed: tuple[tuple[Threshold, int], ...] = ()
    conditions_last_observed: Mapping[str, int] = field(default_factory=dict)
    conditions: tuple[str, ...] = ()
    thresholds_met: tuple[Threshold, ...] = ()
    last_observations: Mapping[Signal, Observation] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConditionChange:
    condition: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """The pod one pass evicts and everything that went into choosing it."""

    pod: Pod
    threshold: Threshold
    resource: str
    observed: Quantity
    threshold_quantity: Quantity
    capacity: Quantity
    grace_period_seconds: int
    message: str
    ranking: tuple[RankingEntry, ...]
    offending_containers: tuple[str, ...] = ()
    offending_containers_usage: tuple[str, ...] = ()
    skipped_critical: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PassResult:
    state: EvictionState
    observations: Mapping[Signal, Observation]
    met: tuple[Threshold, ...]
    grace_met: tuple[Threshold, ...]
    condition_changes: tuple[ConditionChange, ...]
    chosen: Threshold | None = None
    reclaims: tuple[ReclaimResult, ...] = ()
    reclaim_resolved: bool = False
    runtime: RuntimeView | None = None
    eviction: Eviction | None = None
    ranking: tuple[RankingEntry, ...] = ()
    note: str = ""
    local_evictions: tuple[LocalStorageEviction, ...] = ()
    #: what the kubelet saw after node-level reclaim in this pass (when reclaim ran)
    post_reclaim_summary: Summary | None = None


def node_thresholds(config: KubeletConfig, layout: str) -> list[Threshold]:
    """The configured thresholds with containerfs derived for the node's layout (worked
    out once per configuration and layout: every pass of every node asks)."""
    key = (id(config), layout)
    found = _NODE_THRESHOLDS.get(key)
    if found is None or found[0] is not config:
        if len(_NODE_THRESHOLDS) >= 1024:
            _NODE_THRESHOLDS.clear()
        thresholds = update_containerfs_thresholds(
            list(config.thresholds),
            dedicated_imagefs=layout == LAYOUT_DEDICATED_IMAGEFS,
            split_containerfs=layout == LAYOUT_SPLIT_IMAGEFS,
        )
        found = _NODE_THRESHOLDS[key] = (config, tuple(thresholds))
    return list(found[1])


_NODE_THRESHOLDS: dict[tuple[int, str], tuple[KubeletConfig, tuple[Threshold, ...]]] = {}


def condition_changes(before: Sequence[str], after: Sequence[str]) -> tuple[ConditionChange, ...]:
    out: list[ConditionChange] = []
    for cond in CONDITION_ORDER:
        was, now = cond in before, cond in after
        if was != now:
            status = "True" if now else "False"
            reason, message = CONDITION_TEXT[(cond, status)]
            out.append(ConditionChange(cond, status, reason, message))
    return tuple(out)


def _quiet(
    state: EvictionState,
    config: KubeletConfig,
    now: int,
    cleanup_pending: Sequence[str],
    local_storage_candidates: Sequence[Pod] | None,
) -> bool:
    """Whether a pass that meets no threshold provably decides nothing and changes
    nothing but the observations it keeps: no threshold met or first observed last time,
    no condition reported last time nor within its transition period now (the node's
    configuration may have changed it since), no evicted pod being waited for, no pod to
    check against its own local-storage limits."""
    return (
        not state.thresholds_met
        and not state.first_observed
        and not state.conditions
        and not node_conditions_observed_since(
            state.conditions_last_observed, config.eviction_pressure_transition_period, now
        )
        and not cleanup_pending
        and (
            not config.spec.local_storage_capacity_isolation
            or (local_storage_candidates is not None and not local_storage_candidates)
        )
    )


def _quiet_pass(state: EvictionState, values: Mapping[Signal, SignalValue], runtime: RuntimeView | None) -> PassResult:
    """What :func:`synchronize` gives for a :func:`_quiet` state when no threshold is met:
    nothing met, first observed or reported, the conditions' last-observed times as they
    were, and this pass's observations kept (made only if a later pass reads them)."""
    observations = LazyObservations(values)
    return PassResult(
        state=EvictionState(
            conditions_last_observed=dict(state.conditions_last_observed), last_observations=observations
        ),
        observations=observations,
        met=(),
        grace_met=(),
        condition_changes=(),
        runtime=runtime,
    )


def grace_period_override(threshold: Threshold, pod: Pod, max_pod_grace_period: int) -> int:
    """Hard: 1 s. Soft: evictionMaxPodGracePeriod, or the pod's own grace if smaller."""
    if threshold.hard:
        return IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
    own = pod.spec.termination_grace_period_seconds
    return min(max_pod_grace_period, own) if own is not None else max_pod_grace_period


def threshold_met_info(
    resource: str, thresholds: Sequence[Threshold], observations: Mapping[Signal, Observation]
) -> tuple[Quantity, Quantity] | None:
    """``getThresholdMetInfo``: the first listed threshold of that resource with an observation."""
    for t in thresholds:
        if SIGNAL_TO_RESOURCE[t.signal] == resource and t.signal in observations:
            obs = observations[t.signal]
            return t.value.resolve(obs.capacity), obs.available
    return None


def eviction_message(
    resource: str,
    pod: Pod,
    stats: PodStats | None,
    thresholds: Sequence[Threshold],
    observations: Mapping[Signal, Observation],
) -> tuple[str, list[str], list[str]]:
    """``evictionMessage``: the text on the pod, and the offending containers."""
    message = f"The node was low on resource: {resource}. "
    info = threshold_met_info(resource, thresholds, observations)
    if info is not None:
        message += f"Threshold quantity: {info[0]}, available: {info[1]}. "
    containers: list[str] = []
    usages: list[str] = []
    if stats is None:
        return message, containers, usages
    for cs in stats.containers:
        for c in pod.spec.containers:
            if c.name != cs.name:
                continue
            request = c.resources.requests.get(resource, Quantity(0))
            usage: Quantity | None = None
            if resource == RESOURCE_EPHEMERAL_STORAGE:
                if (
                    cs.rootfs is not None
                    and cs.rootfs.used_bytes is not None
                    and cs.logs is not None
                    and cs.logs.used_bytes is not None
                ):
                    usage = Quantity.bytes(cs.rootfs.used_bytes + cs.logs.used_bytes)
            elif resource == RESOURCE_MEMORY and cs.memory is not None and cs.memory.working_set_bytes is not None:
                usage = Quantity.bytes(cs.memory.working_set_bytes)
            if usage is not None and usage > request:
                message += (
                    f"Container {c.name} was using {usage}, request is {request}, "
                    f"has larger consumption of {resource}. "
                )
                containers.append(c.name)
                usages.append(str(usage))
    return message, containers, usages


def synchronize(
    *,
    now: int,
    config: KubeletConfig,
    layout: str,
    state: EvictionState,
    summary: Summary,
    active_pods: Sequence[Pod],
    runtime: RuntimeView | None = None,
    after_reclaim: Summary | None = None,
    cleanup_pending: Sequence[str] = (),
    local_storage_candidates: Sequence[Pod] | None = None,
    pod_stats: Callable[[], Sequence[PodStats]] | None = None,
    shortcut: bool = True,
) -> PassResult:
    """One pass: observe, update conditions, reclaim at node level, evict at most one pod.

    ``shortcut``: a pass on a node with no pressure in its state and no threshold met now
    is told apart on plain numbers and decides nothing (:func:`_quiet_pass`); False makes
    every pass the whole one (tests hold the two to the same result).

    ``cleanup_pending`` are pods the last eviction killed that have not exited yet (for at
    most ``podCleanupTimeout``): upstream's loop waits for them (``waitForPodsCleanup``)
    before synchronizing again, so such a pass changes nothing and evicts nobody.

    ``pod_stats``, when given, supplies the pods' stats only if the pass needs them (ranking,
    local-storage limits); ``summary.pods`` is used otherwise. Most passes never need them.
    """
    loaded: list[StatsLookup] = []

    def lookup_pods() -> StatsLookup:
        if not loaded:
            pods = summary.pods if pod_stats is None else pod_stats()
            loaded.append(stats_lookup(Summary(node=summary.node, pods=list(pods))))
        return loaded[0]

    thresholds = node_thresholds(config, layout)
    if shortcut and _quiet(state, config, now, cleanup_pending, local_storage_candidates):
        values = signal_values(summary)
        if not any_threshold_met(thresholds, values):
            return _quiet_pass(state, values, runtime)
    observations = make_signal_observations(summary)
    if cleanup_pending:
        return PassResult(
            state=state,
            observations=observations,
            met=(),
            grace_met=(),
            condition_changes=(),
            runtime=runtime,
            note=f"waiting for evicted pods to be cleaned up: {', '.join(cleanup_pending)}",
        )
    met = thresholds_met(thresholds, observations, with_min_reclaim=False)
    if state.thresholds_met:
        # Thresholds met last time stay met until min reclaim is satisfied too.
        still = thresholds_met(state.thresholds_met, observations, with_min_reclaim=True)
        met = merge_thresholds(met, still)
    first_observed = thresholds_first_observed_at(met, state.first_observed, now)
    observed_conditions = node_conditions(met)
    last_observed = node_conditions_last_observed_at(observed_conditions, state.conditions_last_observed, now)
    reported = node_conditions_observed_since(last_observed, config.eviction_pressure_transition_period, now)
    reported_ordered = tuple(c for c in CONDITION_ORDER if c in reported)
    grace_met = thresholds_met_grace_period(first_observed, now)
    new_state = EvictionState(
        first_observed=tuple(first_observed),
        conditions_last_observed=last_observed,
        conditions=reported_ordered,
        thresholds_met=tuple(grace_met),
        last_observations=observations,
    )
    base = PassResult(
        state=new_state,
        observations=observations,
        met=tuple(met),
        grace_met=tuple(grace_met),
        condition_changes=condition_changes(state.conditions, reported_ordered),
        runtime=runtime,
    )
    if not thresholds and not config.spec.local_storage_capacity_isolation:
        return base
    actionable = thresholds_updated_stats(grace_met, observations, state.last_observations)
    if config.spec.local_storage_capacity_isolation:
        candidates = active_pods if local_storage_candidates is None else local_storage_candidates
        local = (
            local_storage_evictions(candidates, lookup_pods(), dedicated_imagefs=layout == LAYOUT_DEDICATED_IMAGEFS)
            if candidates
            else []
        )
        if local:  # pods over their own limits go first; thresholds wait for the next pass
            return _replace(base, local_evictions=tuple(local))
    if not actionable:
        return base
    actionable = sorted(actionable, key=Threshold.sort_key)
    chosen = actionable[0]
    resource = SIGNAL_TO_RESOURCE[chosen.signal]

    reclaims: list[ReclaimResult] = []
    actions = reclaim_funcs(chosen.signal, layout)
    current_runtime = runtime
    if actions:
        image_bytes = layer_bytes = log_bytes = 0
        for action in actions:
            if current_runtime is not None:
                result, current_runtime = run_reclaim(action, current_runtime, now, config.image_minimum_gc_age)
            else:
                result = ReclaimResult(action, 0)
            reclaims.append(result)
            if result.images:
                image_bytes += result.bytes_freed
            else:
                layer_bytes += result.bytes_freed - result.log_bytes
                log_bytes += result.log_bytes
        if after_reclaim is not None:
            post = after_reclaim
        elif runtime is not None:
            post = summary_after_reclaim(summary, layout, image_bytes, layer_bytes, log_bytes)
        else:
            post = summary
        if after_reclaim is not None and runtime is None:
            freed = _freed_between(summary, post, chosen.signal)
            reclaims = [ReclaimResult(r.action, freed if i == len(reclaims) - 1 else 0) for i, r in enumerate(reclaims)]
        post_observations = make_signal_observations(post)
        base = _replace(base, post_reclaim_summary=post)
        if not thresholds_met(thresholds, post_observations, with_min_reclaim=True):
            return _replace(
                base, chosen=chosen, reclaims=tuple(reclaims), reclaim_resolved=True, runtime=current_runtime
            )

    lookup = lookup_pods()
    ranking = rank_pods(
        active_pods,
        rank_funcs(layout == LAYOUT_DEDICATED_IMAGEFS, layout == LAYOUT_SPLIT_IMAGEFS)[chosen.signal],
        lookup,
        critical=is_critical_pod,
        pod_level_resources=config.gate("PodLevelResources"),
    )
    by_key = {p.key: p for p in active_pods}
    skipped: list[str] = []
    for entry in ranking:
        pod = by_key[entry.pod]
        if is_critical_pod(pod):
            skipped.append(entry.pod)
            continue
        grace = grace_period_override(chosen, pod, config.eviction_max_pod_grace_period)
        message, offenders, usages = eviction_message(resource, pod, lookup(pod), actionable, observations)
        obs = observations[chosen.signal]
        eviction = Eviction(
            pod=pod,
            threshold=chosen,
            resource=resource,
            observed=obs.available,
            threshold_quantity=threshold_quantity(chosen, obs, with_min_reclaim=False),
            capacity=obs.capacity,
            grace_period_seconds=grace,
            message=message,
            ranking=tuple(ranking),
            offending_containers=tuple(offenders),
            offending_containers_usage=tuple(usages),
            skipped_critical=tuple(skipped),
        )
        return _replace(
            base,
            chosen=chosen,
            reclaims=tuple(reclaims),
            runtime=current_runtime,
            eviction=eviction,
            ranking=tuple(ranking),
        )
    note = "no active pods to evict" if not ranking else "every ranked pod is critical"
    return _replace(
        base, chosen=chosen, reclaims=tuple(reclaims), runtime=current_runtime, ranking=tuple(ranking), note=note
    )


def _freed_between(before: Summary, after: Summary, signal: Signal) -> int:
    a = make_signal_observations(before).get(signal)
    b = make_signal_observations(after).get(signal)
    if a is None or b is None:
        return 0
    return max(b.available.value() - a.available.value(), 0)


def _replace(base: PassResult, **changes: object) -> PassResult:
    return replace(base, **changes)  # type: ignore[arg-type]


def admit(pod: Pod, conditions: Sequence[str]) -> tuple[bool, str, str]:
    """``managerImpl.Admit``: refuse new pods while the node reports pressure.

    Critical pods are always admitted; under memory pressure alone only BestEffort pods
    that do not tolerate the memory-pressure taint are refused.
    """
    if not conditions or is_critical_pod(pod):
        return True, "", ""
    if list(conditions) == [MEMORY_PRESSURE]:
        if pod_qos(pod) != BEST_EFFORT:
            return True, "", ""
        taint = Taint(key=TAINT_NODE_MEMORY_PRESSURE, effect=NO_SCHEDULE)
        if tolerations_tolerate_taint(pod.spec.tolerations, taint):
            return True, "", ""
    return False, EVICTED_REASON, f"The node had condition: [{' '.join(conditions)}]. "
