"""One member's share of a service whose work is split between several.

Two ways of splitting, both keeping every event's id and content as one member alone
would give it:

* The eviction manager's, in a run ordered by node (contracts/order.py): each member
  keeps and works only its own nodes, numbering what it emits about a node per node, so
  no member needs to know what another emitted (:meth:`Membership.keeps_own`).
* The stats collector's, in any run: every member folds everything and keeps the same
  state, but makes only its own nodes' observations (the work that grows with every
  pass) and emits only what concerns its own nodes; what concerns no node, member 1
  emits (:meth:`Membership.keeps`). Every node's kernel still runs on every member: its
  OOM kills take places in the order. The places of what it leaves to the others are
  kept (:meth:`~ledgerlet_core.loop.emitter.Emitter.skip`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Membership:
    """Member ``index`` (from 0) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"member {self.index + 1} of {self.count}: expected 1..{self.count}")

    @classmethod
    def parse(cls, text: str) -> Membership | None:
        """``I/N``: member I (from 1) of N; None for ``1/1`` (the whole work: no split)."""
        try:
            i, n = (int(part) for part in text.split("/"))
        except ValueError:
            raise ValueError(f"expected I/N (member I of N, from 1), got {text!r}") from None
        member = cls(i - 1, n)
        return member if n > 1 else None

    def owns(self, node: str) -> bool:
        """Whether this member observes ``node`` (a stable hash: every member agrees)."""
        return zlib.crc32(node.encode()) % self.count == self.index

    def keeps(self, node: str | None) -> bool:
        """Whether this member emits what concerns ``node`` (None: no node)."""
        return self.owns(node) if node else self.index == 0

    def keeps_own(self, node: str | None) -> bool:
        """Whether a member of a loop ordered by node emits what concerns ``node``: its
        own nodes', and (None) the timer requests it asks for itself, which are named after
        the step (the same id whichever member asks: contracts/order.py)."""
        return node is None or self.owns(node)

    @property
    def suffix(self) -> str:
        """What the member's consumer group, lease and snapshot are named with."""
        return f"member-{self.index + 1}-of-{self.count}"


def group_of(service: str, member: Membership | None) -> str:
    """The consumer group (and lease, snapshot and heartbeat name) of a service's member."""
    return f"{service}.{member.suffix}" if member is not None and member.count > 1 else service
