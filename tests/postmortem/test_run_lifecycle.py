"""Runs have a lifecycle in the store: a run that was cut off (kill -9 of `ledgerlet run`
leaves a prefix of what its recorder stored) is visibly incomplete to every reader, is
never what `latest` means, and re-running it with the same run id completes it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from fastapi.testclient import TestClient

from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED
from ledgerlet_core.contracts.registry import DECISION
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import resolve_run
from ledgerlet_services.audit.http_api import create_app
from ledgerlet_services.audit.queries import Audit
from ledgerlet_services.runtime.embedded import record_outcome
from ledgerlet_store.runs import ABANDONED, ABANDONED_AFTER, COMPLETED, FAILED, RUNNING, run_states
from ledgerlet_store.store import open_store
from tests.postmortem.conftest import record

CUT = "cut-off"


async def _cut_off_copy(tmp_path: Path, dsn: str) -> list[tuple[str, bytes]]:
    """Record the fluentd run whole in a scratch store, then store the first half of what
    its recorder stored (without its end) under ``dsn``: the store a kill -9 leaves.
    Returns the whole run's decisions (id, data)."""
    scratch = f"sqlite:///{tmp_path / 'scratch.db'}"
    await record(scratch, run=CUT)
    async with await open_store(scratch) as s:
        stored = [e async for e in s.iter_run(CUT, members=False)]  # as the recorder stored them
    stored.sort(key=lambda e: e.position)  # the order the recorder stored them in
    whole = sorted((e.envelope.id, bytes(e.envelope.data)) for e in stored if e.envelope.kind == DECISION)
    prefix = [e.envelope for e in stored if e.envelope.type != "RunEnded"][: len(stored) // 2]
    async with await open_store(dsn) as s:
        await s.append_batch(prefix)
    return whole


async def _states_before_resuming(dsn: str) -> None:
    async with await open_store(dsn) as store:
        states = {s.run: s for s in await run_states(store)}
        later = {s.run: s for s in await run_states(store, now=datetime.now(UTC) + ABANDONED_AFTER * 2)}
        assert states["done"].status == COMPLETED and states["done"].completed
        assert states[CUT].status == RUNNING  # it stored something a moment ago
        assert later[CUT].status == ABANDONED and "nothing stored since" in later[CUT].reason
        # the newest run is the cut-off one, but `latest` is the newest completed run
        assert (await run_states(store))[0].run == CUT
        assert await resolve_run(store, "latest") == "done"
        assert await Audit(store).resolve("latest") == "done"
        listed = {r.run: r.status for r in await Audit(store).runs()}
        assert listed == {"done": COMPLETED, CUT: RUNNING}


async def _resumed(dsn: str) -> tuple[str, list[tuple[str, bytes]]]:
    await record(dsn, run=CUT)
    async with await open_store(dsn) as store:
        status = {s.run: s.status for s in await run_states(store)}[CUT]
        decisions = await store.read_run(CUT, kind=DECISION)
    return status, sorted((e.envelope.id, bytes(e.envelope.data)) for e in decisions)


@pytest.mark.slow
def test_a_cut_off_run_is_incomplete_everywhere_and_resuming_completes_it(
    store_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(record(store_dsn, "memory-pressure.yaml", run="done"))
    whole = asyncio.run(_cut_off_copy(tmp_path, store_dsn))
    asyncio.run(_states_before_resuming(store_dsn))

    assert main(["replay", "--verify", "--run", CUT, "--store", store_dsn]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"incomplete run: run {CUT} is incomplete (running)" in out and "mismatch" not in out
    assert main(["explain", "kube-system/fluentd-elasticsearch-wk8xc", "--run", CUT, "--store", store_dsn]) in (0, 1)
    assert f"run {CUT} is incomplete" in " ".join(capsys.readouterr().err.split())
    assert main(["report", "--run", CUT, "--store", store_dsn, "--out", str(tmp_path / "cut.html")]) == 0
    assert "Incomplete run.</strong> It is running" in (tmp_path / "cut.html").read_text()
    with TestClient(create_app(store_dsn)) as api:
        assert api.get(f"/v1/runs/{CUT}/decisions").headers["ledgerlet-run-status"] == RUNNING
        assert api.get("/v1/runs/latest/decisions").headers["ledgerlet-run-status"] == COMPLETED

    # re-running it under the same id stores what is missing, skips what is there, ends it
    status, resumed = asyncio.run(_resumed(store_dsn))
    assert status == COMPLETED and resumed == whole
    assert main(["replay", "--verify", "--run", CUT, "--store", store_dsn]) == 0


async def test_a_failed_run_says_why_and_a_completion_after_it_wins(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    await record(dsn, "memory-pressure.yaml", run="r")
    async with await open_store(dsn) as store:
        await record_outcome(store, "r", 0, RUN_FAILED, "eviction-manager stopped: boom")
        # a run that failed has its ScenarioStarted and its RunEnded(failed)
        started = next(e.envelope for e in await store.read_run("r") if e.envelope.type == "ScenarioStarted")
        await store.append_batch([msgspec.structs.replace(started, run="f", id=f"{started.id}-f")])
        await record_outcome(store, "f", 0, RUN_FAILED, "eviction-manager stopped: boom")
        states = {s.run: s for s in await run_states(store)}
    assert states["r"].status == COMPLETED  # failed after completing: the completion stands
    assert states["f"].status == FAILED and states["f"].reason == "eviction-manager stopped: boom"
    assert not states["f"].completed
    assert (RUN_COMPLETED, RUN_FAILED) == (COMPLETED, FAILED)  # the store reads what the runtime writes


def test_runs_lists_every_run_with_its_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    asyncio.run(record(dsn, "memory-pressure.yaml", run="done"))
    asyncio.run(_cut_off_copy(tmp_path, dsn))
    assert main(["runs", "--store", dsn]) == 0
    table = capsys.readouterr().out
    assert "done" in table and "completed" in table and CUT in table and "running" in table
    assert main(["runs", "--store", dsn, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run"], r["status"]) for r in rows] == [(CUT, RUNNING), ("done", COMPLETED)]
