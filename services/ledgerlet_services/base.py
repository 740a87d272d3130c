"""A service: a name, the topics it reads, and a synchronous handler.

Handlers fold the event into the service's state and decide; they never block and
never read a clock. The shell (:mod:`ledgerlet_services.shell`) does all I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import ClassVar

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_services.emitter import Emitter


class Service(ABC):
    #: stable name: consumer group, telemetry, ``ledgerlet service NAME``
    name: ClassVar[str]
    #: place among services in the order key of what they emit (fixed forever)
    rank: ClassVar[int]
    topics: ClassVar[tuple[str, ...]]

    @abstractmethod
    def handle(self, env: Envelope, out: Emitter) -> Iterator[None] | None:
        """Fold ``env`` into state; emit decisions and follow-up events through ``out``.

        A handler with a long pass to make (every node at a housekeeping tick) may be a
        generator that yields now and then: the shell sends what it emitted so far
        while it goes on, so other services can start on it."""
