"""Eviction threshold configuration: parsing, defaults, quantities.

Upstream: ``pkg/kubelet/eviction/helpers.go`` (``ParseThresholdConfig``,
``parseThresholdStatement``, ``parsePercentage``, ``parseGracePeriods``,
``parseMinimumReclaims``, ``addAllocatableThresholds``, ``UpdateContainerFsThresholds``),
``pkg/kubelet/eviction/api/types.go: GetThresholdQuantity`` and
``pkg/kubelet/eviction/defaults_linux.go: DefaultEvictionHard``.

Percentages are float32 upstream and that is kept bit for bit: 10% of 100Gi is
10737418400 bytes, not 10737418240.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from ledgerlet_core.kubelet.eviction.signals import SIGNAL_RANK, Signal, parse_signal
from ledgerlet_core.model.codec import within_int64
from ledgerlet_core.model.duration import DurationError, parse_duration
from ledgerlet_core.model.quantity import NANO, Quantity, QuantityError, parse_quantity

#: ``DefaultEvictionHard`` on Linux (imagefs.inodesFree since ~v1.30).
DEFAULT_EVICTION_HARD: Final[dict[str, str]] = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}

NODE_ALLOCATABLE_ENFORCEMENT_KEY: Final = "pods"


class ThresholdError(ValueError):
    """A threshold setting the kubelet refuses at start-up; ``key`` names the map entry."""

    def __init__(self, message: str, *, setting: str = "", key: str = "") -> None:
        super().__init__(message)
        self.setting = setting
        self.key = key


def float32(value: float) -> float:
    """Round a float to the nearest IEEE-754 single, as a Go ``float32`` conversion does."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _go_parse_float32(text: str) -> float:
    """``strconv.ParseFloat(text, 32)`` (decimal forms; Go's error text)."""
    if "_" in text or text != text.strip() or not text.lstrip("+-"):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    if math.isfinite(value) and abs(value) > 3.4028234663852886e38:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return float32(value)


def parse_percentage(text: str) -> float:
    """``parsePercentage``: ``float32(ParseFloat(trimmed, 32)) / 100`` in float32."""
    return float32(_go_parse_float32(text.rstrip("%")) / float32(100.0))


@dataclass(frozen=True, slots=True)
class ThresholdValue:
    """Either an absolute quantity or a float32 fraction of capacity."""

    quantity: Quantity | None = None
    percentage: float = 0.0
    written: str = ""

    def resolve(self, capacity: Quantity) -> Quantity:
        """``GetThresholdQuantity``: ``int64(float64(capacity) * float64(float32 pct))``."""
        if self.quantity is not None:
            return self.quantity
        return Quantity.bytes(int(float(capacity.value()) * self.percentage))

    def level_nanos(self, capacity: int) -> int:
        """``resolve(capacity)``'s value in nano-units, for a whole-number capacity."""
        if self.quantity is not None:
            return self.quantity.nanos
        return int(float(capacity) * self.percentage) * NANO

    def same_value(self, other: ThresholdValue) -> bool:
        """``compareThresholdValue``: a quantity never equals a percentage."""
        if (self.quantity is None) != (other.quantity is None):
            return False
        if self.quantity is not None and other.quantity is not None:
            return self.quantity == other.quantity
        return self.percentage == other.percentage


@dataclass(frozen=True, slots=True)
class Threshold:
    """One eviction threshold. ``grace_period`` is in ns; 0 means hard."""

    signal: Signal
    value: ThresholdValue
    grace_period: int = 0
    min_reclaim: ThresholdValue | None = None
    operator: str = "LessThan"

    @property
    def hard(self) -> bool:
        """``isHardEvictionThreshold``: exactly a zero grace period."""
        return self.grace_period == 0

    @property
    def written(self) -> str:
        """``memory.available<100Mi`` as the operator configured it."""
        return f"{self.signal}<{self.value.written}"

    def same(self, other: Threshold) -> bool:
        """``hasThreshold`` equality: signal, operator, grace period and value (not min reclaim)."""
        return (
            self.signal == other.signal
            and self.operator == other.operator
            and self.grace_period == other.grace_period
            and self.value.same_value(other.value)
        )

    def sort_key(self) -> tuple[int, int, int]:
        """Deterministic order (spec §6): memory first, hard before soft, then signal order."""
        memory = 0 if self.signal in (Signal.MEMORY_AVAILABLE, Signal.ALLOCATABLE_MEMORY_AVAILABLE) else 1
        return (memory, 0 if self.hard else 1, SIGNAL_RANK[self.signal])


def _signal(key: str, setting: str) -> Signal:
    sig = parse_signal(key)
    if sig is None:
        raise ThresholdError(f"unsupported eviction signal {key}", setting=setting, key=key)
    return sig


def parse_threshold_statement(key: str, text: str, *, setting: str = "evictionHard") -> Threshold | None:
    """``parseThresholdStatement``; ``None`` for the literal ``0%`` and ``100%``."""
    signal = _signal(key, setting)
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        try:
            pct = parse_percentage(text)
        except ValueError as exc:
            raise ThresholdError(str(exc), setting=setting, key=key) from None
        if pct < 0:
            raise ThresholdError(
                f"eviction percentage threshold {signal} must be >= 0%: {text}", setting=setting, key=key
            )
        if pct > 1:
            raise ThresholdError(
                f"eviction percentage threshold {signal} must be <= 100%: {text}", setting=setting, key=key
            )
        return Threshold(signal=signal, value=ThresholdValue(percentage=pct, written=text))
    try:
        q = within_int64(parse_quantity(text))  # (1e9999 stopped the eviction manager mid-run)
    except QuantityError as exc:
        raise ThresholdError(str(exc), setting=setting, key=key) from None
    if q.sign() <= 0:
        raise ThresholdError(f"eviction threshold {signal} must be positive: {q}", setting=setting, key=key)
    return Threshold(signal=signal, value=ThresholdValue(quantity=q, written=text))


