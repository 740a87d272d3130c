"""The run registry (ledgerlet_store/runs.py) on SQLite and PostgreSQL (byte order and ICU's):
the runs a store holds, newest first, and where each is in its lifecycle."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED, RunEnded
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_store.runs import (
    ABANDONED,
    ABANDONED_AFTER,
    COMPLETED,
    FAILED,
    RUNNING,
    UnknownRun,
    pick_run,
    run_states,
    runs,
)
from ledgerlet_store.sql_store import SqlEventStore
from tests.store.conftest import ev


def _started(run: str) -> list:  # type: ignore[type-arg]
    return [
        make_envelope(
            inp.ScenarioStarted(name=run, start="2026-01-01T00:00:00Z", duration=600),
            run=run,
            t=0,
            order=[0, 0],
            stream="run",
        )
    ]


def _ended(run: str, outcome: str, reason: str = "", at: int = 0) -> list:  # type: ignore[type-arg]
    place = order.RUN_COMPLETED_AT if outcome == RUN_COMPLETED else order.RUN_FAILED_AT
    return [
        make_envelope(
            RunEnded(outcome=outcome, reason=reason), run=run, t=600 + at, order=[order.END, place], stream="run"
        )
    ]


async def test_runs_come_newest_first_each_with_its_state(collated_store: SqlEventStore) -> None:
    store = collated_store
    for run in ("done", "broke", "resumed", "cut"):
        await store.append_batch(_started(run))
    await store.append_batch(_ended("done", RUN_COMPLETED))
    await store.append_batch(_ended("broke", RUN_FAILED, "a loop failed"))
    await store.append_batch(_ended("resumed", RUN_FAILED, "interrupted"))
    await store.append_batch(_ended("resumed", RUN_COMPLETED, at=1))  # run again to the end: completed wins
    await store.append_batch([ev(1, run="cut")])
    await store.append_batch([ev(2, run="no-start")])  # (no ScenarioStarted: not a run)

    assert [r for r, _ in await runs(store)] == ["cut", "resumed", "broke", "done"]
    states = {s.run: s for s in await run_states(store)}
    assert list(states) == ["cut", "resumed", "broke", "done"]
    assert (states["done"].status, states["done"].completed) == (COMPLETED, True)
    assert (states["broke"].status, states["broke"].reason) == (FAILED, "a loop failed")
    assert states["resumed"].status == COMPLETED
    assert states["cut"].status == RUNNING  # it stored something a moment ago
    assert all(s.started_at.tzinfo is not None for s in states.values())
    later = {s.run: s for s in await run_states(store, now=datetime.now(UTC) + ABANDONED_AFTER * 2)}
    assert later["cut"].status == ABANDONED and later["cut"].reason.startswith("nothing stored since ")
    assert later["done"].status == COMPLETED  # (an ended run is never abandoned)
    assert pick_run(list(later.values()), None).run == "resumed"  # latest: the newest completed run
    assert pick_run(list(later.values()), "bro").run == "broke"
    with pytest.raises(UnknownRun, match="no run 'no-such-run'"):
        pick_run(list(later.values()), "no-such-run")


async def test_an_empty_store_holds_no_runs(collated_store: SqlEventStore) -> None:
    assert await runs(collated_store) == [] and await run_states(collated_store) == []
