"""A pass's result as decision records: the spec's fields (§5) and the inputs behind them."""

from __future__ import annotations

from ledgerlet_core.kubelet.eviction.manager import EvictionState
from ledgerlet_core.kubelet.eviction_records import pass_records
from tests.core.test_eviction_pass import HARD_1GI, Gi, Mi, pressure_pods, run, summary


def test_a_hard_eviction_becomes_a_condition_change_and_a_pod_evicted_with_its_inputs() -> None:
    pods, stats = pressure_pods()
    result = run(HARD_1GI, EvictionState(), 0, summary(mem_available=500 * Mi, mem_ws=7 * Gi, pods=stats), pods)
    records = pass_records(result)
    (condition,) = records.conditions
    assert (condition.condition, condition.status, condition.thresholds) == (
        "MemoryPressure",
        "True",
        ["memory.available<1Gi"],
    )
    assert records.reclaimed == []  # memory has no node-level reclaim
    ((pod, evicted),) = records.evictions
    assert pod.key == "default/best-effort" == evicted.ranking[0]
    assert (evicted.signal, evicted.threshold, evicted.grace_period_seconds, evicted.hard) == (
        "memory.available",
        "memory.available<1Gi",
        1,
        True,
    )
    assert evicted.observed == 500 * Mi and evicted.threshold_quantity == Gi
    (seen,) = evicted.thresholds_met
    assert (seen.threshold, seen.available, seen.quantity, seen.first_observed_at) == (
        "memory.available<1Gi",
        500 * Mi,
        Gi,
        0.0,
    )


def test_a_quiet_pass_decides_nothing() -> None:
    pods, stats = pressure_pods()
    result = run(HARD_1GI, EvictionState(), 0, summary(mem_available=6 * Gi, mem_ws=2 * Gi, pods=stats), pods)
    records = pass_records(result)
    assert (records.conditions, records.reclaimed, records.evictions) == ([], [], [])
