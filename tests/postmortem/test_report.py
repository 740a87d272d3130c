"""``ledgerlet report``: a self-contained HTML post-mortem, opened in headless Chromium
(Debian's package, driven by Playwright) to check that the plots and tables render."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from ledgerlet_services.app.cli import main
from tests.postmortem.conftest import EVICTED, record, sqlite_dsn

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


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
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(out.as_uri())
        plots = page.evaluate(
            """() => Array.from(document.querySelectorAll('svg.signal-plot')).map(svg => {
                const s = svg.querySelector('path.series').getBBox();
                const t = svg.querySelector('path.threshold');
                return {signal: svg.dataset.signal, w: s.width, h: s.height,
                        threshold: t ? t.getBBox().width : 0,
                        bands: svg.querySelectorAll('rect.band').length,
                        markers: svg.querySelectorAll('line.marker').length,
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
    by_signal = {p["signal"]: p for p in plots}
    assert "imagefs.available" in by_signal and "memory.available" in by_signal
    imagefs = by_signal["imagefs.available"]
    assert imagefs["w"] > 600 and imagefs["h"] > 5 and imagefs["threshold"] > 600 and imagefs["shown"] > 600
    assert imagefs["bands"] >= 1  # the DiskPressure band
    assert imagefs["markers"] >= 2  # reclaim and the eviction
    assert len(ranking) == 1 + 8 and ranking[1][1] == EVICTED
    assert highlighted == EVICTED
    assert len(png) > 50_000
