"""Signal observations from a Summary, and the threshold tests on them.

Upstream: ``pkg/kubelet/eviction/helpers.go`` (``makeSignalObservations``,
``thresholdsMet``, ``thresholdsFirstObservedAt``, ``thresholdsMetGracePeriod``,
``nodeConditions``, ``nodeConditionsLastObservedAt``, ``nodeConditionsObservedSince``,
``thresholdsUpdatedStats``, ``mergeThresholds``) and ``helpers_others.go:
makeMemoryAvailableSignalObservation`` (Linux).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledgerlet_core.kubelet.eviction.signals import SIGNAL_TO_CONDITION, Signal
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.model.quantity import NANO, Format, Quantity
from ledgerlet_core.model.summary import FsStats, Summary
from ledgerlet_core.model.timefmt import time_key


@dataclass(frozen=True, slots=True)
class Observation:
    """``signalObservation``: what is available, of what capacity, as of ``time``."""

    available: Quantity
    capacity: Quantity
    time: str | None = None


def _bytes(value: int) -> Quantity:
    return Quantity.bytes(value)


def _count(value: int) -> Quantity:
    return Quantity.from_int(value, Format.DECIMAL_SI)


#: a signal's inputs as the summary gives them: available, capacity, time, and whether
#: they are bytes (else counts: inodes, pids)
SignalValue = tuple[int, int, str | None, bool]


def _fs_values(fs: FsStats | None, available: Signal, inodes: Signal, out: dict[Signal, SignalValue]) -> None:
    if fs is None:
        return
    if fs.available_bytes is not None and fs.capacity_bytes is not None:
        out[available] = (fs.available_bytes, fs.capacity_bytes, fs.time, True)
    if fs.inodes_free is not None and fs.inodes is not None:
        out[inodes] = (fs.inodes_free, fs.inodes, fs.time, False)


def signal_values(summary: Summary) -> dict[Signal, SignalValue]:
    """What :func:`make_signal_observations` makes its observations of, as plain numbers
    (one per signal whose inputs the summary carries; others are skipped)."""
    out: dict[Signal, SignalValue] = {}
    node = summary.node
    mem = node.memory
    if mem is not None and mem.available_bytes is not None and mem.working_set_bytes is not None:
        out[Signal.MEMORY_AVAILABLE] = (
            mem.available_bytes,
            mem.available_bytes + mem.working_set_bytes,
            mem.time,
            True,
        )
    pods = summary.pods_container()
    if pods is not None and pods.memory is not None:
        pm = pods.memory
        if pm.available_bytes is not None and pm.working_set_bytes is not None:
            out[Signal.ALLOCATABLE_MEMORY_AVAILABLE] = (
                pm.available_bytes,
                pm.available_bytes + pm.working_set_bytes,
                pm.time,
                True,
            )
    _fs_values(node.fs, Signal.NODEFS_AVAILABLE, Signal.NODEFS_INODES_FREE, out)
    if node.runtime is not None:
        _fs_values(node.runtime.image_fs, Signal.IMAGEFS_AVAILABLE, Signal.IMAGEFS_INODES_FREE, out)
        _fs_values(node.runtime.container_fs, Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE, out)
    rl = node.rlimit
    if rl is not None and rl.maxpid is not None and rl.curproc is not None:
        out[Signal.PID_AVAILABLE] = (rl.maxpid - rl.curproc, rl.maxpid, rl.time, False)
    return out


def observations_of(values: Mapping[Signal, SignalValue]) -> dict[Signal, Observation]:
    """The observations of :func:`signal_values`' numbers."""
    return {
        signal: Observation(_bytes(a), _bytes(c), time) if in_bytes else Observation(_count(a), _count(c), time)
        for signal, (a, c, time, in_bytes) in values.items()
    }


def make_signal_observations(summary: Summary) -> dict[Signal, Observation]:
    """``makeSignalObservations``: one observation per signal whose inputs the summary
    carries (others are skipped)."""
    return observations_of(signal_values(summary))


def any_threshold_met(thresholds: Iterable[Threshold], values: Mapping[Signal, SignalValue]) -> bool:
    """Whether ``thresholds_met(thresholds, make_signal_observations(...), with_min_reclaim=False)``
    would be non-empty, on the plain numbers (no quantities made): a node far from every
    threshold, the usual case, is told apart at the cost of a few comparisons."""
    for t in thresholds:
        v = values.get(t.signal)
        if v is not None and t.value.level_nanos(v[1]) > v[0] * NANO:
            return True
    return False


