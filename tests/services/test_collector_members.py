"""The stats collector split between members (loop/membership.py), on the embedded run:
every golden case gives its golden log byte for byte with three members, and the members
share the observations out, each made once."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.replay import DecisionsSink
from ledgerlet_services.loops.scheduler import Scheduler
from ledgerlet_services.runtime.catalog import loop_groups, parse_members
from ledgerlet_services.runtime.embedded import FeedOutcome, _seeded_feed, run_feed
from ledgerlet_services.runtime.shell import ServiceRunner
from tests.golden.cases import LOGS, ROOT, RUN_ID, cases
from tests.support.every_event import compared, every_event


async def _run(text: str, source: str, members: int) -> tuple[bytes, FeedOutcome]:
    scenario = load_scenario(text, source)
    sink = DecisionsSink()
    decoding = SharedDecoding()
    outcome = await run_feed(
        _seeded_feed(scenario, RUN_ID, decoding),
        sink,
        run=RUN_ID,
        duration=scenario.duration,
        members={"stats-collector": members},
        decoding=decoding,
    )
    decisions = sorted(sink.decisions.values(), key=Envelope.sort_key)
    return encode_records(to_records(decisions, scenario.start)), outcome


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cases()))
async def test_three_members_give_the_golden_log(name: str) -> None:
    log, _ = await _run(*cases()[name](), members=3)
    assert log == (LOGS / f"{name}.jsonl").read_bytes()


def _fleet() -> tuple[str, str]:
    spec = importlib.util.spec_from_file_location("bench_fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc: dict[str, Any] = module.fleet(40, 10, duration="5m")
    return json.dumps(doc), "fleet.json"


@pytest.mark.slow
async def test_members_share_the_observations_out_each_made_once() -> None:
    one_log, one = await _run(*_fleet(), members=1)
    for n in (2, 4):
        log, split = await _run(*_fleet(), members=n)
        assert log == one_log
        shares = {g: k for g, k in split.service_out.items() if g.startswith("stats-collector.member-")}
        assert len(shares) == n and all(k > 0 for k in shares.values()), shares
        assert sum(shares.values()) == one.service_out["stats-collector"]  # nothing twice, nothing lost


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cases()))
async def test_three_members_emit_every_event_one_collector_does(name: str) -> None:
    """Not only the decisions: every observation, timer and tick, by id, data, causes, order."""
    one = await every_event(*cases()[name]())
    split = await every_event(*cases()[name](), members={"stats-collector": 3})
    assert {i: compared(e) for i, e in split.items()} == {i: compared(e) for i, e in one.items()}


def test_membership() -> None:
    assert Membership.parse("2/3") == Membership(1, 3)
    assert Membership.parse("1/1") is None  # the whole work: no split, the unsplit group
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(ValueError, match="expected"):
            Membership.parse(bad)
    members = [Membership(i, 3) for i in range(3)]
    nodes = [f"node-{i:04d}" for i in range(300)]
    for node in nodes:
        assert sum(m.owns(node) for m in members) == 1  # every node has one owner
        assert [m.keeps(node) for m in members] == [m.owns(node) for m in members]
    assert [m.keeps(None) for m in members] == [True, False, False]  # what concerns no node: member 1
    assert all(sum(m.owns(n) for n in nodes) > 60 for m in members)  # shared out, roughly evenly
    assert Membership(0, 3).suffix == "member-1-of-3"


def test_only_the_per_node_loops_can_be_split() -> None:
    assert parse_members("stats-collector=3") == {"stats-collector": 3}
    assert list(loop_groups({"stats-collector": 2}))[:2] == [
        "stats-collector.member-1-of-2",
        "stats-collector.member-2-of-2",
    ]
    for bad in (
        "scheduler=2",
        "stats-collector",
        "stats-collector=0",
        "nope=2",
        "stats-collector=2,stats-collector=3",
    ):
        with pytest.raises(ValueError, match="--members"):
            parse_members(bad)
    with pytest.raises(ValueError, match="cannot be split"):
        ServiceRunner(MemoryBus(), Scheduler, member=Membership(0, 2))


def test_health_reads_the_members_heartbeat_and_others_ignore_the_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``LEDGERLET_MEMBER`` set for a container: the collector's health check reads its
    member's heartbeat; a service that cannot be split ignores the variable."""
    from ledgerlet_services.app.cli import main
    from ledgerlet_services.runtime import health

    monkeypatch.setattr(health, "HEALTH_DIR", tmp_path)
    monkeypatch.setenv("LEDGERLET_MEMBER", "2/3")
    assert main(["health", "stats-collector"]) == 1
    (tmp_path / "ledgerlet-stats-collector.member-2-of-3.alive").touch()
    assert main(["health", "stats-collector"]) == 0
    assert main(["health", "scheduler"]) == 1
    (tmp_path / "ledgerlet-scheduler.alive").touch()
    assert main(["health", "scheduler"]) == 0


@pytest.mark.parametrize("members", ["stats-collector=2", ""])
def test_a_drive_left_waiting_asks_after_the_members_when_there_are_some(
    members: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ledgerlet_bus.api import BusTimeout
    from ledgerlet_services.app import cli
    from ledgerlet_services.runtime import distributed

    async def stalled(*args: object, **kwargs: object) -> None:
        raise BusTimeout("bus not idle: nothing moved for 1s: stats-collector.member-2-of-2 has 3 records to handle")

    monkeypatch.setattr(distributed, "drive", stalled)  # (the command line imports it when it drives)
    argv = ["drive", str(ROOT / "examples" / "memory-pressure.yaml"), "--decisions", str(tmp_path / "d.jsonl")]
    argv += ["--bus", "kafka://127.0.0.1:1", "--store", "postgresql://nobody@127.0.0.1:1/none", "--quiet"]
    assert cli.main([*argv, "--members", members]) == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "nothing moved" in said
    assert ("as --members says?" in said) == bool(members)
