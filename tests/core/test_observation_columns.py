"""The column path of a tick's observations held to the per-node path.

The collector works out every due node's observation over whole columns and the kubelet
tells the quiet passes apart over whole columns (node_sim/observing.py, kubelet/quiet.py);
the reference is each observation made pod by pod (``derive_summary``), sent alone and
whole, and handled by the kubelet's pass one node at a time (``Machines.one_by_one``). On
random fleets the two must store the same events, byte for byte: every observation's
node-level stats, every decision with its causes, every timer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.observed import expand_observed
from ledgerlet_core.model.usage import Series
from ledgerlet_core.node_sim.columns import KINDS, PodTerms, SeriesTable
from ledgerlet_core.node_sim.machines import Machines
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import _seeded_feed, run_feed
from tests.support.random_fleet import random_fleet

SECOND = 10**9


# -- the series table --------------------------------------------------------------------
_times = st.lists(st.integers(0, 10**6), min_size=1, max_size=6).map(sorted)
_values = st.integers(0, 1 << 62)
#: a pod's use (up to 64 PiB: thirty of them on a node still sum within an int64, as
#: totals are kept; a node's pods using more than an int64 together are not modelled)
_pod_values = st.integers(0, 1 << 56)


@st.composite
def _series(draw: st.DrawFn, values: st.SearchStrategy[int] = _values) -> Series:
    times = draw(_times)
    values = draw(st.lists(values, min_size=len(times), max_size=len(times)))
    return Series(tuple(t * SECOND for t in times), tuple(values))


@settings(max_examples=200, deadline=None)
@given(st.lists(_series(), min_size=1, max_size=12), st.lists(st.integers(0, 10**6 + 10), min_size=1, max_size=8))
def test_every_series_at_once_is_each_series_at(series: list[Series], instants: list[int]) -> None:
    """Integer interpolation rounded down, steps, before the first and after the last
    point, products beyond an int64: exactly ``Series.at``."""
    table = SeriesTable()
    rows = [table.index(s) for s in series]
    for t in sorted(instants):
        values = table.values_at(t * SECOND)
        assert [int(values[r]) for r in rows] == [s.at(t * SECOND) for s in series]


def test_a_series_is_one_row_however_often_it_is_asked_for() -> None:
    table = SeriesTable()
    s = Series((0, SECOND), (1, 2))
    assert table.index(s) == table.index(s) != table.index(Series((0, SECOND), (1, 2)))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, KINDS - 1), _series(_pod_values)), max_size=30),
    st.integers(0, 10**6),
)
def test_pod_terms_add_up_per_node_and_kind(terms: Sequence[tuple[int, int, Series]], at: int) -> None:
    table = SeriesTable()
    pods = PodTerms(table)
    for i, (node, kind, series) in enumerate(terms):
        pods.place(f"p{i}", node, [(kind, series)])
    pods.remove("p0")  # (a pod gone adds nothing; its rows are reused)
    pods.place("again", 1, [(0, Series.constant(7))])
    want = [[0] * KINDS for _ in range(5)]
    for i, (node, kind, series) in enumerate(terms):
        if i:
            want[node][kind] += series.at(at * SECOND)
    want[1][0] += 7
    assert pods.totals(at * SECOND, 5).tolist() == want


# -- the whole path on random fleets -------------------------------------------------------
class _Stored:
    """What the recorder stores (derived observations without their pods' stats), by id,
    a tick's observations one by one."""

    def __init__(self) -> None:
        self.events: dict[str, Envelope] = {}

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        for e in expand_observed(envelopes):
            self.events[e.id] = e
        return len(envelopes)


async def _stored(doc: dict[str, object], one_by_one: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setattr(Machines, "one_by_one", one_by_one)
    scenario = load_scenario(json.dumps(doc), "random.json")
    sink = _Stored()
    decoding = SharedDecoding()
    await run_feed(_seeded_feed(scenario, "r", decoding), sink, run="r", duration=scenario.duration, decoding=decoding)
    return {
        i: (e.type, e.t, e.order, e.stream, e.node, e.pod, e.causes, json.loads(bytes(e.data)))
        for i, e in sink.events.items()
    }


@pytest.mark.parametrize("seed", range(12))
async def test_random_fleets_store_the_same_events_either_way(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = random_fleet(seed)
    columns = await _stored(doc, False, monkeypatch)
    alone = await _stored(doc, True, monkeypatch)
    assert columns.keys() == alone.keys()
    differ = [i for i in columns if columns[i] != alone[i]]
    assert not differ, (columns[differ[0]], alone[differ[0]])
    decided = {e[0] for e in columns.values()}
    assert "NodeObserved" in decided
