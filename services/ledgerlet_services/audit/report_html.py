"""The HTML incident report: one self-contained file (inline CSS and SVG, no scripts,
nothing fetched), readable without the docs.

The answer comes first: how many pods the run evicted, on how many nodes, when and for
which signal, then every pod the run ended (which pod, where, at what clock time, why,
with what grace), as ``ledgerlet explain`` opens. A table of contents leads to the
summary of a fleet's evictions (by signal, node pool and minute, over time; the
namespaces and pods that lost most; what-if hints: report_summary.py, report_hints.py),
then to each node's detail, collapsed when there are many: the signal that triggered its
evictions first and every other signal against its thresholds (report_charts.py; a
device drawn once: report_devices.py), each eviction with the ranking it chose from.
Then preemptions; node shutdowns with their priority groups; other pod endings; the
decisions counted.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledgerlet_core.postmortem.explain import show
from ledgerlet_services.audit.report_charts import MARKS, Band, Marker, histogram_chart, signal_chart
from ledgerlet_services.audit.report_devices import Chart
from ledgerlet_services.audit.report_hints import Hint, Met, hints
from ledgerlet_services.audit.report_summary import NO_POOL, Evicted, Summary, summarise

#: how many endings the first section lists (the rest are counted, and in the sections below)
MAX_VERDICTS = 25
#: a fleet's answer lists fewer: its summary tells the rest
MAX_VERDICTS_FLEET = 8
#: node sections open as the page loads when there are at most this many
OPEN_NODES = 3
#: an eviction's ranking: the first rows (the evicted pod's always shown)
RANKING_ROWS = 10
#: groups (signal, pool, minute) listed
MAX_GROUPS = 120


@dataclass
class NodeSection:
    node: str
    #: the signal that triggered an eviction here first; a device drawn once
    series: list[Chart]
    bands: list[Band] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    triggering: list[str] = field(default_factory=list)
    pool: str = NO_POOL
    #: whether its charts were drawn (report.MAX_PLOTTED_NODES)
    plotted: bool = True


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
    signal: str = ""
    hard: bool = True
    observed_value: int | None = None
    capacity: int = 0
    unit: str = "bytes"
    #: the evicted pod's usage when it was ranked
    usage: int | None = None
    pool: str = NO_POOL


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
    #: the node label the pools are told by ("": no node had one)
    pool_label: str = ""
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
nav.toc{font-size:13px;margin:.3em 0 .8em} nav.toc a{margin-right:1em;white-space:nowrap}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5} tr.this td{background:#ffebee;font-weight:600} td.n{text-align:right}
.answer{border-left:4px solid #c62828;background:#fff8f8;padding:.6em 1em;margin:.5em 0 1.5em}
.answer .headline{font-size:15px;margin:.3em 0 .6em} .answer .hint{font-size:13px;margin:.3em 0 .6em}
.verdict{margin:.45em 0} .verdict .what{font-weight:600} .verdict .grace{color:#555;font-size:12px}
.kind{display:inline-block;min-width:8.5em;font-size:12px;color:#fff;border-radius:3px;padding:0 .4em;margin-right:.5em}
.plot{margin:.4em 0 1em} .plot h4{margin:.2em 0;font-weight:600} .plot svg{max-width:100%;height:auto}
.hist svg{max-width:100%;height:auto}
.trigger{color:#c62828;font-size:12px;font-weight:600}
.msg{color:#555;font-size:12px}
.side{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
details.node{border:1px solid #e0e0e0;border-radius:4px;margin:.4em 0;padding:.2em .8em}
details.node>summary{cursor:pointer;padding:.3em 0} details.node[open]>summary{border-bottom:1px solid #eee}
code.cmd{background:#f5f5f5;padding:1px 4px;border-radius:3px}
"""


