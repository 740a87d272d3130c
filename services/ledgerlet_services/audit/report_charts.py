"""The report's charts, drawn by matplotlib as static SVG (no scripts, nothing fetched).

One chart per node and signal: what the kubelet saw (a step at each observation: it
acts on the last one) against every threshold over clock time, pressure conditions as
bands; above it a strip with one lane per kind of decision, so that an eviction, a
reclaim and an image GC at the same second stay three marks, never one hiding another.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import matplotlib
from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, MaxNLocator

from ledgerlet_core.postmortem.signals_series import SignalSeries

SERIES_COLOUR: Final = "#1565c0"
THRESHOLD_COLOUR: Final = "#37474f"
BAND_COLOURS: Final = {
    "MemoryPressure": "#f4a3a3",
    "DiskPressure": "#f7c77e",
    "PIDPressure": "#b9a3f4",
    "Ready": "#cccccc",
}
#: each kind of decision: its colour and its mark, in the order of the strip's lanes
MARKS: Final = {
    "PodEvicted": ("#c62828", "v"),
    "PodPreempted": ("#ef6c00", "s"),
    "OOMKilled": ("#6a1b9a", "X"),
    "PodTerminated": ("#455a64", "o"),
    "NodeReclaimed": ("#2e7d32", "^"),
    "ImageGarbageCollected": ("#00838f", "D"),
}
_UNITS: Final = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
_RC: Final[dict[Any, Any]] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "ledgerlet",
    "font.size": 9,
    "font.family": "sans-serif",
}


@dataclass
class Band:
    condition: str
    t_from: float
    t_to: float


@dataclass
class Marker:
    t: float
    type: str
    label: str


def _scale(unit: str, top: float) -> tuple[float, str]:
    """Bytes in the binary unit that fits the largest value; counts as they are."""
    if unit != "bytes":
        return 1.0, ""
    for size, name in _UNITS:
        if top >= size:
            return float(size), name
    return 1.0, "bytes"


def signal_chart(
    *,
    series: SignalSeries,
    bands: Sequence[Band],
    markers: Sequence[Marker],
    start: datetime,
    duration: float,
) -> str:
    """One chart as an SVG document's ``<svg>`` element; its parts carry ids (``series``,
    ``threshold-N``, ``band-N``, ``mark-TYPE``) that tests and stylesheets can find."""

    def clock(t_seconds: float) -> datetime:
        return start + timedelta(seconds=t_seconds)

    pts = series.points
    levels = [q for line in series.thresholds for _, q in line.points]
    top = max([p[1] for p in pts] + levels + [1])
    per, unit_name = _scale(series.unit, top)
    end = clock(max(duration, max((p[0] / 1e9 for p in pts), default=0.0), 1.0))
    lanes = [k for k in MARKS if any(m.type == k for m in markers)]

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(12, 2.9 + 0.22 * len(lanes)), dpi=80, layout="constrained")
        FigureCanvasSVG(fig)
        if lanes:
            strip, ax = fig.subplots(2, 1, sharex=True, height_ratios=[0.5 + 0.35 * len(lanes), 5])
        else:
            ax, strip = fig.subplots(), None
        labelled: set[str] = set()  # (one legend entry per condition)
        for i, b in enumerate(bands):
            label = None if b.condition in labelled else b.condition
            labelled.add(b.condition)
            colour = BAND_COLOURS.get(b.condition, "#dddddd")
            ax.axvspan(clock(b.t_from), clock(b.t_to), color=colour, alpha=0.35, lw=0, gid=f"band-{i}", label=label)
        for i, line in enumerate(series.thresholds):
            if not line.points:
                continue
            xs = [clock(t / 1e9) for t, _ in line.points] + [end]
            ys = [q / per for _, q in line.points] + [line.points[-1][1] / per]
            kind = "hard" if line.hard else f"soft, {line.grace_period_seconds:g}s grace"
            ax.step(
                xs, ys, where="post", color=THRESHOLD_COLOUR, lw=1.3, ls="-" if line.hard else "--",
                gid=f"threshold-{i}", label=f"{line.written} ({kind})",
            )  # fmt: skip
        if pts:
            xs = [clock(t / 1e9) for t, _, _ in pts] + [end]
            ys = [a / per for _, a, _ in pts] + [pts[-1][1] / per]
            few = len(pts) < 30  # a lone observation still shows
            ax.step(
                xs, ys, where="post", color=SERIES_COLOUR, lw=1.8, gid="series",
                label="available (what the kubelet saw)",
                marker="o" if few else None, markersize=3, markevery=list(range(len(pts))) if few else None,
            )  # fmt: skip
        for m in markers:
            if m.type == "PodEvicted":
                ax.axvline(clock(m.t), color=MARKS[m.type][0], lw=0.9, ls=":", gid="eviction-line")
        ax.set_ylim(bottom=0, top=top / per * 1.08)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 4, 5, 8, 10]))
        if not unit_name:  # counts: 2.4M, not an offset of 1e6
            ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        ax.set_ylabel(f"{series.signal}" + (f" ({unit_name})" if unit_name else ""))
        ax.set_xlim(clock(0), end)
        locator = mdates.AutoDateLocator(minticks=4, maxticks=9, tz=start.tzinfo)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        concise = mdates.ConciseDateFormatter(locator, tz=start.tzinfo)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_formatter(concise)
        ax.grid(axis="y", color="#eeeeee")
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=8, frameon=False)
        if strip is not None:
            _strip(strip, lanes, markers, clock)
        return _inline(fig)


def _num(when: datetime) -> float:
    """A clock time as matplotlib's date number (scatter and annotate want numbers)."""
    return float(mdates.date2num(when))  # type: ignore[no-untyped-call]


