"""The eviction manager split between members, on the embedded run.

A run ordered by node (``ScenarioStarted.orderScheme``, contracts/order.py) numbers the
eviction manager's events per node, so each member can be the kubelet of its own nodes
only. Proved here on every golden case: ordered by node, the run stores the same events
as ordered by step, only under other ids (and, within one instant, grouped by node);
and three members emit every event, by id, data, causes and order, that one does."""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.order import ORDER_BY_NODE, ORDER_BY_STEP
from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.kubelet import Kubelet
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import Node
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.replay import DecisionsSink
from ledgerlet_services.loops.kubelet import KubeletLoop
from ledgerlet_services.runtime.catalog import order_scheme_for, parse_members
from ledgerlet_services.runtime.causal_buffer import next_offsets
from ledgerlet_services.runtime.embedded import ServiceFailed, _seeded_feed, run_feed
from ledgerlet_services.runtime.shell import ServiceRunner
from tests.golden.cases import ROOT, RUN_ID, cases
from tests.services.test_snapshots import recorded
from tests.support.emit import emitter
from tests.support.every_event import compared, every_event

EVICTION_MANAGER = "eviction-manager"


async def _events(name: str, scheme: str, members: Mapping[str, int] | None = None) -> dict[str, Envelope]:
    return await every_event(*cases()[name](), order_scheme=scheme, members=members)


def _contents(events: Mapping[str, Envelope]) -> list[str]:
    """Each event as what it says and what caused it, its causes named by their own
    contents, not their ids (ordered by step and by node give other ids); in the
    run's order. Timer requests are left out: ordered by node they are asked once per
    step, not once until they fire, so there are more of them."""
    named: dict[str, str] = {}
    out = []
    for e in sorted(events.values(), key=Envelope.sort_key):
        data = json.loads(bytes(e.data))
        if e.type == "ScenarioStarted":
            data.pop("orderScheme", None)
        causes = sorted(named.get(c, f"unknown {c}") for c in e.causes)
        named[e.id] = json.dumps([e.t, e.type, e.node, e.pod, data, causes], sort_keys=True)
        if e.type != "TimerSet":
            out.append(named[e.id])
    return out


def _per_node(contents: list[str]) -> dict[str | None, list[str]]:
    by: dict[str | None, list[str]] = collections.defaultdict(list)
    for c in contents:
        by[json.loads(c)[2]].append(c)
    return dict(by)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cases()))
async def test_ordered_by_node_the_same_events_under_other_ids_and_three_members_emit_each_one(name: str) -> None:
    """Ordered by node, the run stores what it stores ordered by step, under other ids,
    each node's events in the same order; three eviction-manager members (and two
    collector members) emit every event of it, decisions, observations, timer requests
    and ticks, by id, data, causes and order. (One test: the run ordered by node is made
    once for both.)"""
    by_node = await _events(name, ORDER_BY_NODE)
    contents, by_step = _contents(by_node), _contents(await _events(name, ORDER_BY_STEP))
    assert collections.Counter(contents) == collections.Counter(by_step)
    assert _per_node(contents) == _per_node(by_step)
    split = await _events(name, ORDER_BY_NODE, {EVICTION_MANAGER: 3, "stats-collector": 2})
    assert {i: compared(e) for i, e in split.items()} == {i: compared(e) for i, e in by_node.items()}


def test_a_split_eviction_manager_orders_the_run_by_node() -> None:
    assert parse_members("eviction-manager=3") == {EVICTION_MANAGER: 3}
    assert order_scheme_for({EVICTION_MANAGER: 3}) == ORDER_BY_NODE
    assert order_scheme_for({EVICTION_MANAGER: 1}) == ORDER_BY_STEP
    assert order_scheme_for({"stats-collector": 3}) == ORDER_BY_STEP  # its split keeps every id as it is
    assert order_scheme_for({"stats-collector": 3}, ORDER_BY_NODE) == ORDER_BY_NODE
    assert order_scheme_for(None) == ORDER_BY_STEP


async def test_a_member_skips_a_run_ordered_by_step_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    """Not a failure: members added to a stack that served runs before read every run its
    topics hold (a crash there would crash them again at every restart); a run driven so
    waits for the groups its driver names. Here, in one process, the run goes on without
    any kubelet decision, and both members say why."""
    text, source = cases()["memory-pressure"]()
    scenario = load_scenario(text, source)
    sink = DecisionsSink()
    decoding = SharedDecoding()
    with caplog.at_level(logging.ERROR, logger="ledgerlet_services.runtime.shell"):
        await run_feed(
            _seeded_feed(scenario, RUN_ID, decoding),
            sink,
            run=RUN_ID,
            duration=scenario.duration,
            members={EVICTION_MANAGER: 2},
            idle_timeout=10,
            decoding=decoding,
        )
    said = [r.getMessage() for r in caplog.records]
    for i in (1, 2):
        assert any(
            re.search(rf"member {i}/2: run golden is not ordered by node.*eviction-manager=2.*skipped", m) for m in said
        ), said
    assert sink.decisions and not any(e.type == "PodEvicted" for e in sink.decisions.values())


