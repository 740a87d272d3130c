"""Two runs started together on one new SQLite store both succeed: the second waits for
the first one's migration instead of failing with "database is locked"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.slow


def test_two_first_runs_on_one_new_sqlite_store_both_succeed(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    runs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(EXAMPLES / "memory-pressure.yaml")),
                *("--decisions", str(tmp_path / f"{i}.jsonl"), "--store", store, "--quiet", "--run-id", f"run-{i}"),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in runs]
    assert [p.returncode for p in runs] == [0, 0, 0], outputs
    logs = [(tmp_path / f"{i}.jsonl").read_text() for i in range(3)]
    assert all(log.count("\n") == 10 for log in logs)  # the example's ten decisions, each time
