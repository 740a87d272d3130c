"""``ledgerlet report``: a self-contained HTML post-mortem, opened in headless Chromium
(Debian's package, driven by Playwright) to check that the plots and tables render."""

from __future__ import annotations

import asyncio
import itertools
import shutil
from pathlib import Path

import pytest

from ledgerlet_services.app.cli import main
from tests.postmortem.conftest import EVICTED, record, sqlite_dsn

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_report_renders_plots_and_tables(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("Chromium is needed (make test installs Debian's chromium package)")
    from playwright.sync_api import sync_playwright

    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn))
    out = tmp_path / "incident.html"
    assert main(["report", "--store", dsn, "--out", str(out)]) == 0
    html = out.read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html  # self-contained

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(out.as_uri())
        first = page.evaluate(
            """() => ({heading: document.querySelector('h2').innerText,
                       verdict: document.querySelector('.answer .verdict').innerText,
                       answerTop: document.querySelector('.answer').getBoundingClientRect().top})"""
        )
        plots = page.evaluate(
            """() => Array.from(document.querySelectorAll('figure.signal-plot')).map(fig => {
                const svg = fig.querySelector('svg');
                const box = id => { const g = svg.querySelector('[id="' + id + '"]');
                                    if (!g) return null; const b = g.getBoundingClientRect();
                                    return {x: b.x, y: b.y, w: b.width, h: b.height}; };
                return {signal: fig.dataset.signal, trigger: fig.dataset.trigger === '1',
                        series: box('series'), threshold: box('threshold-0'),
                        bands: svg.querySelectorAll('[id^="band-"]').length,
                        evicted: box('mark-PodEvicted'), reclaimed: box('mark-NodeReclaimed'),
                        gc: box('mark-ImageGarbageCollected'),
                        ticks: Array.from(svg.querySelectorAll('text')).map(t => t.textContent),
                        shown: svg.getBoundingClientRect().width};
            })"""
        )
        ranking = page.evaluate(
            """() => Array.from(document.querySelectorAll('table.ranking tr')).map(
                   r => Array.from(r.cells).map(c => c.innerText))"""
        )
        highlighted = page.evaluate("() => document.querySelector('table.ranking tr.this td:nth-child(2)').innerText")
        png = page.screenshot(full_page=True)
        (tmp_path / "incident.png").write_bytes(png)
        browser.close()
    assert not errors
    # the answer first: which pod, when (clock time), why
    assert first["heading"] == "What happened" and first["answerTop"] < 300
    assert first["verdict"].startswith("PodEvicted") and "09:05:00 UTC" in first["verdict"]
    assert f"{EVICTED} was evicted from k8s-m1" in first["verdict"] and "imagefs.available<15%" in first["verdict"]
    # the signal that triggered the eviction is the first chart, and says so
    assert plots[0]["signal"] == "imagefs.available" and plots[0]["trigger"]
    assert not any(p["trigger"] for p in plots[1:])
    imagefs = plots[0]
    assert imagefs["series"]["w"] > 700 and imagefs["series"]["h"] > 50 and imagefs["shown"] > 900
    assert imagefs["threshold"]["w"] > 700
    assert imagefs["bands"] >= 1  # DiskPressure
    assert {"09:00", "09:05", "09:10"} <= set(imagefs["ticks"])  # clock time, not offsets
    # the eviction, the reclaim and the image GC at 09:05 each keep a mark of their own
    marks = [imagefs[k] for k in ("evicted", "reclaimed", "gc")]
    assert all(m is not None and m["w"] > 0 for m in marks)
    for a, b in itertools.pairwise(marks):
        assert a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"], "two marks overlap"
    assert len(ranking) == 1 + 8 and ranking[1][1] == EVICTED
    assert highlighted == EVICTED
    assert len(png) > 50_000


def test_preemptions_and_shutdowns_have_sections_of_their_own(tmp_path: Path) -> None:
    from html.parser import HTMLParser

    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn, "preemption-with-pdb.yaml", run="p"))
    asyncio.run(record(dsn, "graceful-shutdown-by-priority.yaml", run="s"))

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.chunks: list[str] = []

        def handle_data(self, data: str) -> None:
            self.chunks.append(data)

    texts: dict[str, str] = {}
    for run in ("p", "s"):
        out = tmp_path / f"{run}.html"
        assert main(["report", "--store", dsn, "--run", run, "--out", str(out)]) == 0
        reader = Text()
        reader.feed(out.read_text())
        texts[run] = " ".join(" ".join(reader.chunks).split())
    p, s = texts["p"], texts["s"]
    assert "What happened PodPreempted 00:00:10 UTC default/batch-1 was preempted on n2" in p
    assert "Preemptions time (UTC) preemptor node victims why this node" in p
    assert "00:00:10 default/web-1 n2 default/batch-1, default/batch-2, default/batch-3 fewest PDB violations" in p
    assert "Nodes: eviction signals" not in p  # no node was observed: no empty charts
    assert "Node shutdowns node-a at 00:00:10 UTC, graceful" in s
    assert "0 60 s +10s +1m10s default/d 1000 120 s +1m10s +3m10s default/c, default/e" in s
    assert "The graceful shutdown killed it in the group of priority 0 (60 s) at 10s." in s
