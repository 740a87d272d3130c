"""Threshold configuration, as ParseThresholdConfig and GetThresholdQuantity have it."""

from __future__ import annotations

import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.observations import Observation, is_met
from ledgerlet_core.kubelet.eviction.signals import Signal
from ledgerlet_core.kubelet.eviction.thresholds import (
    DEFAULT_EVICTION_HARD,
    ThresholdError,
    effective_eviction_hard,
    parse_percentage,
    parse_threshold_config,
    parse_threshold_statement,
    update_containerfs_thresholds,
)
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.quantity import Quantity, parse_quantity

Gi = 1 << 30
Mi = 1 << 20


def cap(n: int) -> Quantity:
    return Quantity.bytes(n)


@pytest.mark.parametrize(
    ("pct", "capacity", "expected"),
    [
        ("10%", 100 * Gi, 10737418400),  # float32: not 10737418240
        ("20%", 1000 * Mi, 209715203),
        ("10.5%", 1 << 40, 115448717312),
        ("5%", 4 * Mi, 209715),  # inodes
    ],
)
def test_percentages_are_float32_as_upstream(pct: str, capacity: int, expected: int) -> None:
    t = parse_threshold_statement("nodefs.available", pct)
    assert t is not None
    assert t.value.resolve(cap(capacity)).value() == expected


def test_zero_and_hundred_percent_mean_no_threshold_but_only_literally() -> None:
    assert parse_threshold_statement("nodefs.available", "0%") is None
    assert parse_threshold_statement("nodefs.available", "100%") is None
    assert parse_threshold_statement("nodefs.available", "0.0%") is not None
    assert parse_threshold_statement("nodefs.available", "100.0%") is not None


