"""Input batches (contracts/batch.py): runs of one node's consecutive inputs of one instant,
bounded in members and bytes, whose members read back as the inputs they stand for."""

from __future__ import annotations

import pytest

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.batch import BATCH, MAX_BYTES, MAX_MEMBERS, expand_all, iter_batched
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope


def usage(i: int, t: int = 0, memory: str = "1Mi") -> Envelope:
    return make_envelope(
        inp.UsageDeclared(key=f"ns/p{i}", usage={"memory": memory}), run="r", t=t, order=[0, i], stream=f"usage/ns/p{i}"
    )


def sizes(batched: list[Envelope]) -> list[int]:
    """Members per record (1: an input on its own)."""
    return [len(list(expand_all([e]))) if e.type == BATCH else 1 for e in batched]


def test_a_run_of_one_nodes_inputs_is_one_batch_and_reads_back_as_they_were() -> None:
    singles = [usage(i) for i in range(5)]
    (batch,) = list(iter_batched(singles, lambda e: "n1"))
    assert batch.type == BATCH
    assert list(expand_all([batch])) == singles


def test_a_batch_ends_where_the_node_or_the_instant_changes() -> None:
    nodes = ["n1", "n1", "n2", "n2", "n1"]
    singles = [usage(0), usage(1), usage(2), usage(3), usage(4)]
    assert sizes(list(iter_batched(singles, lambda e: nodes[e.order[1]]))) == [2, 2, 1]
    later = [usage(0), usage(1), usage(2, t=10), usage(3, t=10)]
    assert sizes(list(iter_batched(later, lambda e: "n1"))) == [2, 2]


def test_inputs_of_no_node_pass_on_their_own_in_place() -> None:
    singles = [usage(i) for i in range(4)]
    batched = list(iter_batched(singles, lambda e: None if e.order[1] == 2 else "n1"))
    assert sizes(batched) == [2, 1, 1]
    assert list(expand_all(batched)) == singles


@pytest.mark.parametrize("limit", ["members", "bytes"])
def test_a_batch_holds_at_most_its_members_and_bytes(limit: str) -> None:
    if limit == "members":
        singles = [usage(i) for i in range(MAX_MEMBERS * 2 + 1)]
    else:  # entries of about a fifth of the limit each: five fit, not six
        big = "1" * (MAX_BYTES // 5 - 200) + "Mi"
        singles = [usage(i, memory=big) for i in range(12)]
    batched = list(iter_batched(singles, lambda e: "n1"))
    assert len(batched) > 1
    assert list(expand_all(batched)) == singles
    for e in batched:
        members = list(expand_all([e]))
        assert len(members) <= MAX_MEMBERS
        assert sum(len(m.data) for m in members) <= MAX_BYTES