def render_report(r: ReportData) -> str:
    summary = summarise(_evicted(r), r.duration, r.pool_label) if r.evictions else None
    tips = hints([_met(ev) for ev in r.evictions if ev.observed_value is not None])
    fleet = len(r.evictions) > 1
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ledgerlet incident report: {_e(r.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Incident report: {_e(r.name)}</h1>",
        f"<p class='sub'>{_e(r.start[:10])}, {_e(_clock(r.start))} UTC for {fmt_offset(r.duration)} "
        f"&middot; run <code>{_e(r.run)}</code> &middot; source {_e(r.source or '-')}</p>",
    ]
    if r.incomplete:
        parts.append(f"<p class='msg' role='alert'><strong>Incomplete run.</strong> {_e(r.incomplete)}</p>")
    parts.append(_toc(r, fleet, bool(tips)))
    parts += _answer(r, summary if fleet else None, tips[:1] if fleet else [])
    parts += _side_by_side(r)
    if summary is not None and fleet:
        parts += _summary(r, summary)
        parts += _top(summary)
    parts += _whatif(r, tips)
    parts += _nodes(r)
    parts += _preemptions(r)
    parts += _shutdowns(r)
    parts += _endings(r)
    parts.append(
        "<h2 id='counts'>Every decision, counted</h2><table class='counts'><tr><th>decision</th><th>count</th></tr>"
    )
    parts += [f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in sorted(r.counts.items())]
    parts.append("</table>")
    parts.append(
        "<p class='msg'>Written by ledgerlet from the event store. Every figure is a stored input or a "
        "decision's own record; <code>ledgerlet explain NAMESPACE/POD</code> tells one pod's story in full, "
        "<code>ledgerlet replay --verify</code> checks that the decisions follow from the inputs.</p>"
    )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _endings(r: ReportData) -> list[str]:
    """Other pod endings: the first MAX_VERDICTS in a table, the rest behind one line."""
    if not r.endings:
        return []
    head = "<table class='endings'><tr><th>time (UTC)</th><th>decision</th><th>node</th><th>pod</th><th>why</th></tr>"
    out = ["<h2 id='endings'>Other pod endings</h2>", head]
    for i, e in enumerate(r.endings):
        if i == MAX_VERDICTS:
            out.append(f"</table><details class='more-endings'><summary>{len(r.endings) - i} more</summary>{head}")
        out.append(
            f"<tr><td>{_e(_clock(e['time']))}</td><td>{_e(e['type'])}</td><td>{_e(e.get('node') or '')}</td>"
            f"<td>{_e(e.get('pod') or '')}</td><td>{_e(e['why'])}</td></tr>"
        )
    out.append("</table>" + ("</details>" if len(r.endings) > MAX_VERDICTS else ""))
    return out


def _evicted(r: ReportData) -> list[Evicted]:
    return [
        Evicted(
            t=ev.t,
            minute=_clock(ev.time)[:5],
            node=ev.node,
            pod=ev.pod,
            signal=ev.signal or "(none)",
            threshold=ev.threshold,
            pool=ev.pool,
            usage=ev.usage,
            unit=ev.unit,
        )
        for ev in r.evictions
    ]


def _met(ev: EvictionRow) -> Met:
    return Met(ev.signal, ev.threshold, ev.hard, ev.observed_value or 0, ev.capacity, ev.unit)


def _toc(r: ReportData, fleet: bool, tips: bool) -> str:
    """Links to the sections this report has."""
    entries = [("answer", "What happened")]
    if r.compared is not None:
        entries.append(("side-by-side", "Side by side"))
    if fleet:
        entries += [
            ("summary", "By signal, pool and minute"),
            ("over-time", "Over time"),
            ("top", "Top namespaces and pods"),
        ]
    if tips:
        entries.append(("whatif", "What if"))
    if r.nodes:
        entries.append(("nodes", f"Nodes ({len(r.nodes)})"))
    if r.preemptions:
        entries.append(("preemptions", "Preemptions"))
    if r.shutdowns:
        entries.append(("shutdowns", "Node shutdowns"))
    if r.endings:
        entries.append(("endings", "Other pod endings"))
    entries.append(("counts", "Every decision, counted"))
    links = "".join(f"<a href='#{i}'>{_e(text)}</a>" for i, text in entries)
    return f"<nav class='toc' aria-label='Contents'>{links}</nav>"


def _headline(r: ReportData, s: Summary) -> str:
    first, last = _clock(_time_of(r, s.t_first)), _clock(_time_of(r, s.t_last))
    span = f"at {first} UTC" if first == last else f"between {first} and {last} UTC"
    signals = ", ".join(
        f"{n} for {' / '.join(written)}" for _, (n, written) in sorted(s.by_signal.items(), key=lambda kv: -kv[1][0])
    )
    text = f"{s.evictions} pods evicted on {s.nodes} node{'s' if s.nodes != 1 else ''} {span}: {signals}."
    if s.busiest_minute[1] > 1:
        text += f" Most in one minute: {s.busiest_minute[1]} at {s.busiest_minute[0]} UTC."
    if s.pool_label:
        pools = ", ".join(f"{p} {n}" for p, n in list(s.by_pool.items())[:6])
        text += f" By node pool ({s.pool_label}): {pools}{', ...' if len(s.by_pool) > 6 else ''}."
    others = {k: v for k, v in r.counts.items() if k in ("PodPreempted", "OOMKilled", "PodRejected")}
    if others:
        text += " Also " + ", ".join(f"{v} {k}" for k, v in sorted(others.items())) + "."
    return text


def _time_of(r: ReportData, t: float) -> str:
    return next((ev.time for ev in r.evictions if ev.t == t), "")


def _answer(r: ReportData, summary: Summary | None, tips: list[Hint]) -> list[str]:
    out = ["<section class='answer' id='answer'><h2>What happened</h2>"]
    if summary is not None:
        out.append(f"<p class='headline'>{_e(_headline(r, summary))}</p>")
    for tip in tips:
        out.append(f"<p class='hint'>What if: {_hint_text(r, tip)} <a href='#whatif'>more</a></p>")
    if not r.verdicts:
        out.append("<p class='verdict'>No pod was evicted, preempted, killed or rejected in this run.</p>")
    if summary is not None:
        out += _first_endings(r)
    else:
        for v in r.verdicts[:MAX_VERDICTS]:
            out.append(_verdict(v))
        if len(r.verdicts) > MAX_VERDICTS:
            out.append(f"<p class='msg'>... and {len(r.verdicts) - MAX_VERDICTS} more pod endings, listed below.</p>")
    out.append("</section>")
    return out


def _verdict(v: Verdict) -> str:
    colour = MARKS.get(v.type, ("#455a64", ""))[0]
    return (
        f"<p class='verdict' data-pod='{_e(v.pod)}'>"
        f"<span class='kind' style='background:{colour}'>{_e(v.type)}</span>"
        f"<span class='what'>{_e(_clock(v.time))} UTC</span> {_e(v.text)}"
        + (f" <span class='grace'>Grace period: {_e(v.grace)}</span>" if v.grace else "")
        + "</p>"
    )


def _first_endings(r: ReportData) -> list[str]:
    """A fleet's first endings, one line each (the whole story is in each node's detail)."""
    evictions = {(ev.pod, ev.time): ev for ev in r.evictions}
    out = [
        "<table class='first-endings'><tr><th>time (UTC)</th><th>ending</th><th>pod</th><th>node</th><th>why</th></tr>"
    ]
    for v in r.verdicts[:MAX_VERDICTS_FLEET]:
        ev = evictions.get((v.pod, v.time))
        if ev is not None:
            place = next((row for row in ev.ranking if row.get("this")), None)
            why = f"{ev.threshold} met: observed {ev.observed}" + (
                f"; ranked {place['position']} of {len(ev.ranking)}" if place else ""
            )
        else:
            why = v.text if len(v.text) <= 160 else v.text[:157] + "..."
        node = f"<a href='#node-{_e(v.node)}'>{_e(v.node)}</a>" if v.node else ""
        out.append(
            f"<tr class='ending' data-pod='{_e(v.pod)}'><td>{_e(_clock(v.time))}</td><td>{_e(v.type)}</td>"
            f"<td>{_e(v.pod)}</td><td>{node}</td><td>{_e(why)}</td></tr>"
        )
    out.append("</table>")
    if len(r.verdicts) > MAX_VERDICTS_FLEET:
        out.append(
            f"<p class='msg'>The first {MAX_VERDICTS_FLEET} of {len(r.verdicts)} pod endings; each is told in full in "
            "its node's detail (<a href='#nodes'>Nodes</a>).</p>"
        )
    return out


def _hint_text(r: ReportData, h: Hint) -> str:
    return (
        f"with <code>{_e(h.assignment)}</code> the threshold would not have been met when {h.spared} of the "
        f"{h.of} evictions it made were decided (available then: {_e(_span(h.lowest, h.highest))}). "
        f"<code class='cmd'>{_e(h.command(r.run))}</code> re-runs the inputs with it and tells what then "
        "happens instead: pods spared, evicted later, or killed by the OOM killer."
    )


def _span(low: str, high: str) -> str:
    return low if low == high else f"{low} to {high}"


def _summary(r: ReportData, s: Summary) -> list[str]:
    out = ["<section id='summary'><h2>Evictions by signal, node pool and minute</h2><div class='side'>"]
    out.append("<table class='by-signal'><tr><th>signal</th><th>thresholds met</th><th>evictions</th></tr>")
    for signal, (n, written) in sorted(s.by_signal.items(), key=lambda kv: (-kv[1][0], kv[0])):
        out.append(f"<tr><td>{_e(signal)}</td><td>{_e(', '.join(written))}</td><td class='n'>{n}</td></tr>")
    out.append("</table>")
    label = f" <span class='msg'>({_e(s.pool_label)})</span>" if s.pool_label else ""
    out.append(f"<table class='by-pool'><tr><th>node pool{label}</th><th>evictions</th></tr>")
    for pool, n in s.by_pool.items():
        out.append(f"<tr><td>{_e(pool)}</td><td class='n'>{n}</td></tr>")
    out.append("</table></div>")
    if not s.pool_label:
        out.append(
            "<p class='msg'>No node carries a pool label (karpenter.sh/nodepool, cloud.google.com/gke-nodepool, "
            "eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, node.kubernetes.io/instance-type, ...).</p>"
        )
    out.append(f"<h3 id='over-time'>Over time</h3><figure class='hist' data-width='{s.width}'>")
    out.append(
        histogram_chart(
            buckets=[(b.t_from, b.counts) for b in s.buckets], width=s.width, signals=s.signals, start=r.start_at
        )
    )
    out.append("</figure>")
    out.append(
        "<table class='groups'><tr><th>minute (UTC)</th><th>signal</th><th>node pool</th><th>evictions</th>"
        "<th>nodes</th><th>pods</th></tr>"
    )
    for g in s.groups[:MAX_GROUPS]:
        nodes = ", ".join(f"<a href='#node-{_e(n)}'>{_e(n)}</a>" for n in g.nodes[:4])
        nodes += f" and {len(g.nodes) - 4} more" if len(g.nodes) > 4 else ""
        pods = ", ".join(_e(p) for p in g.pods[:3]) + (f" and {len(g.pods) - 3} more" if len(g.pods) > 3 else "")
        out.append(
            f"<tr><td>{_e(g.minute)}</td><td>{_e(g.signal)}</td><td>{_e(g.pool)}</td><td class='n'>{g.evictions}</td>"
            f"<td>{nodes}</td><td>{pods}</td></tr>"
        )
    out.append("</table>")
    if len(s.groups) > MAX_GROUPS:
        out.append(f"<p class='msg'>... and {len(s.groups) - MAX_GROUPS} more groups.</p>")
    out.append("</section>")
    return out


def _top(s: Summary) -> list[str]:
    out = ["<section id='top'><h2>Top namespaces and pods</h2><div class='side'>"]
    out.append(
        "<table class='top-namespaces'><tr><th>namespace</th><th>evictions</th><th>nodes</th><th>signals</th></tr>"
    )
    for ns in s.namespaces:
        out.append(
            f"<tr><td>{_e(ns.name)}</td><td class='n'>{ns.evictions}</td><td class='n'>{ns.nodes}</td>"
            f"<td>{_e(', '.join(ns.signals))}</td></tr>"
        )
    out.append("</table>")
    out.append(
        "<table class='top-pods'><tr><th>pod</th><th>evictions</th><th>signals</th><th>usage when ranked</th></tr>"
    )
    for pod in s.pods:
        usage = show(pod.usage, pod.unit) if pod.usage is not None else ""
        out.append(
            f"<tr><td>{_e(pod.name)}</td><td class='n'>{pod.evictions}</td><td>{_e(', '.join(pod.signals))}</td>"
            f"<td class='n'>{_e(usage)}</td></tr>"
        )
    out.append("</table></div></section>")
    return out


def _whatif(r: ReportData, tips: list[Hint]) -> list[str]:
    if not tips:
        return []
    out = [
        "<section id='whatif'><h2>What if</h2><p class='msg'>From this run's own numbers: per threshold that "
        "evicted, a level that would not have been met at the moment of most of its evictions. A level is a "
        "question, not an answer: usage that kept growing can cross it later, or run a node out of memory "
        "before the kubelet acts; the what-if run tells.</p><ul>"
    ]
    for tip in tips:
        out.append(f"<li class='hint' data-setting='{_e(tip.assignment)}'>{_hint_text(r, tip)}</li>")
    out.append("</ul></section>")
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
        f"<h2 id='side-by-side'>Side by side with run <code>{_e(r.compared.run)}</code></h2>",
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
    """Each node's detail: open when there are few, else one line each to open."""
    if not r.nodes:
        return []
    out = ["<h2 id='nodes'>Nodes: eviction signals against thresholds, and each eviction's ranking</h2>"]
    plotted = sum(1 for n in r.nodes if n.plotted and n.series)
    if len(r.nodes) > OPEN_NODES:
        out.append(
            f"<p class='msg'>{len(r.nodes)} nodes, those with the most evictions first; open one for its detail. "
            f"Charts are drawn for the {plotted} below (the first of each signal and node pool, then the most "
            "evicted); the others are behind the line after them.</p>"
        )
    by_node: dict[str, list[EvictionRow]] = {}
    for ev in r.evictions:
        by_node.setdefault(ev.node, []).append(ev)
    told = {(v.pod, v.time): v.text for v in r.verdicts if v.type == "PodEvicted"}
    few = len(r.nodes) <= OPEN_NODES
    shown = [n for n in r.nodes if few or (n.plotted and n.series)]
    rest = [n for n in r.nodes if n not in shown]
    for section in shown:
        out += _node(r, section, by_node.get(section.node, []), told, opened=few)
    if rest:
        # a fleet's hundreds of other nodes: one line to open, not a page of lines
        out.append(
            f"<details class='more-nodes' id='more-nodes'><summary>{len(rest)} more nodes, each with its evictions "
            "and their rankings (no chart drawn)</summary>"
        )
        for section in rest:
            out += _node(r, section, by_node.get(section.node, []), told, opened=False)
        out.append("</details>")
    return out


def _node(
    r: ReportData,
    section: NodeSection,
    evictions: list[EvictionRow],
    told: dict[tuple[str, str], str],
    *,
    opened: bool,
) -> list[str]:
    what = []
    if evictions:
        what.append(f"{len(evictions)} eviction{'s' if len(evictions) > 1 else ''}")
        what.append(", ".join(section.triggering))
        what.append(f"first at {_clock(evictions[0].time)} UTC")
    if section.pool != NO_POOL:
        what.append(f"pool {section.pool}")
    out = [
        f"<details class='node' id='node-{_e(section.node)}' data-node='{_e(section.node)}' "
        f"data-evictions='{len(evictions)}'{' open' if opened else ''}>"
        f"<summary><strong>{_e(section.node)}</strong> <span class='msg'>{_e(' · '.join(what))}</span></summary>"
    ]
    for chart in section.series:
        series = chart.series
        lines = ", ".join(t.written for t in series.thresholds) or "no threshold"
        trigger = any(s in section.triggering for s in chart.signals)
        title = " = ".join(chart.signals) + (" (one device)" if chart.same_device else "")
        out.append(
            f"<figure class='plot signal-plot' data-node='{_e(section.node)}' data-signal='{_e(series.signal)}'"
            f" data-signals='{_e(' '.join(chart.signals))}'{' data-trigger=1' if trigger else ''}><h4>{_e(title)} "
            + ("<span class='trigger'>triggered evictions</span> " if trigger else "")
            + f"<span class='msg'>({_e(lines)})</span></h4>"
        )
        out.append(
            signal_chart(
                series=series, bands=section.bands, markers=section.markers, start=r.start_at, duration=r.duration
            )
        )
        out.append("</figure>")
    if not section.plotted and evictions:
        out.append(
            "<p class='msg'>Not drawn (see above which nodes are). "
            f"<code>ledgerlet explain {_e(evictions[0].pod)}</code> shows the signal against its thresholds over "
            "the minutes before.</p>"
        )
    for ev in evictions:
        out += _eviction(ev, told.get((ev.pod, ev.time), ""))
    out.append("</details>")
    return out


def _eviction(ev: EvictionRow, story: str) -> list[str]:
    out = [
        f"<h4 id='evict-{_e(ev.pod)}'>{_e(ev.pod)} <span class='msg'>evicted from {_e(ev.node)} at "
        f"{_e(_clock(ev.time))} UTC (+{fmt_offset(ev.t)})</span></h4>"
        + (f"<p class='story'>{_e(story)}</p>" if story else "")
        + f"<p>{_e(ev.threshold)} met: observed {_e(ev.observed)}; grace period {_e(ev.grace)}.<br>"
        f"<span class='msg'>{_e(ev.message)}</span></p>",
        "<table class='ranking'><tr><th>#</th><th>pod</th><th>exceeds request</th><th>priority</th>"
        "<th>usage</th><th>notes</th></tr>",
    ]
    shown = [row for row in ev.ranking if row["position"] <= RANKING_ROWS or row.get("this")]
    for row in shown:
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
    if len(ev.ranking) > len(shown):
        out.append(f"<p class='msg'>... and {len(ev.ranking) - len(shown)} more pods ranked below.</p>")
    return out


def _preemptions(r: ReportData) -> list[str]:
    if not r.preemptions:
        return []
    out = [
        "<h2 id='preemptions'>Preemptions</h2><table class='preemptions'><tr><th>time (UTC)</th><th>preemptor</th>"
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
    out = ["<h2 id='shutdowns'>Node shutdowns</h2>"]
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
