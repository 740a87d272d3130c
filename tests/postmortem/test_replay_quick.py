"""``ledgerlet replay --verify --quick``: no observations of the nodes on which a run decided
nothing, every stored decision still re-derived from the stored inputs.

Held to the full verification on every golden case: the same decisions, no mismatch,
and only the quiet nodes' observations and status updates left out. Tampering with a
decision is caught; moving one onto a quiet node makes the node busy again, so that is
caught too."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from ledgerlet_core.postmortem.compare import UNOBSERVED_TYPES, quiet_nodes
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import Replay, replay_run
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.schema import events
from ledgerlet_store.store import EventStore
from tests.golden.cases import ROOT, RUN_ID, cases
from tests.golden.replay_case import decision_log
from tests.postmortem.conftest import RUN

_QUIET_SEEN: dict[str, int] = {}


async def _both_ways(dsn: str) -> tuple[Replay, Replay]:
    """The run verified in full and quickly, held to each other."""
    async with await EventStore.open(dsn) as store:
        full = await replay_run(store, RUN_ID)
        quick = await replay_run(store, RUN_ID, quick=True)
        by_node = await store.types_by_node(RUN_ID)
    assert full.mismatches() == [], [m.describe() for m in full.mismatches()[:3]]
    assert quick.mismatches() == [], [m.describe() for m in quick.mismatches()[:3]]
    assert {i: bytes(e.data) for i, e in quick.derived.items()} == {i: bytes(e.data) for i, e in full.derived.items()}
    quiet = quiet_nodes(by_node)
    left_out = sum(n for node in quiet for t, n in by_node[node].items() if t in UNOBSERVED_TYPES)
    assert (quick.quiet_nodes, quick.left_out) == (len(quiet), left_out)
    assert quick.compared == full.compared - left_out  # all else is compared, as in full
    assert quick.stored_events == full.stored_events
    return full, quick


@pytest.mark.parametrize("name", sorted(cases()))
async def test_quick_verification_agrees_with_the_full_one(name: str, tmp_path: Path) -> None:
    await decision_log(name, tmp_path)
    _, quick = await _both_ways(f"sqlite:///{tmp_path / f'{name}.db'}")
    _QUIET_SEEN[name] = quick.quiet_nodes


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


@pytest.mark.parametrize("kubelet", [{}, {"kernelMemcgNotification": True}], ids=["plain", "memcg-notification"])
async def test_quick_verification_of_a_fleet_leaves_quiet_nodes_out(kubelet: dict[str, Any], tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 'fleet.db'}"
    async with await EventStore.open(dsn) as store:
        await run_embedded(load_scenario(_fleet(**kubelet), "fleet.yaml"), store, run=RUN_ID)
    _, quick = await _both_ways(dsn)
    deciding = {e.node for e in quick.derived.values() if e.node}
    assert quick.quiet_nodes == 20 - len(deciding) >= 16
    assert any(e.type == "PodEvicted" for e in quick.derived.values())
    assert quick.left_out > quick.compared  # most of what the run stored is the quiet nodes' observations


def test_some_golden_cases_have_quiet_nodes() -> None:
    """(runs after the cases above, in this file's order: the quick path was taken somewhere)"""
    if len(_QUIET_SEEN) < len(cases()):
        pytest.skip("run with the golden cases above")
    assert _QUIET_SEEN["bench-eviction-fleet"] > 0, _QUIET_SEEN


def test_quiet_nodes_are_those_with_only_observations_and_their_own_status() -> None:
    by_node = {
        "a": {"NodeObserved": 10, "NodeStatusUpdated": 1},
        "b": {"NodeObserved": 10, "PodEvicted": 1},
        "c": {"NodeStatusUpdated": 1},  # never observed: nothing to leave out
        "d": {"NodeObserved": 3, "PodStarted": 1},  # an internal event the kubelet made
    }
    assert quiet_nodes(by_node) == {"a"}


async def test_a_tampered_decision_is_caught_quickly(recorded: str) -> None:
    async with await EventStore.open(recorded) as store:
        evicted = (await store.read_by_type(["PodEvicted"], run=RUN))[0].envelope
        data = json.loads(bytes(evicted.data))
        data["gracePeriodSeconds"] = 30
        async with store.engine.begin() as conn:
            await conn.execute(sa.update(events).where(events.c.event_id == evicted.id).values(data=json.dumps(data)))
        mismatches = (await replay_run(store, RUN, quick=True)).mismatches()
    assert [(m.kind, m.id, m.fields) for m in mismatches] == [("changed", evicted.id, ("data",))]


async def test_a_decision_moved_onto_a_quiet_node_is_caught(tmp_path: Path) -> None:
    """The node is no longer quiet: it is observed again, and the decision is not its."""
    await decision_log("bench-eviction-fleet", tmp_path)
    dsn = f"sqlite:///{tmp_path / 'bench-eviction-fleet.db'}"
    async with await EventStore.open(dsn) as store:
        quiet = sorted(quiet_nodes(await store.types_by_node(RUN_ID)))
        assert quiet
        killed = (await store.read_by_type(["OOMKilled"], run=RUN_ID))[0].envelope
        async with store.engine.begin() as conn:
            await conn.execute(sa.update(events).where(events.c.event_id == killed.id).values(node=quiet[0]))
        replay = await replay_run(store, RUN_ID, quick=True)
    assert replay.quiet_nodes == len(quiet) - 1
    assert [(m.kind, m.id, m.fields) for m in replay.mismatches()] == [("changed", killed.id, ("node",))]


def test_cli(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--store", recorded, "--verify", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "--quick:" in out and "nodes decided nothing" in out and "verified:" in out
