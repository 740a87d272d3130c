"""One bus or the other for a test, as its fixture's parameter says: the in-memory bus
(keeping what was read: history() needs it, as Kafka keeps it) or Kafka (Tansu)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import pytest

from ledgerlet_bus.api import Bus, TopicSpec
from ledgerlet_bus.memory import MemoryBus


@contextlib.asynccontextmanager
async def either_bus(request: pytest.FixtureRequest, topics: Sequence[TopicSpec]) -> AsyncIterator[Bus]:
    """``request.param``: ``memory`` or ``kafka``; the bus is started with ``topics``. (A
    fixture that gives Kafka marks that parameter ``distributed``: it starts a broker.)"""
    b: Bus
    if request.param == "kafka":
        from ledgerlet_bus.kafka import KafkaBus

        b = KafkaBus(request.getfixturevalue("kafka_bootstrap"), namespace=request.getfixturevalue("kafka_namespace"))
    else:
        b = MemoryBus(retain=True)
    await b.start()
    await b.create_topics(topics)
    try:
        yield b
    finally:
        await b.close()
