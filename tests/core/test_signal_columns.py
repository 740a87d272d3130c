"""A tick's signals over whole columns (kubelet/eviction/signal_columns.py) held to the
per-node numbers a pass takes from one node's Summary (``signal_values``): every signal,
on every filesystem layout, asked for in any order (each is made when first asked)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledgerlet_core.contracts.internal import FS_DEDICATED, FS_SINGLE, FS_SPLIT, NodesObserved
from ledgerlet_core.kubelet.eviction.observations import signal_values
from ledgerlet_core.kubelet.eviction.signal_columns import STAT_FIELDS, SignalColumns
from ledgerlet_core.kubelet.eviction.signals import Signal
from ledgerlet_core.model.runtime import RuntimeView
from ledgerlet_core.model.summary import Summary

_BIG = 1 << 50

_member = st.fixed_dictionaries(
    {
        "mem_available": st.integers(0, _BIG),
        "mem_usage": st.integers(0, _BIG),
        "mem_working_set": st.integers(0, _BIG),
        "pods_available": st.one_of(st.just(-1), st.integers(0, _BIG)),
        "pods_working_set": st.integers(0, _BIG),
        "fs_capacity": st.integers(0, _BIG),
        "fs_used": st.integers(0, _BIG),
        "fs_inodes": st.integers(0, _BIG),
        "fs_inodes_used": st.integers(0, _BIG),
        "fs_mode": st.sampled_from([FS_SINGLE, FS_DEDICATED, FS_SPLIT]),
        "img_capacity": st.integers(0, _BIG),
        "img_used": st.integers(0, _BIG),
        "img_inodes": st.integers(0, _BIG),
        "img_inodes_used": st.integers(0, _BIG),
        "max_pid": st.integers(0, 1 << 22),
        "cur_proc": st.integers(0, 1 << 22),
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_member, min_size=1, max_size=8), st.permutations(list(Signal)))
def test_every_signal_is_what_each_members_summary_gives(members: list[dict[str, int]], asked: list[Signal]) -> None:
    n = len(members)
    batch = NodesObserved(
        time="1970-01-01T00:00:00Z",
        nodes=[f"n{i}" for i in range(n)],
        ids=[f"id-{i}" for i in range(n)],
        places=list(range(n)),
        runtime=[0] * n,
        runtimes=[RuntimeView(layout="single")],
        **{name: [m[name] for m in members] for name in STAT_FIELDS},
    )
    columns = SignalColumns.of(batch)
    for signal in asked:
        found = columns.column(signal)
        for i in range(n):
            want = signal_values(Summary(node=batch.node_stats(i))).get(signal)
            if found is None:
                assert want is None, signal
                continue
            available, capacity, present = found[0][i], found[1][i], found[2][i]
            assert bool(present) == (want is not None), (signal, i)
            if want is not None:
                assert (int(available), int(capacity)) == (want[0], want[1]), (signal, i)
