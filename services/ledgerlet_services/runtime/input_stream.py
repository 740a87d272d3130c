"""A run's inputs, taken in order one at a time by the embedded engine.

A stored run's inputs (replay, what-if) come as a list, sorted here. A scenario's come
as they are made (scenario/feed.py: in order already, since the loader sorts its events):
a fleet's starting state is then never held whole, encoded, beside the loops it is
folded into (5,000 nodes' batches are most of a gigabyte).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ledgerlet_core.contracts.envelope import Envelope


class InputOutOfOrder(ValueError):
    """An input made after one that comes later: a feed that claims an order it lacks."""


class InputStream:
    """Inputs by (virtual time, causal order): :meth:`peek` at the next, :meth:`take` it."""

    def __init__(self, inputs: Iterable[Envelope]) -> None:
        self._rest: Iterator[Envelope] = (
            iter(sorted(inputs, key=Envelope.sort_key)) if isinstance(inputs, Sequence) else iter(inputs)
        )
        self._next = next(self._rest, None)

    def __bool__(self) -> bool:
        return self._next is not None

    def peek(self) -> Envelope:
        """The next input (there must be one)."""
        if self._next is None:
            raise IndexError("no input left")
        return self._next

    def take(self) -> Envelope:
        """The next input, let go of here."""
        env = self.peek()
        following = next(self._rest, None)
        if following is not None and following.sort_key() < env.sort_key():
            raise InputOutOfOrder(f"input {following.id} ({following.type}) comes before {env.id} ({env.type})")
        self._next = following
        return env
