"""The `ledgerlet` command as users run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow


def ledgerlet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledgerlet_services.app.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_writes_the_decision_log_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "out" / "decisions.jsonl"
    res = ledgerlet(
        "run",
        str(EXAMPLES / "memory-pressure.yaml"),
        "--decisions",
        str(out),
        "--store",
        f"sqlite:///{tmp_path / 'store.db'}",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 10 and json.loads(lines[1])["type"] == "PodEvicted"
    assert "Decisions by type" in res.stdout and "Pods evicted, and why" in res.stdout
    assert (tmp_path / "store.db").exists()


def test_bad_input_exits_2_names_file_object_field_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("memory: 2Gi}", "memory: 2Gx}"))
    out = tmp_path / "decisions.jsonl"
    res = ledgerlet("run", str(bad), "--decisions", str(out), "--store", f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path)
    assert res.returncode == 2
    assert (
        f"{bad}: objects[4] Pod default/db: spec.containers[0].resources.requests.memory: invalid quantity"
        in " ".join(res.stderr.split())
    )
    assert not res.stdout  # errors go to standard error: stdout holds only answers
    assert not out.exists() and not (tmp_path / "s.db").exists()


def test_missing_file_exits_2(tmp_path: Path) -> None:
    res = ledgerlet("run", str(tmp_path / "nope.yaml"), "--decisions", str(tmp_path / "o.jsonl"), cwd=tmp_path)
    assert res.returncode == 2 and "nope.yaml" in res.stderr


def test_version_names_the_package_and_the_scenario_format(tmp_path: Path) -> None:
    from importlib.metadata import version

    res = ledgerlet("--version", cwd=tmp_path)
    assert res.returncode == 0
    assert res.stdout.startswith(f"ledgerlet {version('ledgerlet')} (scenarios ledgerlet/v1; Python ")
