"""``ledgerlet replay --verify --quick``: no observations of the nodes on which a run decided
nothing, every stored decision still re-derived from the stored inputs.

Held to the full verification on every golden case and on a fleet with quiet nodes (on
both stores): the same decisions, no mismatch, and only the quiet nodes' observations left
out. Tampering with a decision is caught; moving one onto a quiet node makes the node busy
again, so that is caught too."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from ledgerlet_core.postmortem.compare import quiet_nodes
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app import replay as replay_module
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import Replay, replay_run
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.schema import events
from ledgerlet_store.store import open_store
from tests.golden.cases import ROOT, RUN_ID, cases
from tests.golden.replay_case import decision_log
from tests.support.recordings import pg_copy, pg_template, record_once


async def _both_ways(dsn: str) -> tuple[Replay, Replay]:
    """The run verified in full and quickly, held to each other."""
    async with await open_store(dsn) as store:
        full = await replay_run(store, RUN_ID)
        quick = await replay_run(store, RUN_ID, quick=True)
        by_node = await store.types_by_node(RUN_ID)
    assert full.mismatches() == [], [m.describe() for m in full.mismatches()[:3]]
    assert quick.mismatches() == [], [m.describe() for m in quick.mismatches()[:3]]
    assert {i: bytes(e.data) for i, e in quick.derived.items()} == {i: bytes(e.data) for i, e in full.derived.items()}
    quiet = quiet_nodes(by_node)
    observations = sum(by_node[node]["NodeObserved"] for node in quiet)
    assert (quick.quiet_count, quick.left_out) == (len(quiet), observations)
    assert quick.compared == full.compared - observations  # all else is compared, as in full
    assert quick.stored_events == full.stored_events
    return full, quick


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cases()))
async def test_quick_verification_agrees_with_the_full_one(name: str, tmp_path: Path) -> None:
    await decision_log(name, tmp_path)
    _, quick = await _both_ways(f"sqlite:///{tmp_path / f'{name}.db'}")
    if name == "bench-eviction-fleet":  # (most golden cases decide something on every node)
        assert quick.quiet_count > 0


def _fleet(**kubelet: Any) -> str:
    """bench/fleet.py's fleet at 20 nodes of 10 pods for 10 minutes: four nodes cross a
    threshold (not all of them evict), the others stay quiet."""
    spec = importlib.util.spec_from_file_location("bench_fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = module.fleet(20, 10, duration="10m")
    doc["spec"]["kubeletConfig"].update(kubelet)
    return str(yaml.safe_dump(doc))


async def _record_fleet(dsn: str, **kubelet: Any) -> None:
    async with await open_store(dsn) as store:
        await run_embedded(load_scenario(_fleet(**kubelet), "fleet.yaml"), store, run=RUN_ID)


@pytest.fixture(scope="session")
def pg_fleet(pg_server: str) -> Iterator[str]:
    """A PostgreSQL database holding the fleet's run, which this test process's tests copy."""
    with pg_template(_record_fleet) as dsn:
        yield dsn


@pytest.fixture
def fleet(store_dsn: str, request: pytest.FixtureRequest) -> str:
    """A store (SQLite, then PostgreSQL) with the fleet recorded as run ``RUN_ID``: a copy
    of this process's recording (``tests/support/recordings.py``)."""
    if store_dsn.startswith("sqlite"):
        asyncio.run(record_once(store_dsn, "fleet", _record_fleet))
    else:
        pg_copy(store_dsn, request.getfixturevalue("pg_fleet"))
    return store_dsn


@pytest.mark.slow
async def test_quick_verification_of_a_fleet_leaves_quiet_nodes_out(fleet: str) -> None:
    _, quick = await _both_ways(fleet)
    deciding = {e.node for e in quick.derived.values() if e.node}
    assert quick.quiet_count == 20 - len(deciding) >= 16
    assert any(e.type == "PodEvicted" for e in quick.derived.values())
    assert quick.left_out > quick.compared  # most of what the run stored is the quiet nodes' observations


