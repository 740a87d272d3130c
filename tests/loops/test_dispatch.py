"""Typed dispatch: a loop whose handlers do not fit the contracts is refused at import."""

from __future__ import annotations

from typing import ClassVar

import msgspec
import pytest

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import NodeObserved
from ledgerlet_core.contracts.order import LOOP_RANKS, rank_of
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_services.loops.base import Loop, on


def test_a_well_formed_loop_dispatches_by_type_and_folds_the_cluster_view() -> None:
    seen: list[str] = []

    class Good(Loop):
        name: ClassVar[str] = "scheduler"
        topics: ClassVar[tuple[str, ...]] = (INPUTS, CLOCK, DECISIONS)

        @on(dec.PodEvicted)
        def _evicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
            seen.append(data.signal)

    loop = Good()
    assert loop.rank == LOOP_RANKS["scheduler"]
    evicted = make_envelope(
        dec.PodEvicted(
            signal="memory.available", threshold="t", observed=1, grace_period_seconds=0, message="m", ranking=[]
        ),
        run="r",
        t=0,
        order=[1, 0],
        stream="s",
    )
    loop.handle(evicted, Emitter(evicted, loop.rank))
    assert seen == ["memory.available"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    applied = make_envelope(inp.ObjectApplied(object=node, initial=True), run="r", t=0, order=[0, 1], stream="s")
    assert loop.handle(applied, Emitter(applied, loop.rank)) is None  # no handler: only the view folds it
    assert list(loop.cluster.nodes) == ["n1"]


def test_a_handler_declaring_another_data_type_is_refused() -> None:
    with pytest.raises(TypeError, match="declares its data as"):

        class Wrong(Loop):
            name: ClassVar[str] = "scheduler"
            topics: ClassVar[tuple[str, ...]] = (DECISIONS,)

            @on(dec.PodEvicted)
            def _evicted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
                pass


def test_a_handler_of_a_topic_the_loop_does_not_read_is_refused() -> None:
    with pytest.raises(TypeError, match="does not read it"):

        class Deaf(Loop):
            name: ClassVar[str] = "scheduler"
            topics: ClassVar[tuple[str, ...]] = (INPUTS, DECISIONS)

            @on(NodeObserved)
            def _observed(self, env: Envelope, data: NodeObserved, out: Emitter) -> None:
                pass


def test_an_unregistered_type_and_a_second_handler_are_refused() -> None:
    class Stranger(msgspec.Struct):
        x: int = 0

    with pytest.raises(TypeError, match="not a registered event type"):

        class Unknown(Loop):
            name: ClassVar[str] = "scheduler"
            topics: ClassVar[tuple[str, ...]] = (DECISIONS,)

            @on(Stranger)
            def _stranger(self, env: Envelope, data: Stranger, out: Emitter) -> None:
                pass

    with pytest.raises(TypeError, match="already handled"):

        class Twice(Loop):
            name: ClassVar[str] = "scheduler"
            topics: ClassVar[tuple[str, ...]] = (DECISIONS,)

            @on(dec.PodEvicted)
            def _one(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
                pass

            @on(dec.PodEvicted)
            def _two(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
                pass


def test_every_loop_has_a_rank_of_its_own() -> None:
    assert len(set(LOOP_RANKS.values())) == len(LOOP_RANKS)
    with pytest.raises(KeyError, match=r"contracts/order\.py"):
        rank_of("a-loop-nobody-ranked")