@pytest.mark.parametrize(
    ("signal", "value", "message"),
    [
        ("memory.avail", "1Gi", "unsupported eviction signal memory.avail"),
        ("swap.available", "1Gi", "unsupported eviction signal swap.available"),
        ("nodefs.available", "-5%", "eviction percentage threshold nodefs.available must be >= 0%: -5%"),
        ("nodefs.available", "101%", "eviction percentage threshold nodefs.available must be <= 100%: 101%"),
        ("memory.available", "0", "eviction threshold memory.available must be positive: 0"),
        ("memory.available", "-1Gi", "eviction threshold memory.available must be positive: -1Gi"),
        ("memory.available", "1Gx", "quantities must match the regular expression"),
        ("nodefs.available", "abc%", 'strconv.ParseFloat: parsing "abc": invalid syntax'),
    ],
)
def test_threshold_statement_errors(signal: str, value: str, message: str) -> None:
    with pytest.raises(ThresholdError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_threshold_statement(signal, value)


def test_soft_threshold_needs_a_grace_period() -> None:
    with pytest.raises(
        ThresholdError,
        match=r"grace period must be specified for the soft eviction threshold "
        r"memory\.available",
    ):
        parse_threshold_config([], {}, {"memory.available": "1Gi"}, {}, {})


def test_grace_and_min_reclaim_errors() -> None:
    with pytest.raises(ThresholdError, match="invalid eviction grace period specified: -1s, must be a positive value"):
        parse_threshold_config([], {}, {}, {"memory.available": "-1s"}, {})
    with pytest.raises(ThresholdError, match='time: invalid duration "soon"'):
        parse_threshold_config([], {}, {}, {"memory.available": "soon"}, {})
    with pytest.raises(
        ThresholdError, match=r"eviction percentage minimum reclaim nodefs\.available must be positive: 0%"
    ):
        parse_threshold_config([], {}, {}, {}, {"nodefs.available": "0%"})
    with pytest.raises(ThresholdError, match=r"negative eviction minimum reclaim specified for memory\.available"):
        parse_threshold_config([], {}, {}, {}, {"memory.available": "-1Mi"})
    # "0" as a quantity is fine
    assert parse_threshold_config([], {"memory.available": "1Gi"}, {}, {}, {"memory.available": "0"})


def test_soft_with_zero_grace_behaves_as_hard() -> None:
    [t] = parse_threshold_config([], {}, {"memory.available": "1Gi"}, {"memory.available": "0s"}, {})
    assert t.hard


def test_defaults_and_the_replace_rule() -> None:
    assert effective_eviction_hard(None) == DEFAULT_EVICTION_HARD
    # setting one hard threshold zeroes the others ...
    assert effective_eviction_hard({"memory.available": "500Mi"}) == {"memory.available": "500Mi"}
    # ... unless mergeDefaultEvictionSettings
    merged = effective_eviction_hard({"memory.available": "500Mi"}, merge_defaults=True)
    assert merged == {**DEFAULT_EVICTION_HARD, "memory.available": "500Mi"}
    cfg = resolve_kubelet_config({})
    assert {t.written for t in cfg.thresholds} == {
        "memory.available<100Mi",
        "nodefs.available<10%",
        "nodefs.inodesFree<5%",
        "imagefs.available<15%",
        "imagefs.inodesFree<5%",
        "allocatableMemory.available<100Mi",
    }


def test_hard_memory_threshold_is_mirrored_on_allocatable_when_pods_enforced() -> None:
    cfg = resolve_kubelet_config(
        {
            "evictionHard": {"memory.available": "500Mi"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "evictionMinimumReclaim": {"memory.available": "100Mi"},
        }
    )
    alloc = [t for t in cfg.thresholds if t.signal == Signal.ALLOCATABLE_MEMORY_AVAILABLE]
    assert len(alloc) == 1  # the soft one is not mirrored
    assert alloc[0].hard and str(alloc[0].value.quantity) == "500Mi"
    assert alloc[0].min_reclaim is not None and str(alloc[0].min_reclaim.quantity) == "100Mi"
    none = resolve_kubelet_config({"evictionHard": {"memory.available": "500Mi"}, "enforceNodeAllocatable": []})
    assert [t.signal for t in none.thresholds] == [Signal.MEMORY_AVAILABLE]


def test_minimum_reclaim_from_the_seed() -> None:
    # Seed 000/003: nodefs 1Gi + 500Mi -> 1.5Gi; imagefs 100Gi + 2Gi -> 102Gi.
    cfg = resolve_kubelet_config(
        {
            "evictionHard": {"memory.available": "500Mi", "nodefs.available": "1Gi", "imagefs.available": "100Gi"},
            "evictionMinimumReclaim": {
                "memory.available": "0Mi",
                "nodefs.available": "500Mi",
                "imagefs.available": "2Gi",
            },
        }
    )
    by_signal = {t.signal: t for t in cfg.thresholds}
    nodefs = by_signal[Signal.NODEFS_AVAILABLE]
    imagefs = by_signal[Signal.IMAGEFS_AVAILABLE]
    obs_nodefs = {Signal.NODEFS_AVAILABLE: Observation(Quantity.bytes(int(1.4 * Gi)), cap(100 * Gi))}
    assert not is_met(nodefs, obs_nodefs, with_min_reclaim=False)  # 1.4Gi is above 1Gi ...
    assert is_met(nodefs, obs_nodefs, with_min_reclaim=True)  # ... but below 1.5Gi
    obs_at = {Signal.NODEFS_AVAILABLE: Observation(Quantity.bytes(int(1.5 * Gi)), cap(100 * Gi))}
    assert not is_met(nodefs, obs_at, with_min_reclaim=True)  # equal is not met (strict)
    obs_img = {Signal.IMAGEFS_AVAILABLE: Observation(Quantity.bytes(101 * Gi), cap(500 * Gi))}
    assert is_met(imagefs, obs_img, with_min_reclaim=True)
    assert not is_met(
        imagefs, {Signal.IMAGEFS_AVAILABLE: Observation(Quantity.bytes(102 * Gi), cap(500 * Gi))}, with_min_reclaim=True
    )


def test_thresholds_met_from_upstream() -> None:
    # TestThresholdsMet: 1Gi hard with 500Mi min reclaim
    [t] = parse_threshold_config([], {"memory.available": "1Gi"}, {}, {}, {"memory.available": "500Mi"})
    mem = Signal.MEMORY_AVAILABLE
    assert is_met(t, {mem: Observation(parse_quantity("500Mi"), cap(0))}, with_min_reclaim=False)
    assert not is_met(t, {mem: Observation(parse_quantity("2Gi"), cap(0))}, with_min_reclaim=False)
    assert is_met(t, {mem: Observation(parse_quantity("1.05Gi"), cap(0))}, with_min_reclaim=True)
    assert not is_met(t, {mem: Observation(parse_quantity("2Gi"), cap(0))}, with_min_reclaim=True)
    assert not is_met(t, {}, with_min_reclaim=False)  # no observation: silently skipped


def test_containerfs_thresholds_follow_the_layout() -> None:
    cfg = resolve_kubelet_config({})
    single = update_containerfs_thresholds(list(cfg.thresholds), dedicated_imagefs=False, split_containerfs=False)
    cfs = {t.written for t in single if t.signal in (Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE)}
    assert cfs == {"containerfs.available<10%", "containerfs.inodesFree<5%"}
    dedicated = update_containerfs_thresholds(list(cfg.thresholds), dedicated_imagefs=True, split_containerfs=False)
    cfs = {t.written for t in dedicated if t.signal in (Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE)}
    assert cfs == {"containerfs.available<15%", "containerfs.inodesFree<5%"}


def test_deterministic_threshold_order() -> None:
    cfg = resolve_kubelet_config(
        {
            "evictionHard": {
                "pid.available": "100",
                "imagefs.available": "10%",
                "nodefs.available": "10%",
                "memory.available": "1Gi",
            },
            "evictionSoft": {"memory.available": "2Gi"},
            "evictionSoftGracePeriod": {"memory.available": "30s"},
            "enforceNodeAllocatable": [],
        }
    )
    ordered = sorted(cfg.thresholds, key=lambda t: t.sort_key())
    assert [t.written for t in ordered] == [
        "memory.available<1Gi",
        "memory.available<2Gi",
        "nodefs.available<10%",
        "imagefs.available<10%",
        "pid.available<100",
    ]


def test_kubelet_config_validation_messages() -> None:
    with pytest.raises(InputError, match=r"imageGCLowThresholdPercent .* 90 must be less than imageGCHighThreshold"):
        resolve_kubelet_config({"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 90})
    with pytest.raises(InputError, match="shutdownGracePeriodCriticalPods 40s must be <= shutdownGracePeriod 30s"):
        resolve_kubelet_config({"shutdownGracePeriod": "30s", "shutdownGracePeriodCriticalPods": "40s"})
    with pytest.raises(InputError, match="unrecognized feature gate: NoSuchGate"):
        resolve_kubelet_config({"featureGates": {"NoSuchGate": True}})
    with pytest.raises(InputError) as err:
        resolve_kubelet_config({"evictionHard": {"memory.available": "lots"}})
    assert err.value.field == "evictionHard.memory.available"
    with pytest.raises(InputError) as err:
        resolve_kubelet_config({"systemReserved": {"memory": "1.5Gx"}})
    assert err.value.field == "systemReserved.memory"
    with pytest.raises(InputError, match='time: unknown unit "q" in duration "10q"'):
        resolve_kubelet_config({"housekeepingInterval": "10q"})


def test_parse_percentage_is_float32() -> None:
    assert parse_percentage("10%") == 0.10000000149011612
    assert parse_percentage("15%") != 0.15
