"""The HTML incident report: one self-contained file (inline CSS and SVG, no scripts,
nothing fetched), readable without the docs.

The answer comes first: every pod the run ended (which pod, where, at what clock time,
why, with what grace), as ``ledgerlet explain`` opens. Then, per node, the signal that
triggered its evictions first and every other signal against its thresholds
(report_charts.py); each eviction with the ranking it chose from; preemptions; node
shutdowns with their priority groups; other pod endings; the decisions counted.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledgerlet_core.postmortem.signals_series import SignalSeries
from ledgerlet_services.audit.report_charts import MARKS, Band, Marker, signal_chart

#: how many endings the first section lists (the rest are counted, and in the sections below)
MAX_VERDICTS = 25


@dataclass
class NodeSection:
    node: str
    #: the signal that triggered an eviction here first
    series: list[SignalSeries]
    bands: list[Band] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    triggering: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    """One pod's ending, as explain opens with it."""

    t: float
    time: str
    type: str
    pod: str
    node: str
    text: str
    grace: str


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
class Preemption:
    t: float
    time: str
    preemptor: str
    node: str
    victims: list[str]
    why: str


@dataclass
class Shutdown:
    t: float
    time: str
    node: str
    graceful: bool
    groups: list[dict[str, Any]]


@dataclass
class Compared:
    """Another run (a saved what-if) whose pod endings the report shows beside its own."""

    run: str
    source: str
    verdicts: list[Verdict]


@dataclass
class ReportData:
    run: str
    name: str
    source: str
    start: str
    start_at: datetime
    duration: float
    counts: dict[str, int]
    nodes: list[NodeSection]
    evictions: list[EvictionRow]
    endings: list[dict[str, Any]]
    verdicts: list[Verdict] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    shutdowns: list[Shutdown] = field(default_factory=list)
    nodes_not_plotted: list[str] = field(default_factory=list)
    #: what readers say of a run that did not complete (None: it did)
    incomplete: str | None = None
    compared: Compared | None = None


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def fmt_offset(t: float) -> str:
    t = int(t)
    if t >= 3600:
        return f"{t // 3600}h{t % 3600 // 60:02d}m"
    if t >= 60:
        return f"{t // 60}m{t % 60:02d}s" if t % 60 else f"{t // 60}m"
    return f"{t}s"


