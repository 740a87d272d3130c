"""Runs are named as git and docker name objects: a full id, a prefix that names one run
only, or ``latest`` (the newest completed run); the CLI and the audit API agree."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ledgerlet_services.app.cli import main
from ledgerlet_services.audit.http_api import create_app
from ledgerlet_store.runs import COMPLETED, FAILED, RUNNING, RunState, UnknownRun, pick_run
from tests.postmortem.conftest import record

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def _states(*runs: tuple[str, str]) -> list[RunState]:
    """Newest first, as the store lists them."""
    return [RunState(run, T0 - timedelta(minutes=i), status) for i, (run, status) in enumerate(runs)]


def test_a_prefix_naming_one_run_is_that_run() -> None:
    states = _states(("9f2c41aa", RUNNING), ("9f07bb10", COMPLETED), ("3a51e0c2", COMPLETED))
    assert pick_run(states, "9f2").run == "9f2c41aa"
    assert pick_run(states, "3").run == "3a51e0c2"
    assert pick_run(states, "9f07bb10").run == "9f07bb10"
    assert pick_run(states, None).run == pick_run(states, "latest").run == "9f07bb10"  # not the running one


def test_a_full_id_wins_over_longer_ids_it_starts() -> None:
    states = _states(("abc", COMPLETED), ("abcd", COMPLETED))
    assert pick_run(states, "abc").run == "abc"


@pytest.mark.parametrize(
    ("states", "asked", "said"),
    [
        (
            _states(("9f2c", COMPLETED), ("9f07", COMPLETED)),
            "9f",
            "'9f' is the start of 2 runs (9f2c, 9f07): give more",
        ),
        (_states(("9f2c", COMPLETED)), "b", "no run 'b' (newest: 9f2c)"),
        (_states(("9f2c", FAILED)), "latest", "the store holds no completed run (newest: 9f2c, failed)"),
        ([], "9f", "the store holds no runs"),
    ],
)
def test_no_run_or_several_say_so(states: list[RunState], asked: str, said: str) -> None:
    with pytest.raises(UnknownRun, match="^" + re.escape(said)):
        pick_run(states, asked)


def test_cli_and_api_take_a_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    asyncio.run(record(dsn, run="7c0e55d2a4f1"))
    asyncio.run(record(dsn, "memory-pressure.yaml", run="7c91b0aa0e3d"))
    assert main(["explain", "kube-system/fluentd-elasticsearch-wk8xc", "--run", "7c0", "--store", dsn]) == 0
    assert "fluentd-elasticsearch-wk8xc" in capsys.readouterr().out
    assert main(["explain", "kube-system/fluentd-elasticsearch-wk8xc", "--run", "7c", "--store", dsn]) == 2
    assert "'7c' is the start of 2 runs" in capsys.readouterr().err
    with TestClient(create_app(dsn)) as api:
        answer = api.get("/v1/runs/7c0/decisions", params={"type": "PodEvicted"})
        assert answer.status_code == 200
        assert {d["pod"] for d in answer.json()["items"]} == {"kube-system/fluentd-elasticsearch-wk8xc"}
        ambiguous = api.get("/v1/runs/7c/decisions")
        assert ambiguous.status_code == 404 and "give more of it" in ambiguous.json()["detail"]