class LazyObservations(Mapping[Signal, Observation]):
    """The observations of a pass that decided nothing, made only if a later pass reads
    them (``thresholdsUpdatedStats`` compares their times once a threshold is met)."""

    __slots__ = ("_made", "_values")

    def __init__(self, values: Mapping[Signal, SignalValue]) -> None:
        self._values = values
        self._made: dict[Signal, Observation] | None = None

    def _observations(self) -> dict[Signal, Observation]:
        if self._made is None:
            self._made = observations_of(self._values)
        return self._made

    def __getitem__(self, signal: Signal) -> Observation:
        return self._observations()[signal]

    def get(self, signal: Signal, default: Any = None) -> Any:  # (no Observation made for a signal not there)
        return self._observations()[signal] if signal in self._values else default

    def __contains__(self, signal: object) -> bool:
        return signal in self._values

    def __iter__(self) -> Iterator[Signal]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __reduce__(self) -> tuple[object, ...]:
        return (LazyObservations, (dict(self._values),))


def threshold_quantity(t: Threshold, obs: Observation, *, with_min_reclaim: bool) -> Quantity:
    q = t.value.resolve(obs.capacity)
    if with_min_reclaim and t.min_reclaim is not None:
        q = q + t.min_reclaim.resolve(obs.capacity)
    return q


def is_met(t: Threshold, observations: Mapping[Signal, Observation], *, with_min_reclaim: bool) -> bool:
    """``thresholdsMet`` for one threshold: strictly more wanted than is available."""
    obs = observations.get(t.signal)
    if obs is None:
        return False
    return threshold_quantity(t, obs, with_min_reclaim=with_min_reclaim) > obs.available


def thresholds_met(
    thresholds: Iterable[Threshold], observations: Mapping[Signal, Observation], *, with_min_reclaim: bool
) -> list[Threshold]:
    return [t for t in thresholds if is_met(t, observations, with_min_reclaim=with_min_reclaim)]


def merge_thresholds(a: Sequence[Threshold], b: Sequence[Threshold]) -> list[Threshold]:
    """``mergeThresholds``: ``a`` then those of ``b`` not already in it (``hasThreshold``)."""
    out = list(a)
    for t in b:
        if not any(t.same(x) for x in out):
            out.append(t)
    return out


def _index(ts: Sequence[Threshold], t: Threshold) -> int:
    for i, x in enumerate(ts):
        if x.same(t):
            return i
    return -1


def thresholds_first_observed_at(
    met: Sequence[Threshold], previous: Sequence[tuple[Threshold, int]], now: int
) -> list[tuple[Threshold, int]]:
    """Keep the first-observed time of still-met thresholds; others start now (or drop)."""
    prev = [t for t, _ in previous]
    out: list[tuple[Threshold, int]] = []
    for t in met:
        i = _index(prev, t)
        out.append((t, previous[i][1] if i >= 0 else now))
    return out


def thresholds_met_grace_period(observed_at: Sequence[tuple[Threshold, int]], now: int) -> list[Threshold]:
    return [t for t, since in observed_at if now - since >= t.grace_period]


def node_conditions(met: Iterable[Threshold]) -> list[str]:
    out: list[str] = []
    for t in met:
        c = SIGNAL_TO_CONDITION[t.signal]
        if c not in out:
            out.append(c)
    return out


def node_conditions_last_observed_at(
    conditions: Iterable[str], previous: Mapping[str, int], now: int
) -> dict[str, int]:
    out = dict(previous)
    for c in conditions:
        out[c] = now
    return out


def node_conditions_observed_since(last_observed: Mapping[str, int], period: int, now: int) -> list[str]:
    """Conditions still inside the transition period (strict, as upstream)."""
    return [c for c, at in last_observed.items() if now - at < period]


def thresholds_updated_stats(
    thresholds: Sequence[Threshold], observations: Mapping[Signal, Observation], last: Mapping[Signal, Observation]
) -> list[Threshold]:
    """Drop thresholds whose observation is not newer than last loop's (stale stats)."""
    out: list[Threshold] = []
    for t in thresholds:
        obs = observations.get(t.signal)
        if obs is None:
            continue
        prev = last.get(t.signal)
        now_time = time_key(obs.time)
        prev_time = time_key(prev.time) if prev is not None else None
        if now_time is None or prev_time is None or now_time > prev_time:
            out.append(t)
    return out