async def test_a_member_lets_go_of_every_record_of_a_run_it_skips(tmp_path: Path) -> None:
    """A run of the topics' past, read back in one batch as a member added later reads it:
    the events derived from its steps are not held back for steps that will never be
    handled, so the member commits past the whole run (held, they stalled the clock)."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    records = rec.by_loop[EVICTION_MANAGER]
    runner = ServiceRunner(MemoryBus(), KubeletLoop, member=Membership(0, 2))
    assert runner.handle_records(records) == []
    assert runner.stats.refused == [rec.run]
    assert runner.commit_offsets(records) == next_offsets(records)  # (nothing held back)


async def test_an_unknown_order_scheme_is_refused_by_name() -> None:
    text, source = cases()["memory-pressure"]()
    scenario = dataclasses.replace(load_scenario(text, source), order_scheme="by-magic")
    decoding = SharedDecoding()
    with pytest.raises(ServiceFailed, match=r"ScenarioStarted.orderScheme: 'by-magic' is not one of '', 'node'"):
        await run_feed(
            _seeded_feed(scenario, RUN_ID, decoding),
            DecisionsSink(),
            run=RUN_ID,
            duration=scenario.duration,
            idle_timeout=10,
            decoding=decoding,
        )


def _node(name: str) -> Node:
    return convert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}, Node)


def test_a_members_kubelet_keeps_only_its_own_nodes() -> None:
    names = [f"node-{i}" for i in range(30)]
    members = [Membership(i, 3) for i in range(3)]
    held: list[set[str]] = []
    for member in members:
        kubelet = Kubelet(EVICTION_MANAGER, {}, {})
        kubelet.member = member
        for place, name in enumerate(names):
            kubelet.node_applied(_node(name), resolve_kubelet_config({}), emitter(), place=place)
        held.append(set(kubelet.nodes))
        assert held[-1] == {n for n in names if member.owns(n)}
        assert kubelet.places == {n: names.index(n) for n in held[-1]}
        for name in held[-1]:  # a node made again keeps the place it first had
            kubelet.node_applied(_node(name), resolve_kubelet_config({}), emitter(), place=99)
        assert kubelet.places == {n: names.index(n) for n in held[-1]}
    assert set().union(*held) == set(names) and sum(map(len, held)) == len(names)


#: what the kubelet (the eviction manager) decides, of what the example's decision log holds
_KUBELET_DECIDES = {"NodeConditionChanged", "PodEvicted", "PodTerminated", "NodeTaintAdded", "NodeTaintRemoved"}


def test_order_by_node_on_the_command_line(tmp_path: Path) -> None:
    """``ledgerlet run --order-by-node``: the same decisions, each one the kubelet took under
    another id, and a run the store replays as it was ordered."""
    from ledgerlet_services.app.cli import main

    scenario = str(ROOT / "examples" / "memory-pressure.yaml")
    logs = {}
    for flag in ([], ["--order-by-node"]):
        out = tmp_path / f"d{len(flag)}.jsonl"
        db = f"sqlite:///{tmp_path / f'd{len(flag)}.db'}"
        assert main(["run", scenario, "--decisions", str(out), "--store", db, "--run-id", "r", "--quiet", *flag]) == 0
        logs[bool(flag)] = [json.loads(line) for line in out.read_text().splitlines()]
        assert main(["replay", "--verify", "--store", db, "--run", "r"]) == 0
    plain, by_node = logs[False], logs[True]
    assert [(r["t"], r["type"], r.get("pod")) for r in by_node] == [(r["t"], r["type"], r.get("pod")) for r in plain]
    kubelets = [(a["id"], b["id"]) for a, b in zip(plain, by_node, strict=True) if a["type"] in _KUBELET_DECIDES]
    assert kubelets and all(a != b for a, b in kubelets)


def test_ordered_by_node_an_event_about_no_node_needs_an_order_of_its_own() -> None:
    from ledgerlet_core.contracts.internal import TimerSet

    out = emitter()
    out.place = {"n1": 4}.__getitem__
    assert out.emit(TimerSet(at=1, owner="x", phase=0), node="n1").order == [1, 0, 99, 4, 0]
    assert out.emit(TimerSet(at=2, owner="x", phase=0), node="n1").order == [1, 0, 99, 4, 1]
    with pytest.raises(ValueError, match="TimerSet: ordered by node, an event about no node needs an order"):
        out.emit(TimerSet(at=3, owner="x", phase=0))
    assert out.emit(TimerSet(at=3, owner="x", phase=0), order=[1, 0, 99, 7]).order == [1, 0, 99, 7]


def test_timer_requests_ordered_by_node_are_asked_once_per_step() -> None:
    """Ordered by step a tick is asked for once until it fires; ordered by node once per
    step, so members that each ask for their own nodes name it alike."""
    from ledgerlet_core.loop.timers import Timers
    from ledgerlet_core.model.duration import SECOND

    def asks(place: bool) -> list[tuple[float, float]]:
        """(the asking step's time, the tick's) of every request made."""
        timers, made = Timers(EVICTION_MANAGER), []
        for step_at, at in ((0, 30), (0, 30), (10, 30), (10, 40), (20, 30)):
            out = emitter(at=step_at)
            out.place = (lambda node: 0) if place else None
            timers.want(at * SECOND, 3, out)
            made += [(e.envelope.t / SECOND, at) for e in out.out]
            if (step_at, at) == (10, 40):
                timers.fired(10 * SECOND, 3)  # (a tick at 10 s: what steps before it asked is let go)
        return made

    assert asks(place=False) == [(0, 30), (10, 40)]  # 30 s stays asked for until it fires
    assert asks(place=True) == [(0, 30), (10, 30), (10, 40), (20, 30)]