async def test_with_memcg_notification(tmp_path: Path) -> None:
    """The kernel's crossings ask for passes of their own: a quiet node's still come."""
    dsn = f"sqlite:///{tmp_path / 'fleet.db'}"
    await _record_fleet(dsn, kernelMemcgNotification=True)
    _, quick = await _both_ways(dsn)
    assert quick.quiet_count >= 16


@pytest.mark.slow
async def test_too_many_busy_nodes_to_name_are_filtered_as_read(fleet: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past what a query may name, the quiet nodes' observations are read and dropped."""
    async with await open_store(fleet) as store:
        named = await replay_run(store, RUN_ID, quick=True)
        monkeypatch.setattr(replay_module, "_NAMED_NODES_MAX", 0)
        read = await replay_run(store, RUN_ID, quick=True)
    assert read.mismatches() == named.mismatches() == []
    assert (read.compared, read.left_out, read.stored_events) == (named.compared, named.left_out, named.stored_events)


def test_quiet_nodes_are_those_with_only_observations_and_their_own_status() -> None:
    by_node = {
        "a": {"NodeObserved": 10, "NodeStatusUpdated": 1},
        "b": {"NodeObserved": 10, "PodEvicted": 1},
        "c": {"NodeStatusUpdated": 1},  # never observed: nothing to leave out
        "d": {"NodeObserved": 3, "PodStarted": 1},  # an internal event the kubelet made
    }
    assert quiet_nodes(by_node) == {"a"}


async def test_a_tampered_decision_is_caught_quickly(fleet: str) -> None:
    async with await open_store(fleet) as store:
        evicted = (await store.read_by_type(["PodEvicted"], run=RUN_ID))[0].envelope
        data = json.loads(bytes(evicted.data))
        data["gracePeriodSeconds"] = 30
        async with store.engine.begin() as conn:
            await conn.execute(sa.update(events).where(events.c.event_id == evicted.id).values(data=json.dumps(data)))
        replay = await replay_run(store, RUN_ID, quick=True)
    assert replay.quiet_count >= 16
    assert [(m.kind, m.id, m.fields) for m in replay.mismatches()] == [("changed", evicted.id, ("data",))]


async def test_a_decision_moved_onto_a_quiet_node_is_caught(fleet: str) -> None:
    """The node is no longer quiet: it is observed again, and the decision is not its."""
    async with await open_store(fleet) as store:
        quiet = sorted(quiet_nodes(await store.types_by_node(RUN_ID)))
        evicted = (await store.read_by_type(["PodEvicted"], run=RUN_ID))[0].envelope
        async with store.engine.begin() as conn:
            await conn.execute(sa.update(events).where(events.c.event_id == evicted.id).values(node=quiet[0]))
        replay = await replay_run(store, RUN_ID, quick=True)
    assert replay.quiet_count == len(quiet) - 1
    assert [(m.kind, m.id, m.fields) for m in replay.mismatches()] == [("changed", evicted.id, ("node",))]


async def test_a_quiet_nodes_status_is_still_compared(fleet: str) -> None:
    """Without its causes (they name an observation not made again), but compared."""
    async with await open_store(fleet) as store:
        quiet = sorted(quiet_nodes(await store.types_by_node(RUN_ID)))
        status = next(
            e.envelope
            for e in await store.read_run(RUN_ID)
            if e.envelope.type == "NodeStatusUpdated" and e.envelope.node == quiet[0]
        )
        data = json.loads(bytes(status.data))
        data["allocatable"]["memory"] = "1Mi"
        async with store.engine.begin() as conn:
            await conn.execute(sa.update(events).where(events.c.event_id == status.id).values(data=json.dumps(data)))
        replay = await replay_run(store, RUN_ID, quick=True)
    assert [(m.kind, m.id, m.fields) for m in replay.mismatches()] == [("changed", status.id, ("data",))]


def test_cli(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--store", fleet, "--verify", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "--quick:" in out and "nodes decided nothing" in out and "verified:" in out