def parse_grace_periods(statements: Mapping[str, str]) -> dict[Signal, int]:
    out: dict[Signal, int] = {}
    for key, text in statements.items():
        signal = _signal(key, "evictionSoftGracePeriod")
        try:
            period = parse_duration(text)
        except DurationError as exc:
            raise ThresholdError(str(exc), setting="evictionSoftGracePeriod", key=key) from None
        if period < 0:
            raise ThresholdError(
                f"invalid eviction grace period specified: {text}, must be a positive value",
                setting="evictionSoftGracePeriod",
                key=key,
            )
        out[signal] = period
    return out


def parse_minimum_reclaims(statements: Mapping[str, str]) -> dict[Signal, ThresholdValue]:
    out: dict[Signal, ThresholdValue] = {}
    setting = "evictionMinimumReclaim"
    for key, text in statements.items():
        signal = _signal(key, setting)
        if text.endswith("%"):
            try:
                pct = parse_percentage(text)
            except ValueError as exc:
                raise ThresholdError(str(exc), setting=setting, key=key) from None
            if pct <= 0:
                raise ThresholdError(
                    f"eviction percentage minimum reclaim {signal} must be positive: {text}", setting=setting, key=key
                )
            out[signal] = ThresholdValue(percentage=pct, written=text)
            continue
        try:
            q = within_int64(parse_quantity(text))
        except QuantityError as exc:
            raise ThresholdError(str(exc), setting=setting, key=key) from None
        if q.sign() < 0:
            raise ThresholdError(f"negative eviction minimum reclaim specified for {signal}", setting=setting, key=key)
        out[signal] = ThresholdValue(quantity=q, written=text)
    return out


def add_allocatable_thresholds(thresholds: list[Threshold]) -> list[Threshold]:
    """Every hard memory.available threshold is mirrored on allocatableMemory.available."""
    extra = [
        Threshold(signal=Signal.ALLOCATABLE_MEMORY_AVAILABLE, value=t.value, min_reclaim=t.min_reclaim)
        for t in thresholds
        if t.signal == Signal.MEMORY_AVAILABLE and t.hard
    ]
    return [*thresholds, *extra]


def effective_eviction_hard(eviction_hard: Mapping[str, str] | None, *, merge_defaults: bool = False) -> dict[str, str]:
    """Unset -> upstream defaults; set -> replaces them (unless mergeDefaultEvictionSettings)."""
    if eviction_hard is None:
        return dict(DEFAULT_EVICTION_HARD)
    if merge_defaults:
        return {**DEFAULT_EVICTION_HARD, **eviction_hard}
    return dict(eviction_hard)


def parse_threshold_config(
    enforce_node_allocatable: Iterable[str],
    eviction_hard: Mapping[str, str],
    eviction_soft: Mapping[str, str],
    eviction_soft_grace_period: Mapping[str, str],
    eviction_minimum_reclaim: Mapping[str, str],
) -> list[Threshold]:
    """``ParseThresholdConfig``, in input order (upstream's order is Go map order)."""
    hard = [t for k, v in eviction_hard.items() if (t := parse_threshold_statement(k, v)) is not None]
    soft = [
        t
        for k, v in eviction_soft.items()
        if (t := parse_threshold_statement(k, v, setting="evictionSoft")) is not None
    ]
    graces = parse_grace_periods(eviction_soft_grace_period)
    reclaims = parse_minimum_reclaims(eviction_minimum_reclaim)
    resolved_soft: list[Threshold] = []
    for t in soft:
        if t.signal not in graces:
            raise ThresholdError(
                f"grace period must be specified for the soft eviction threshold {t.signal}",
                setting="evictionSoft",
                key=str(t.signal),
            )
        resolved_soft.append(replace(t, grace_period=graces[t.signal]))
    results = [
        replace(t, min_reclaim=reclaims[t.signal]) if t.signal in reclaims else t for t in (*hard, *resolved_soft)
    ]
    if NODE_ALLOCATABLE_ENFORCEMENT_KEY in enforce_node_allocatable:
        results = add_allocatable_thresholds(results)
    return results


def update_containerfs_thresholds(
    thresholds: list[Threshold], *, dedicated_imagefs: bool, split_containerfs: bool
) -> list[Threshold]:
    """``UpdateContainerFsThresholds``: containerfs copies nodefs, or imagefs when dedicated.

    User-written containerfs thresholds are replaced. The upstream quirk of appending an
    empty, never-met threshold when the source has none is not reproduced: it cannot act.
    """
    kept = [t for t in thresholds if t.signal not in (Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE)]
    use_imagefs = dedicated_imagefs and not split_containerfs
    source = {
        Signal.CONTAINERFS_AVAILABLE: Signal.IMAGEFS_AVAILABLE if use_imagefs else Signal.NODEFS_AVAILABLE,
        Signal.CONTAINERFS_INODES_FREE: Signal.IMAGEFS_INODES_FREE if use_imagefs else Signal.NODEFS_INODES_FREE,
    }
    copies = [replace(t, signal=target) for target, src in source.items() for t in kept if t.signal == src]
    return [*kept, *copies]
