"""Eviction signals over time, from a node's recorded observations, against its thresholds.

The values are what the kubelet's ``makeSignalObservations`` computes from each
Summary (``pkg/kubelet/eviction/helpers.go``): the same function the eviction manager
ran, applied to the stored node-level stats, so a plot shows what the kubelet saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import NodeObserved
from ledgerlet_core.kubelet.config import config_for_node
from ledgerlet_core.kubelet.eviction.manager import node_thresholds
from ledgerlet_core.kubelet.eviction.observations import make_signal_observations, threshold_quantity
from ledgerlet_core.kubelet.eviction.signals import SIGNAL_TO_RESOURCE, Signal
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.model.annotations import FILESYSTEMS_ANNOTATION
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.usage import effective_layout

_OBSERVED = msgspec.json.Decoder(NodeObserved)


@dataclass
class ThresholdLine:
    written: str
    hard: bool
    grace_period_seconds: float
    #: (t ns, quantity): the level the signal must stay above (percentages follow capacity)
    points: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class SignalSeries:
    signal: str
    unit: str  # "bytes" or "count"
    #: (t ns, available, capacity)
    points: list[tuple[int, int, int]] = field(default_factory=list)
    thresholds: list[ThresholdLine] = field(default_factory=list)

    def at(self, t: int) -> tuple[int, int] | None:
        """(available, capacity) of the last observation at or before ``t``."""
        best = None
        for p in self.points:
            if p[0] > t:
                break
            best = (p[1], p[2])
        return best


def decode_observation(env: Envelope) -> NodeObserved:
    return _OBSERVED.decode(env.data)


def thresholds_for_node(
    kubelet_config: Mapping[str, Any], node_object: Mapping[str, Any] | None, *, has_image_fs: bool
) -> list[Threshold]:
    """The node's configured thresholds (the run's kubeletConfig with the node's override)."""
    annotations = dict(((node_object or {}).get("metadata") or {}).get("annotations") or {})
    try:
        config = config_for_node(kubelet_config, annotations)
    except InputError:
        return []
    return node_thresholds(config, effective_layout(annotations.get(FILESYSTEMS_ANNOTATION), has_image_fs))


def node_signal_series(observations: Sequence[Envelope], thresholds: Sequence[Threshold]) -> dict[str, SignalSeries]:
    """Every signal the observations carry, in signal order, with the thresholds on it."""
    out: dict[str, SignalSeries] = {}
    for env in sorted(observations, key=Envelope.sort_key):
        if env.type != "NodeObserved":
            continue
        obs = make_signal_observations(decode_observation(env).summary)
        for signal in Signal:
            o = obs.get(signal)
            if o is None:
                continue
            series = out.get(signal.value)
            if series is None:
                unit = "bytes" if SIGNAL_TO_RESOURCE[signal] in ("memory", "ephemeral-storage") else "count"
                series = out[signal.value] = SignalSeries(signal.value, unit)
                series.thresholds = [
                    ThresholdLine(t.written, t.hard, t.grace_period / 1e9) for t in thresholds if t.signal == signal
                ]
            series.points.append((env.t, o.available.value(), o.capacity.value()))
            lines = [t for t in thresholds if t.signal == signal]
            for line, th in zip(series.thresholds, lines, strict=True):
                q = threshold_quantity(th, o, with_min_reclaim=False).value()
                if not line.points or line.points[-1][1] != q:
                    line.points.append((env.t, q))
    return {s.value: out[s.value] for s in Signal if s.value in out}


def has_image_fs(observations: Sequence[Envelope], usage: Mapping[str, Any] | None = None) -> bool:
    """A dedicated image filesystem: declared in the node's ``usage``, or (recorded stats)
    one whose capacity differs from the root filesystem's (a single disk reports itself twice)."""
    if usage is not None:
        return "imageFs" in usage
    for env in observations:
        if env.type == "NodeObserved":
            node = decode_observation(env).summary.node
            image = node.runtime.image_fs if node.runtime is not None else None
            if image is None:
                return False
            return node.fs is None or image.capacity_bytes != node.fs.capacity_bytes
    return False
