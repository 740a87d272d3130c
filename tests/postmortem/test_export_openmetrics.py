"""``ledgerlet export --openmetrics``: the fluentd incident's signals, thresholds and
decisions, read back three ways: prometheus_client's OpenMetrics parser; Prometheus'
own backfill (``promtool tsdb create-blocks-from openmetrics``, Debian's ``prometheus``
package); and every query of the Grafana dashboard (deploy/grafana/) run by a real
Prometheus server on those blocks, its answers checked against the decision log."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ledgerlet_services.app.cli import main
from ledgerlet_services.audit.export_openmetrics import FAMILIES
from tests.postmortem.conftest import RUN, record, sqlite_dsn

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "ledgerlet-incident.json"
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
INSTALL = "promtool and prometheus are needed: Debian's prometheus package (make test installs it)"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("export")
    dsn = sqlite_dsn(tmp)
    asyncio.run(record(dsn))
    log = tmp / "decisions.jsonl"
    assert main(["replay", "--store", dsn, "--decisions", str(log)]) == 0
    out = tmp / "incident.om"
    assert main(["export", "--openmetrics", "--store", dsn, "--out", str(out)]) == 0
    return {
        "tmp": tmp,
        "text": out.read_text(),
        "file": out,
        "log": [json.loads(x) for x in log.read_text().splitlines()],
    }


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_text_is_openmetrics_with_every_family(exported: dict[str, Any]) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(exported["text"])}
    # (the parser names a counter family without its _total)
    assert set(families) == {name for name, *_ in FAMILIES}
    evicted = [r for r in exported["log"] if r["type"] == "PodEvicted"]
    (eviction,) = evicted
    at = _ts(eviction["time"])
    seen = [
        s
        for s in families["ledgerlet_signal_available_bytes"].samples
        if s.labels == {"run": RUN, "node": "k8s-m1", "signal": "imagefs.available"} and float(s.timestamp) == at
    ]
    assert [s.value for s in seen] == [eviction["data"]["observed"]]  # what the kubelet saw, when it decided
    levels = {
        s.labels["threshold"]: s.value
        for s in families["ledgerlet_eviction_threshold_bytes"].samples
        if s.labels["signal"] == "imagefs.available" and float(s.timestamp) == at
    }
    assert levels == {"imagefs.available<15%": eviction["data"]["thresholdQuantity"]}
    counts = [s for s in families["ledgerlet_pod_evictions"].samples if s.name == "ledgerlet_pod_evictions_total"]
    assert max(s.value for s in counts) == 1 and min(s.value for s in counts) == 0
    steps = sorted({float(s.timestamp) for s in counts})
    assert all(b - a == 15 for a, b in itertools.pairwise(steps))  # a scrape's grid
    pressure = [
        (float(s.timestamp), s.value)
        for s in families["ledgerlet_node_condition"].samples
        if s.labels["condition"] == "DiskPressure"
    ]
    changed = [
        r for r in exported["log"] if r["type"] == "NodeConditionChanged" and r["data"]["condition"] == "DiskPressure"
    ]
    first_on = next(t for t, v in pressure if v == 1)
    assert first_on == _ts(next(r["time"] for r in changed if r["data"]["status"] == "True"))


@pytest.fixture(scope="module")
def prometheus(exported: dict[str, Any]) -> Iterator[str]:
    """A Prometheus server on the backfilled blocks (loopback, its own port)."""
    if PROMTOOL is None or PROMETHEUS is None:
        pytest.fail(INSTALL)
    data = exported["tmp"] / "tsdb"
    done = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(exported["file"]), str(data)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    config = exported["tmp"] / "prometheus.yml"
    config.write_text("global: {}\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",  # (the blocks' hours are in the past)
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, "prometheus exited"
            assert time.monotonic() < deadline, "prometheus not ready in 30 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _query(url: str, expr: str, at: float) -> list[dict[str, Any]]:
    q = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return list(body["data"]["result"])


@pytest.mark.slow
def test_promtool_backfills_it_and_every_dashboard_query_answers(exported: dict[str, Any], prometheus: str) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    start, end = (_ts(dashboard["time"][k]) for k in ("from", "to"))
    (eviction,) = [r for r in exported["log"] if r["type"] == "PodEvicted"]
    at = _ts(eviction["time"])
    assert start < at < end  # the dashboard opens on this incident

    def expand(expr: str) -> str:
        return (
            expr.replace("$run", RUN)
            .replace("$node", "k8s-m1")
            .replace("$signal", ".*")
            .replace("$__range", f"{int(end - start)}s")
        )

    answers: dict[str, list[dict[str, Any]]] = {}
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"ledgerlet_[a-z_]+", target["expr"]):
                assert name.removesuffix("_total") in {f for f, *_ in FAMILIES}, name
            result = _query(prometheus, expand(target["expr"]), end if target.get("instant") else at + 30)
            assert result, f"{panel['title']}: {target['expr']} answered nothing"
            answers[panel["title"]] = answers.get(panel["title"], []) + result
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            match = re.fullmatch(r"label_values\((.*), (\w+)\)", var["query"]["query"])
            assert match is not None
            with urllib.request.urlopen(
                f"{prometheus}/api/v1/series?"
                + urllib.parse.urlencode({"match[]": expand(match.group(1)), "start": start, "end": end}),
                timeout=10,
            ) as r:
                series = json.loads(r.read())["data"]
            assert {s[match.group(2)] for s in series}, var["name"]

    assert float(answers["Pods evicted"][0]["value"][1]) == 1
    assert float(answers["Nodes that evicted"][0]["value"][1]) == 1
    (per_minute,) = answers["Evictions by signal (per minute)"]
    assert per_minute["metric"] == {"signal": "imagefs.available"} and float(per_minute["value"][1]) > 0
    seen = {
        r["metric"]["signal"]: float(r["value"][1])
        for r in answers["Signal against its thresholds: $node"]
        if r["metric"]["__name__"] == "ledgerlet_signal_available_bytes"
    }
    # 30 s after the eviction the kubelet's last look is 09:05:30's, not the eviction's
    assert seen["imagefs.available"] > 0 and set(seen) >= {"imagefs.available", "memory.available"}
    on = {
        r["metric"]["condition"]: float(r["value"][1])
        for r in answers["Node conditions: $node"]
        if "condition" in r["metric"]
    }
    assert on["DiskPressure"] == 1  # DiskPressure held on past the eviction (the transition period)
