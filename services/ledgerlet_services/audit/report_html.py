"""The HTML incident report: one self-contained file (inline CSS and SVG, no scripts,
nothing fetched), readable without the docs.

Per node: every eviction signal over time against its thresholds, pressure conditions
as bands, and markers where pods were evicted, OOM-killed, preempted or shut down.
Then every eviction with the ranking it chose from, and the other pod endings.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ledgerlet_core.postmortem.explain import show
from ledgerlet_core.postmortem.signals_series import SignalSeries

W, H = 760, 220
PAD_L, PAD_R, PAD_T, PAD_B = 70, 16, 14, 30
BAND_COLOURS = {"MemoryPressure": "#f4a3a3", "DiskPressure": "#f7c77e", "PIDPressure": "#b9a3f4", "Ready": "#cccccc"}
MARKER_COLOURS = {
    "PodEvicted": "#c62828",
    "OOMKilled": "#6a1b9a",
    "PodPreempted": "#ef6c00",
    "PodTerminated": "#455a64",
    "NodeReclaimed": "#2e7d32",
    "ImageGarbageCollected": "#00838f",
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


@dataclass
class NodeSection:
    node: str
    series: list[SignalSeries]
    bands: list[Band] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)


@dataclass
class EvictionRow:
    t: float
    time: str
    node: str
    pod: str
    threshold: str
    observed: str
    grace: str
    message: str
    ranking: list[dict[str, Any]]


@dataclass
class ReportData:
    run: str
    name: str
    source: str
    start: str
    duration: float
    counts: dict[str, int]
    nodes: list[NodeSection]
    evictions: list[EvictionRow]
    endings: list[dict[str, Any]]
    nodes_not_plotted: list[str] = field(default_factory=list)
    #: what readers say of a run that did not complete (None: it did)
    incomplete: str | None = None


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    mag = 10 ** len(str(int(step))) / 10 if step >= 1 else 1
    for m in (1, 2, 2.5, 5, 10):
        if step <= m * mag:
            step = m * mag
            break
    first = (lo // step) * step
    return [first + i * step for i in range(n + 2) if lo <= first + i * step <= hi]


def _plot(section: NodeSection, series: SignalSeries, duration: float) -> str:
    pts = series.points
    t_max = max(duration, max((p[0] / 1e9 for p in pts), default=1.0), 1.0)
    levels = [q for line in series.thresholds for _, q in line.points]
    y_max = max([p[2] for p in pts] + [p[1] for p in pts] + levels + [1])
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def x(t: float) -> float:
        return PAD_L + pw * t / t_max

    def y(v: float) -> float:
        return PAD_T + ph * (1 - v / y_max)

    out = [
        f'<svg class="signal-plot" data-node="{_e(section.node)}" data-signal="{_e(series.signal)}" '
        f'viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
        f'aria-label="{_e(series.signal)} on {_e(section.node)}">'
    ]
    for b in section.bands:
        colour = BAND_COLOURS.get(b.condition, "#dddddd")
        out.append(
            f'<rect class="band" x="{x(b.t_from):.1f}" y="{PAD_T}" width="{max(x(b.t_to) - x(b.t_from), 1):.1f}" '
            f'height="{ph}" fill="{colour}" opacity="0.35"><title>{_e(b.condition)} {b.t_from:g}s to '
            f"{b.t_to:g}s</title></rect>"
        )
    for v in _nice_ticks(0, y_max):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(
            f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">'
            f"{_e(show(v, series.unit))}</text>"
        )
    for t in _nice_ticks(0, t_max, 8):
        out.append(f'<text x="{x(t):.1f}" y="{H - 10}" text-anchor="middle" font-size="11">{_fmt_t(t)}</text>')
    out.append(
        f'<line x1="{PAD_L}" x2="{PAD_L}" y1="{PAD_T}" y2="{PAD_T + ph}" stroke="#888"/>'
        f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{PAD_T + ph}" y2="{PAD_T + ph}" stroke="#888"/>'
    )
    for line in series.thresholds:
        if not line.points:
            continue
        d = []
        for i, (t, q) in enumerate(line.points):
            tx, ty = x(t / 1e9), y(q)
            d.append(f"M{tx:.1f},{ty:.1f}" if i == 0 else f"H{tx:.1f} V{ty:.1f}")
        d.append(f"H{x(t_max):.1f}")
        dash = "" if line.hard else ' stroke-dasharray="6 4"'
        out.append(
            f'<path class="threshold" d="{" ".join(d)}" fill="none" stroke="#c62828" stroke-width="1.5"{dash}>'
            f"<title>{_e(line.written)} ({'hard' if line.hard else f'soft, {line.grace_period_seconds:g}s'})</title>"
            "</path>"
        )
    if pts:
        path = " ".join(f"{'M' if i == 0 else 'L'}{x(t / 1e9):.1f},{y(a):.1f}" for i, (t, a, _) in enumerate(pts))
        out.append(f'<path class="series" d="{path}" fill="none" stroke="#1565c0" stroke-width="2"/>')
    for m in section.markers:
        colour = MARKER_COLOURS.get(m.type, "#000")
        out.append(
            f'<line class="marker" x1="{x(m.t):.1f}" x2="{x(m.t):.1f}" y1="{PAD_T}" y2="{PAD_T + ph}" '
            f'stroke="{colour}" stroke-width="1.5"><title>{_e(m.label)}</title></line>'
        )
    out.append("</svg>")
    return "".join(out)


def _fmt_t(t: float) -> str:
    t = int(t)
    if t >= 3600:
        return f"{t // 3600}h{t % 3600 // 60:02d}m"
    if t >= 60:
        return f"{t // 60}m{t % 60:02d}s" if t % 60 else f"{t // 60}m"
    return f"{t}s"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:.2em} .sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5} tr.this td{background:#ffebee;font-weight:600}
.legend span{display:inline-block;margin-right:1.2em;font-size:12px}
.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.plot{margin:.4em 0 1em} .plot h4{margin:.2em 0;font-weight:600}
details{margin:.3em 0 1em} summary{cursor:pointer}
.msg{color:#555;font-size:12px}
"""