def _strip(strip: Axes, lanes: list[str], markers: Sequence[Marker], clock: Callable[[float], datetime]) -> None:
    """One lane per kind of decision; marks at the same second in a lane become one
    mark with its count."""
    for lane, kind in enumerate(reversed(lanes)):
        colour, shape = MARKS[kind]
        at: dict[float, list[Marker]] = {}
        for m in markers:
            if m.type == kind:
                at.setdefault(m.t, []).append(m)
        xs = [_num(clock(t)) for t in at]
        strip.scatter(xs, [lane] * len(xs), marker=shape, color=colour, s=42, zorder=3, gid=f"mark-{kind}")
        for t, group in at.items():
            if len(group) > 1:
                strip.annotate(
                    f"×{len(group)}", (clock(t), lane), xytext=(5, -3), textcoords="offset points", fontsize=7
                )
    strip.set_yticks(range(len(lanes)), list(reversed(lanes)), fontsize=8)
    strip.set_ylim(-0.7, len(lanes) - 0.3)
    strip.tick_params(axis="x", labelbottom=False)
    for side in ("top", "right", "left"):
        strip.spines[side].set_visible(False)
    strip.grid(axis="x", color="#f0f0f0")


#: one colour per signal in the histogram, in the order the signals first appear
SIGNAL_COLOURS: Final = ("#c62828", "#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#5d4037", "#455a64")


def _inline(fig: Figure) -> str:
    """The figure as an inline ``<svg>``. Inline in HTML, an ``<svg>`` needs no namespace
    declarations (the parser knows SVG and xlink), and the RDF metadata names licences by
    URL: without them the report holds no URL a reader could take for something fetched."""
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    svg = text[text.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.DOTALL)
    return re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg[: svg.index(">") + 1], count=2) + svg[svg.index(">") + 1 :]


def histogram_chart(
    *, buckets: Sequence[tuple[float, dict[str, int]]], width: int, signals: Sequence[str], start: datetime
) -> str:
    """Evictions per ``width`` seconds over clock time, stacked by signal; the bar of a
    signal's evictions in bucket K has the id ``hist-SIGNAL-K`` (empty ones are not drawn)."""

    def clock(t_seconds: float) -> datetime:
        return start + timedelta(seconds=t_seconds)

    days = width / 86400
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(12, 2.4), dpi=80, layout="constrained")
        FigureCanvasSVG(fig)
        ax = fig.subplots()
        xs = [_num(clock(t)) for t, _ in buckets]
        below = [0] * len(buckets)
        for i, signal in enumerate(signals):
            heights = [counts.get(signal, 0) for _, counts in buckets]
            drawn = [k for k, h in enumerate(heights) if h]
            bars = ax.bar(
                [xs[k] for k in drawn], [heights[k] for k in drawn], width=days * 0.9,
                bottom=[below[k] for k in drawn], align="edge", label=signal,
                color=SIGNAL_COLOURS[i % len(SIGNAL_COLOURS)],
            )  # fmt: skip
            for k, bar in zip(drawn, bars, strict=True):
                bar.set_gid(f"hist-{signal}-{k}")
            below = [b + h for b, h in zip(below, heights, strict=True)]
        top = max(below, default=0)
        ax.set_ylim(0, max(top, 1) * 1.1)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        ax.set_ylabel(f"evictions per {_width_text(width)}")
        if xs:
            ax.set_xlim(xs[0], xs[-1] + days)
        locator = mdates.AutoDateLocator(minticks=4, maxticks=10, tz=start.tzinfo)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=start.tzinfo))  # type: ignore[no-untyped-call]
        ax.grid(axis="y", color="#eeeeee")
        ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=min(4, max(1, len(signals))))
        return _inline(fig)


def _width_text(width: int) -> str:
    if width % 3600 == 0:
        return f"{width // 3600} h" if width > 3600 else "hour"
    if width % 60 == 0:
        return f"{width // 60} min" if width > 60 else "minute"
    return f"{width} s"
