"""Filesystem signals that are one device, drawn once.

On a one-disk node the kubelet's summary reports the root filesystem again as the image
filesystem (the runtime's images live on it), and the container filesystem signals copy
nodefs's or imagefs's (upstream ``UpdateContainerFsThresholds``, thresholds.py), so
``nodefs.available``, ``imagefs.available`` and ``containerfs.available`` are the same
numbers at every observation. They are one chart
with every threshold on it, not three identical ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ledgerlet_core.postmortem.signals_series import SignalSeries

_FILESYSTEMS = ("nodefs.", "imagefs.", "containerfs.")


@dataclass
class Chart:
    """One chart: a signal, and the other signals that are the same device (same
    available and capacity at every observation), whose thresholds it draws too."""

    series: SignalSeries
    same_device: list[str] = field(default_factory=list)

    @property
    def signals(self) -> list[str]:
        return [self.series.signal, *self.same_device]


def one_chart_per_device(series: Sequence[SignalSeries]) -> list[Chart]:
    """The series in their order; a filesystem signal whose points equal an earlier one's
    joins that chart (its thresholds with it)."""
    charts: list[Chart] = []
    for s in series:
        home = None
        if s.signal.startswith(_FILESYSTEMS) and s.points:
            home = next(
                (
                    c
                    for c in charts
                    if c.series.signal.startswith(_FILESYSTEMS)
                    and c.series.unit == s.unit
                    and c.series.points == s.points
                ),
                None,
            )
        if home is None:
            charts.append(Chart(SignalSeries(s.signal, s.unit, list(s.points), list(s.thresholds))))
        else:
            home.same_device.append(s.signal)
            home.series.thresholds.extend(s.thresholds)
    return charts
