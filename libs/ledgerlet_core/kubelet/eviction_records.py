"""One housekeeping pass's result as its decision records: condition changes, node-level
reclaim that freed something, and the pods it evicts (local-storage limits first, then
the one a threshold chose), each with the inputs it was decided on."""

from __future__ import annotations

from dataclasses import dataclass, field

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.kubelet.eviction.local_storage import LocalStorageEviction
from ledgerlet_core.kubelet.eviction.manager import IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, Eviction, PassResult
from ledgerlet_core.kubelet.eviction.observations import threshold_quantity
from ledgerlet_core.kubelet.eviction.signals import SIGNAL_TO_CONDITION
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Pod


@dataclass(slots=True)
class PassRecords:
    conditions: list[dec.NodeConditionChanged] = field(default_factory=list)
    reclaimed: list[dec.NodeReclaimed] = field(default_factory=list)
    #: the pods evicted, in the order they are killed, with their records
    evictions: list[tuple[Pod, dec.PodEvicted]] = field(default_factory=list)


def pass_records(result: PassResult) -> PassRecords:
    out = PassRecords()
    for change in result.condition_changes:
        out.conditions.append(
            dec.NodeConditionChanged(
                condition=change.condition,
                status=change.status,
                reason=change.reason,
                message=change.message,
                thresholds=[
                    t.written
                    for t in result.met
                    if change.status == "True" and SIGNAL_TO_CONDITION[t.signal] == change.condition
                ],
            )
        )
    chosen = result.chosen
    for r in result.reclaims:
        if r.bytes_freed == 0:
            continue  # attempted but freed nothing: recorded on the eviction it led to
        out.reclaimed.append(
            dec.NodeReclaimed(
                signal=str(chosen.signal) if chosen else "",
                action=str(r.action),
                bytes_freed=r.bytes_freed,
                images=list(r.images),
                containers=r.containers,
            )
        )
    out.evictions += [(local.pod, local_eviction(local)) for local in result.local_evictions]
    if result.eviction is not None:
        out.evictions.append((result.eviction.pod, threshold_eviction(result.eviction, result)))
    return out


def local_eviction(local: LocalStorageEviction) -> dec.PodEvicted:
    """A pod over its own local-storage limit (``localStorageEviction``): always hard."""
    return dec.PodEvicted(
        signal=local.signal,
        threshold=local.what,
        observed=local.observed,
        grace_period_seconds=IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
        message=local.message,
        ranking=[local.pod.key],
        resource="ephemeral-storage",
        threshold_quantity=local.limit.value(),
        hard=True,
    )


def thresholds_seen(result: PassResult) -> list[dec.ThresholdSeen]:
    """Every threshold met in the pass, with what it saw and since when."""
    first = {t.written + str(t.grace_period): at for t, at in result.state.first_observed}
    out = []
    for t in result.met:
        seen = result.observations.get(t.signal)
        if seen is None:
            continue
        since = first.get(t.written + str(t.grace_period))
        out.append(
            dec.ThresholdSeen(
                threshold=t.written,
                quantity=threshold_quantity(t, seen, with_min_reclaim=False).value(),
                available=seen.available.value(),
                capacity=seen.capacity.value(),
                hard=t.hard,
                grace_period_seconds=t.grace_period / SECOND,
                first_observed_at=since / SECOND if since is not None else None,
                min_reclaim=t.min_reclaim.resolve(seen.capacity).value() if t.min_reclaim is not None else 0,
            )
        )
    return out


def threshold_eviction(ev: Eviction, result: PassResult) -> dec.PodEvicted:
    return dec.PodEvicted(
        signal=str(ev.threshold.signal),
        threshold=ev.threshold.written,
        observed=ev.observed.value(),
        grace_period_seconds=ev.grace_period_seconds,
        message=ev.message,
        ranking=[e.pod for e in ev.ranking],
        resource=ev.resource,
        threshold_quantity=ev.threshold_quantity.value(),
        capacity=ev.capacity.value(),
        hard=ev.threshold.hard,
        ranking_details=list(ev.ranking),
        thresholds_met=thresholds_seen(result),
        offending_containers=list(ev.offending_containers),
        offending_containers_usage=list(ev.offending_containers_usage),
        skipped_critical=list(ev.skipped_critical),
        node_reclaim=[dec.ReclaimAttempt(action=str(r.action), bytes_freed=r.bytes_freed) for r in result.reclaims],
    )