def render_report(r: ReportData) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ledgerlet incident report: {_e(r.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Incident report: {_e(r.name)}</h1>",
        f"<p class='sub'>run <code>{_e(r.run)}</code> &middot; from {_e(r.start)} for {_fmt_t(r.duration)} "
        f"&middot; source {_e(r.source or '-')}</p>",
        *(
            [f"<p class='msg' role='alert'><strong>Incomplete run.</strong> {_e(r.incomplete)}</p>"]
            if r.incomplete
            else []
        ),
        "<h2>What was decided</h2>",
        _summary_sentence(r),
        "<table class='counts'><tr><th>decision</th><th>count</th></tr>",
        *(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in sorted(r.counts.items())),
        "</table>",
    ]
    parts.append("<h2>Nodes: eviction signals against thresholds</h2>")
    parts.append(_legend())
    if not r.nodes:
        parts.append("<p>No node was under pressure or lost a pod.</p>")
    for section in r.nodes:
        parts.append(f"<section class='node' id='node-{_e(section.node)}'><h3>{_e(section.node)}</h3>")
        for series in section.series:
            lines = ", ".join(t.written for t in series.thresholds) or "no threshold"
            parts.append(f"<div class='plot'><h4>{_e(series.signal)} <span class='msg'>({_e(lines)})</span></h4>")
            parts.append(_plot(section, series, r.duration))
            parts.append("</div>")
        parts.append("</section>")
    if r.nodes_not_plotted:
        parts.append(
            f"<p class='msg'>{len(r.nodes_not_plotted)} more nodes had pressure or pod endings but are not plotted: "
            f"{_e(', '.join(r.nodes_not_plotted[:50]))}{' ...' if len(r.nodes_not_plotted) > 50 else ''}</p>"
        )
    parts.append("<h2>Evictions and the rankings they chose from</h2>")
    if not r.evictions:
        parts.append("<p>No pod was evicted.</p>")
    for ev in r.evictions:
        parts.append(
            f"<h3 id='evict-{_e(ev.pod)}'>{_e(ev.pod)} <span class='msg'>evicted from {_e(ev.node)} at "
            f"{ev.t:g}s ({_e(ev.time)})</span></h3>"
            f"<p>{_e(ev.threshold)} met: observed {_e(ev.observed)}; grace period {_e(ev.grace)}.<br>"
            f"<span class='msg'>{_e(ev.message)}</span></p>"
        )
        parts.append(
            "<table class='ranking'><tr><th>#</th><th>pod</th><th>exceeds request</th><th>priority</th>"
            "<th>usage</th><th>notes</th></tr>"
        )
        for row in ev.ranking:
            notes = ", ".join(n for n, on in (("critical", row.get("critical")), ("static", row.get("static"))) if on)
            if not row.get("statsFound", True):
                notes = ", ".join(x for x in (notes, "no stats") if x)
            exceeds = row.get("exceedsRequest")
            exceeds_text = "" if exceeds is None else ("yes" if exceeds else "no")
            parts.append(
                f"<tr class='{'this' if row.get('this') else ''}'><td>{row['position']}</td><td>{_e(row['pod'])}</td>"
                f"<td>{exceeds_text}</td><td>{_e(row.get('priority', ''))}</td>"
                f"<td>{_e(row.get('usageText', ''))}</td><td>{_e(notes)}</td></tr>"
            )
        parts.append("</table>")
    if r.endings:
        parts.append(
            "<h2>Other pod endings</h2><table class='endings'><tr><th>t</th><th>decision</th>"
            "<th>node</th><th>pod</th><th>why</th></tr>"
        )
        for e in r.endings:
            parts.append(
                f"<tr><td>{e['t']:g}s</td><td>{_e(e['type'])}</td><td>{_e(e.get('node') or '')}</td>"
                f"<td>{_e(e.get('pod') or '')}</td><td>{_e(e['why'])}</td></tr>"
            )
        parts.append("</table>")
    parts.append(
        "<p class='msg'>Written by ledgerlet from the event store. Every figure is a stored input or a "
        "decision's own record; <code>ledgerlet explain NAMESPACE/POD</code> tells one pod's story in full, "
        "<code>ledgerlet replay --verify</code> checks that the decisions follow from the inputs.</p>"
    )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _summary_sentence(r: ReportData) -> str:
    ev = r.counts.get("PodEvicted", 0)
    oom = r.counts.get("OOMKilled", 0)
    pre = r.counts.get("PodPreempted", 0)
    nodes = sorted({e.node for e in r.evictions})
    bits = [f"{ev} pod{'s' if ev != 1 else ''} evicted" + (f" (on {', '.join(nodes)})" if nodes else "")]
    if oom:
        bits.append(f"{oom} OOM kill{'s' if oom != 1 else ''}")
    if pre:
        bits.append(f"{pre} preemption{'s' if pre != 1 else ''}")
    return f"<p class='verdict'>{_e('; '.join(bits))}.</p>"


def _legend() -> str:
    items = [
        ("#1565c0", "available (what the kubelet saw)"),
        ("#c62828", "threshold (dashed: soft)"),
        *((c, f"{k} band") for k, c in BAND_COLOURS.items() if k != "Ready"),
        *((c, k) for k, c in MARKER_COLOURS.items()),
    ]
    spans = "".join(f"<span><i class='swatch' style='background:{c}'></i>{_e(label)}</span>" for c, label in items)
    return f"<p class='legend'>{spans}</p>"


__all__: Sequence[str] = ["Band", "EvictionRow", "Marker", "NodeSection", "ReportData", "render_report"]
