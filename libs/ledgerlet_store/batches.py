"""Stored input batches, read as the inputs they carry.

An ``InputBatch`` is stored as one row (a node's starting pods: one write instead of
hundreds), and the pods' inputs among its members are listed in ``batch_members`` (id,
type, instant, place, node, pod, the row). Every
read of the store hands out members, never the batch: a member is a
:class:`~ledgerlet_store.contract.StoredEvent` of its own, at the batch's position, so a
reader sees exactly the events single inputs would have stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

import msgspec

from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.batch import BATCH, BATCHABLE, expand
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.observed import OBSERVED, OBSERVED_BATCH, observation_members, observed_index

if TYPE_CHECKING:
    from ledgerlet_store.contract import StoredEvent

MemberFilter = Callable[[Envelope], bool]


def with_batches(types: Iterable[str]) -> list[str]:
    """The stored types to read for ``types``: batches too where a member may be one."""
    wanted = list(types)
    if BATCHABLE.intersection(wanted):
        wanted.append(BATCH)
    if OBSERVED in wanted:
        wanted.append(OBSERVED_BATCH)
    return wanted


def in_batches(types: Iterable[str]) -> bool:
    """Whether some of ``types`` may be stored as a batch's members."""
    wanted = set(types)
    return bool(BATCHABLE & wanted) or OBSERVED in wanted


def expanded(rows: Iterable[StoredEvent], keep: MemberFilter | None = None) -> list[StoredEvent]:
    """``rows`` with each batch replaced by its members (those ``keep`` accepts): a
    node's starting pods' inputs, a tick's observations."""
    out: list[StoredEvent] = []
    for row in rows:
        kind = row.envelope.type
        if kind == BATCH:
            members = expand(row.envelope)
        elif kind == OBSERVED_BATCH:
            members = observation_members(row.envelope)
        else:
            out.append(row)
            continue
        out.extend(replace(row, envelope=m) for m in members if keep is None or keep(m))
    return out


def in_decision_order(rows: list[StoredEvent]) -> list[StoredEvent]:
    """Sorted by (virtual time, causal order), as the store's own order (stable)."""
    return sorted(rows, key=lambda r: (r.envelope.t, r.envelope.order))


#: the columns of a ``batch_members`` row, in the order :func:`member_rows` gives them
MEMBER_COLUMNS: Final = ("event_id", "run", "type", "t", "order_key", "node", "pod", "position")
#: a ``batch_members`` row: (event_id, run, type, t, order_key, node, pod, position)
MemberRow = tuple[str, str, str, int, str, str | None, str, int]


class _MemberHead(msgspec.Struct, rename="camel"):
    """What a member's row needs of it (its data, most of the batch, is skipped unread)."""

    id: str
    index: int
    type: str
    node: str | None = None
    pod: str | None = None


class _BatchHeads(msgspec.Struct):
    members: list[_MemberHead]


_HEADS: Final = msgspec.json.Decoder(_BatchHeads)
#: ``order_key([order.INPUTS, i])`` up to the member's index
_INPUTS_PREFIX: Final = f"{order.INPUTS:010d}."


def member_rows(batches: Sequence[tuple[Envelope, int]]) -> list[MemberRow]:
    """``batch_members`` rows (:data:`MEMBER_COLUMNS`) for stored batches and their
    positions: their pods' inputs. Plain tuples, as both drivers take them: a fleet's
    starting state is half a million rows."""
    prefix = _INPUTS_PREFIX
    return [
        (m.id, env.run, m.type, env.t, f"{prefix}{m.index:010d}", m.node, m.pod, position)
        for env, position in batches
        for m in _HEADS.decode(env.data).members
        if m.pod is not None
    ]


def observation_rows(batches: Sequence[tuple[Envelope, int]]) -> list[tuple[str, str, int, str, int]]:
    """``observation_members`` rows for stored observation batches and their positions."""
    rows: list[tuple[str, str, int, str, int]] = []
    for env, position in batches:
        data = observed_index(env.data)
        rows.extend((i, env.run, env.t, n, position) for i, n in zip(data.ids, data.nodes, strict=True))
    return rows


def order_key(order_path: Sequence[int]) -> str:
    """A string that sorts like the order path (prefixes first): the store's ``order_key``."""
    return ".".join(f"{i:010d}" for i in order_path)
