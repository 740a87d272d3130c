"""What-if hints for the report: per threshold that evicted, the level that would not have
been met at most of its evictions, from the run's own numbers, as a ``ledgerlet whatif``
command to try.

A threshold is met when its quantity is above what is available (upstream
``pkg/kubelet/eviction/helpers.go: thresholdsMet``: ``quantity.Cmp(*observed.available) > 0``),
so a level at or below an eviction's observed value would not have been met at that
moment. Whether the pod is then spared or only evicted later (usage that keeps growing
crosses the lower level too) is what the what-if run tells: the hint says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.kubelet.eviction.thresholds import parse_percentage
from ledgerlet_core.postmortem.explain import human_bytes

#: the share of a threshold's evictions a hinted level spares at their moment ("most")
MOST: Final = 0.8
_MI: Final = 1 << 20
_KI: Final = 1 << 10
#: signals the kubelet derives from another's setting (allocatableMemory from memory)
_DERIVED: Final = ("allocatableMemory.available",)


@dataclass(frozen=True)
class Met:
    """One eviction's threshold, as its decision recorded it."""

    signal: str
    threshold: str  # as written: ``memory.available<100Mi``, ``nodefs.available<10%``
    hard: bool
    observed: int
    capacity: int
    unit: str  # "bytes" or "count"


@dataclass(frozen=True)
class Hint:
    setting: str  # ``evictionHard.memory.available``
    value: str  # ``93Mi``, ``8.5%``
    spared: int  # evictions at whose moment the level is not met
    of: int
    lowest: str  # the lowest observed value at these evictions, as text
    highest: str

    @property
    def assignment(self) -> str:
        return f"{self.setting}={self.value}"

    def command(self, run: str) -> str:
        return f"ledgerlet whatif --run {run} --set {self.assignment}"


def _level(written: str) -> str:
    return written.split("<", 1)[1] if "<" in written else ""


def _met(level: str, m: Met) -> bool:
    """Would a threshold at ``level`` be met at this observation?"""
    if level.endswith("%"):
        quantity = int(float(m.capacity) * parse_percentage(level))
    else:
        quantity = _bytes_of(level) if m.unit == "bytes" else int(level)
    return quantity > m.observed


def _bytes_of(text: str) -> int:
    for suffix, size in (("Gi", 1 << 30), ("Mi", _MI), ("Ki", _KI)):
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * size
    return int(text)


def _absolute(value: int, unit: str) -> str:
    """``value`` rounded down to a level written as people write it."""
    if unit != "bytes":
        return str(value)
    if value >= 10 * _MI:
        return f"{value // _MI}Mi"
    if value >= 10 * _KI:
        return f"{value // _KI}Ki"
    return str(value)


def hints(evictions: Sequence[Met]) -> list[Hint]:
    """One hint per threshold that evicted (signal, level, hard or soft), in signal order;
    none where no lower level helps (an observed value of 0 is met by any level)."""
    by: dict[tuple[str, str, bool], list[Met]] = defaultdict(list)
    for m in evictions:
        if m.signal and m.signal not in _DERIVED and "<" in m.threshold and m.observed >= 0:
            by[(m.signal, m.threshold, m.hard)].append(m)
    out = []
    for (signal, written, hard), ms in sorted(by.items()):
        need = math.ceil(MOST * len(ms))
        level = _percent_level(ms, need) if _level(written).endswith("%") else _absolute_level(ms, need)
        if level is None:
            continue
        spared = sum(not _met(level, m) for m in ms)
        if spared < need or level == _level(written):
            continue
        shown = sorted(m.observed for m in ms)
        unit = ms[0].unit
        out.append(
            Hint(
                setting=f"{'evictionHard' if hard else 'evictionSoft'}.{signal}",
                value=level,
                spared=spared,
                of=len(ms),
                lowest=human_bytes(shown[0]) if unit == "bytes" else str(shown[0]),
                highest=human_bytes(shown[-1]) if unit == "bytes" else str(shown[-1]),
            )
        )
    return out


def _absolute_level(ms: Sequence[Met], need: int) -> str | None:
    floor = sorted(m.observed for m in ms)[len(ms) - need]
    if floor <= 0:
        return None
    return _absolute(floor, ms[0].unit)


def _percent_level(ms: Sequence[Met], need: int) -> str | None:
    ratios = sorted(m.observed / m.capacity for m in ms if m.capacity > 0)
    if len(ratios) < need:
        return None
    tenths = math.floor(ratios[len(ratios) - need] * 1000)
    while tenths > 0:  # float32 percentages can land a hair above: step down until it holds
        level = f"{tenths / 10:g}%"
        if sum(not _met(level, m) for m in ms) >= need:
            return level
        tenths -= 1
    return None
