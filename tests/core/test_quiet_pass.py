"""A pass on a node with nothing pending that meets no threshold is told apart on plain
numbers (``synchronize``'s shortcut): it must give exactly what the whole pass gives, pass
after pass, whatever pressure comes and goes."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.manager import EvictionState, PassResult, node_thresholds, synchronize
from ledgerlet_core.kubelet.eviction.observations import (
    LazyObservations,
    any_threshold_met,
    make_signal_observations,
    signal_values,
    thresholds_met,
)

from .test_eviction_pass import Gi, S, pressure_pods, summary

CONFIGS: list[dict[str, Any]] = [
    {"evictionHard": {"memory.available": "1Gi", "nodefs.available": "10%"}, "enforceNodeAllocatable": []},
    {
        "evictionHard": {"memory.available": "500Mi"},
        "evictionSoft": {"memory.available": "2Gi", "nodefs.available": "30%"},
        "evictionSoftGracePeriod": {"memory.available": "30s", "nodefs.available": "1m"},
        "evictionMinimumReclaim": {"memory.available": "1Gi"},
        "evictionPressureTransitionPeriod": "40s",
        "enforceNodeAllocatable": [],
    },
    {"evictionHard": {"nodefs.inodesFree": "50%", "imagefs.available": "15%"}, "enforceNodeAllocatable": []},
    {  # no transition period: a threshold kept met by its minimum reclaim reports no condition
        "evictionHard": {"memory.available": "1Gi"},
        "evictionMinimumReclaim": {"memory.available": "1Gi"},
        "evictionPressureTransitionPeriod": "0s",
        "enforceNodeAllocatable": [],
    },
]

Mi = 1 << 20
#: memory and disk available around the thresholds above (on them too), or anywhere
MEMORY = st.one_of(
    st.sampled_from([300 * Mi, 500 * Mi, 700 * Mi, Gi, 1200 * Mi, 1800 * Mi, 2 * Gi, 3 * Gi, 6 * Gi]),
    st.integers(0, 8 * Gi),
)
DISK = st.one_of(
    st.sampled_from([5 * Gi, 10 * Gi, 12 * Gi, 15 * Gi, 20 * Gi, 30 * Gi, 80 * Gi]), st.integers(0, 100 * Gi)
)
#: the node's transition period at a pass (its configuration may change between passes)
PERIOD = st.sampled_from([None, "0s", "15s", "40s", "5m"])
#: one pass: memory available, disk available (of 100 Gi), whether its stats are new, its period
PASS = st.tuples(MEMORY, DISK, st.booleans(), PERIOD)


def _plain(result: PassResult) -> tuple[Any, ...]:
    """Everything a pass gives, with its observations as a plain dict."""
    state = dataclasses.replace(result.state, last_observations=dict(result.state.last_observations))
    rest = dataclasses.replace(result, state=state, observations=dict(result.observations))
    return dataclasses.astuple(rest)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(config=st.sampled_from(CONFIGS), passes=st.lists(PASS, min_size=1, max_size=12))
def test_the_shortcut_gives_what_the_whole_pass_gives(config: dict[str, Any], passes: list[Any]) -> None:
    pods, stats = pressure_pods()
    states = {True: EvictionState(), False: EvictionState()}
    for i, (mem, disk, fresh, period) in enumerate(passes):
        kubelet = resolve_kubelet_config(
            config if period is None else {**config, "evictionPressureTransitionPeriod": period}
        )
        time = f"2026-01-01T00:{i if fresh else 0:02d}:00Z"
        s = summary(mem_available=mem, mem_ws=8 * Gi - mem, fs_available=disk, pods=stats, time=time)
        results = {
            shortcut: synchronize(
                now=i * 10 * S,
                config=kubelet,
                layout="single",
                state=states[shortcut],
                summary=s,
                active_pods=pods,
                local_storage_candidates=[],
                shortcut=shortcut,
            )
            for shortcut in (True, False)
        }
        assert _plain(results[True]) == _plain(results[False])
        states = {k: r.state for k, r in results.items()}


def test_a_quiet_pass_takes_the_shortcut_and_a_pressured_one_does_not() -> None:
    kubelet = resolve_kubelet_config(CONFIGS[0])
    pods, stats = pressure_pods()

    def one(mem: int, state: EvictionState | None = None) -> PassResult:
        s = summary(mem_available=mem, mem_ws=8 * Gi - mem, pods=stats)
        return synchronize(
            now=0,
            config=kubelet,
            layout="single",
            state=state or EvictionState(),
            summary=s,
            active_pods=pods,
            local_storage_candidates=[],
        )

    quiet = one(4 * Gi)
    assert isinstance(quiet.observations, LazyObservations)
    pressed = one(Gi // 2)
    assert not isinstance(pressed.observations, LazyObservations) and pressed.eviction is not None
    after = one(4 * Gi, pressed.state)  # the condition is reported still: the whole pass
    assert not isinstance(after.observations, LazyObservations)
    kept = pickle.loads(pickle.dumps(quiet.state))  # (a service's snapshot holds it)
    assert dict(kept.last_observations) == dict(quiet.state.last_observations)


@settings(max_examples=300, deadline=None)
@given(
    config=st.sampled_from(CONFIGS),
    mem=MEMORY,
    disk=DISK,
    inodes=st.one_of(st.just(10**6), st.integers(0, 2 * 10**6)),
)
def test_any_threshold_met_on_plain_numbers_is_thresholds_met(
    config: dict[str, Any], mem: int, disk: int, inodes: int
) -> None:
    s = summary(mem_available=mem, mem_ws=8 * Gi - mem, fs_available=disk)
    assert s.node.fs is not None
    s.node.fs.inodes_free = inodes
    thresholds = node_thresholds(resolve_kubelet_config(config), "single")
    met = thresholds_met(thresholds, make_signal_observations(s), with_min_reclaim=False)
    assert any_threshold_met(thresholds, signal_values(s)) == bool(met)