def _clock(time: str) -> str:
    """``2026-03-02T14:04:00Z`` as ``14:04:00`` (the date is in the report's heading)."""
    return time[11:19] if len(time) >= 19 else time


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1180px;color:#222}
h1{margin-bottom:.2em} .sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5} tr.this td{background:#ffebee;font-weight:600}
.answer{border-left:4px solid #c62828;background:#fff8f8;padding:.6em 1em;margin:.5em 0 1.5em}
.verdict{margin:.45em 0} .verdict .what{font-weight:600} .verdict .grace{color:#555;font-size:12px}
.kind{display:inline-block;min-width:8.5em;font-size:12px;color:#fff;border-radius:3px;padding:0 .4em;margin-right:.5em}
.plot{margin:.4em 0 1em} .plot h4{margin:.2em 0;font-weight:600} .plot svg{max-width:100%;height:auto}
.trigger{color:#c62828;font-size:12px;font-weight:600}
.msg{color:#555;font-size:12px}
"""


def render_report(r: ReportData) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ledgerlet incident report: {_e(r.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Incident report: {_e(r.name)}</h1>",
        f"<p class='sub'>{_e(r.start[:10])}, {_e(_clock(r.start))} UTC for {fmt_offset(r.duration)} "
        f"&middot; run <code>{_e(r.run)}</code> &middot; source {_e(r.source or '-')}</p>",
    ]
    if r.incomplete:
        parts.append(f"<p class='msg' role='alert'><strong>Incomplete run.</strong> {_e(r.incomplete)}</p>")
    parts += _answer(r)
    parts += _side_by_side(r)
    parts += _nodes(r)
    parts += _evictions(r)
    parts += _preemptions(r)
    parts += _shutdowns(r)
    if r.endings:
        parts.append(
            "<h2>Other pod endings</h2><table class='endings'><tr><th>time (UTC)</th><th>decision</th>"
            "<th>node</th><th>pod</th><th>why</th></tr>"
        )
        for e in r.endings:
            parts.append(
                f"<tr><td>{_e(_clock(e['time']))}</td><td>{_e(e['type'])}</td><td>{_e(e.get('node') or '')}</td>"
                f"<td>{_e(e.get('pod') or '')}</td><td>{_e(e['why'])}</td></tr>"
            )
        parts.append("</table>")
    parts.append("<h2>Every decision, counted</h2><table class='counts'><tr><th>decision</th><th>count</th></tr>")
    parts += [f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in sorted(r.counts.items())]
    parts.append("</table>")
    parts.append(
        "<p class='msg'>Written by ledgerlet from the event store. Every figure is a stored input or a "
        "decision's own record; <code>ledgerlet explain NAMESPACE/POD</code> tells one pod's story in full, "
        "<code>ledgerlet replay --verify</code> checks that the decisions follow from the inputs.</p>"
    )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _answer(r: ReportData) -> list[str]:
    out = ["<section class='answer' id='answer'><h2>What happened</h2>"]
    if not r.verdicts:
        out.append("<p class='verdict'>No pod was evicted, preempted, killed or rejected in this run.</p>")
    for v in r.verdicts[:MAX_VERDICTS]:
        colour = MARKS.get(v.type, ("#455a64", ""))[0]
        out.append(
            f"<p class='verdict' data-pod='{_e(v.pod)}'>"
            f"<span class='kind' style='background:{colour}'>{_e(v.type)}</span>"
            f"<span class='what'>{_e(_clock(v.time))} UTC</span> {_e(v.text)}"
            + (f" <span class='grace'>Grace period: {_e(v.grace)}</span>" if v.grace else "")
            + "</p>"
        )
    if len(r.verdicts) > MAX_VERDICTS:
        out.append(f"<p class='msg'>... and {len(r.verdicts) - MAX_VERDICTS} more pod endings, listed below.</p>")
    out.append("</section>")
    return out


def _side_by_side(r: ReportData) -> list[str]:
    """Every pod ended in either run: how it ended in each, the differences first."""
    if r.compared is None:
        return []
    mine = {v.pod: v for v in r.verdicts if v.type != "PodRejected"}
    theirs = {v.pod: v for v in r.compared.verdicts if v.type != "PodRejected"}

    def cell(v: Verdict | None) -> str:
        return f"{_e(v.type)} at {_e(_clock(v.time))}" if v is not None else "<em>not ended</em>"

    rows = []
    for pod in sorted(set(mine) | set(theirs)):
        a, b = mine.get(pod), theirs.get(pod)
        same = a is not None and b is not None and (a.type, a.time) == (b.type, b.time)
        rows.append((same, pod, a, b))
    rows.sort(key=lambda row: (row[0], row[1]))
    out = [
        f"<h2>Side by side with run <code>{_e(r.compared.run)}</code></h2>",
        f"<p class='msg'>{_e(r.compared.source)}</p>",
        f"<table class='side-by-side'><tr><th>pod</th><th>this run</th><th>run {_e(r.compared.run)}</th><th></th></tr>",
    ]
    for same, pod, a, b in rows:
        out.append(
            f"<tr class='{'same' if same else 'changed'}'><td>{_e(pod)}</td><td>{cell(a)}</td><td>{cell(b)}</td>"
            f"<td>{'same' if same else '<strong>changed</strong>'}</td></tr>"
        )
    out.append("</table>")
    return out


def _nodes(r: ReportData) -> list[str]:
    plotted = [s for s in r.nodes if s.series]  # (nodes observed by no stats have nothing to plot)
    if not plotted and not r.nodes_not_plotted:
        return []
    out = ["<h2>Nodes: eviction signals against thresholds</h2>"]
    for section in plotted:
        out.append(f"<section class='node' id='node-{_e(section.node)}'><h3>{_e(section.node)}</h3>")
        for series in section.series:
            lines = ", ".join(t.written for t in series.thresholds) or "no threshold"
            trigger = series.signal in section.triggering
            out.append(
                f"<figure class='plot signal-plot' data-node='{_e(section.node)}' data-signal='{_e(series.signal)}'"
                f"{' data-trigger=1' if trigger else ''}><h4>{_e(series.signal)} "
                + ("<span class='trigger'>triggered evictions</span> " if trigger else "")
                + f"<span class='msg'>({_e(lines)})</span></h4>"
            )
            out.append(
                signal_chart(
                    series=series, bands=section.bands, markers=section.markers, start=r.start_at, duration=r.duration
                )
            )
            out.append("</figure>")
        out.append("</section>")
    if r.nodes_not_plotted:
        out.append(
            f"<p class='msg'>{len(r.nodes_not_plotted)} more nodes had pressure or pod endings but are not plotted: "
            f"{_e(', '.join(r.nodes_not_plotted[:50]))}{' ...' if len(r.nodes_not_plotted) > 50 else ''}</p>"
        )
    return out


def _evictions(r: ReportData) -> list[str]:
    if not r.evictions:
        return []
    out = ["<h2>Evictions and the rankings they chose from</h2>"]
    for ev in r.evictions:
        out.append(
            f"<h3 id='evict-{_e(ev.pod)}'>{_e(ev.pod)} <span class='msg'>evicted from {_e(ev.node)} at "
            f"{_e(_clock(ev.time))} UTC (+{fmt_offset(ev.t)})</span></h3>"
            f"<p>{_e(ev.threshold)} met: observed {_e(ev.observed)}; grace period {_e(ev.grace)}.<br>"
            f"<span class='msg'>{_e(ev.message)}</span></p>"
        )
        out.append(
            "<table class='ranking'><tr><th>#</th><th>pod</th><th>exceeds request</th><th>priority</th>"
            "<th>usage</th><th>notes</th></tr>"
        )
        for row in ev.ranking:
            notes = ", ".join(n for n, on in (("critical", row.get("critical")), ("static", row.get("static"))) if on)
            if not row.get("statsFound", True):
                notes = ", ".join(x for x in (notes, "no stats") if x)
            exceeds = row.get("exceedsRequest")
            exceeds_text = "" if exceeds is None else ("yes" if exceeds else "no")
            out.append(
                f"<tr class='{'this' if row.get('this') else ''}'><td>{row['position']}</td><td>{_e(row['pod'])}</td>"
                f"<td>{exceeds_text}</td><td>{_e(row.get('priority', ''))}</td>"
                f"<td>{_e(row.get('usageText', ''))}</td><td>{_e(notes)}</td></tr>"
            )
        out.append("</table>")
    return out


def _preemptions(r: ReportData) -> list[str]:
    if not r.preemptions:
        return []
    out = [
        "<h2>Preemptions</h2><table class='preemptions'><tr><th>time (UTC)</th><th>preemptor</th>"
        "<th>node</th><th>victims</th><th>why this node</th></tr>"
    ]
    for p in r.preemptions:
        out.append(
            f"<tr><td>{_e(_clock(p.time))}</td><td>{_e(p.preemptor)}</td><td>{_e(p.node)}</td>"
            f"<td>{_e(', '.join(p.victims))}</td><td>{_e(p.why)}</td></tr>"
        )
    out.append("</table>")
    return out


def _shutdowns(r: ReportData) -> list[str]:
    if not r.shutdowns:
        return []
    out = ["<h2>Node shutdowns</h2>"]
    for s in r.shutdowns:
        kind = "graceful: pods stopped by priority group, lowest first" if s.graceful else "not graceful"
        out.append(f"<h3>{_e(s.node)} <span class='msg'>at {_e(_clock(s.time))} UTC, {_e(kind)}</span></h3>")
        if not s.groups:
            continue
        out.append(
            "<table class='shutdown-groups'><tr><th>group priority</th><th>grace period</th><th>from</th>"
            "<th>to</th><th>pods</th></tr>"
        )
        for g in s.groups:
            span = [
                f"+{fmt_offset(float(g[k]))}" if isinstance(g.get(k), int | float) else "" for k in ("start", "end")
            ]
            out.append(
                f"<tr><td>{_e(g.get('priority', ''))}</td><td>{_e(g.get('gracePeriodSeconds', ''))} s</td>"
                f"<td>{span[0]}</td><td>{span[1]}</td><td>{_e(', '.join(g.get('pods') or []) or '(none)')}</td></tr>"
            )
        out.append("</table>")
    return out


__all__: Sequence[str] = [
    "Band",
    "Compared",
    "EvictionRow",
    "Marker",
    "NodeSection",
    "Preemption",
    "ReportData",
    "Shutdown",
    "Verdict",
    "render_report",
]
