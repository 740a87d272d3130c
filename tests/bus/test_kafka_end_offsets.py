"""The Kafka bus's end offsets, when the broker does not give a partition's end.

``lag`` and ``wait_idle`` measure each group against the ends read from Fetch responses
(see ledgerlet_bus/kafka.py). A partition whose probe comes back with an error (a leader
that moved, a log the broker cannot find) or not at all has no known end: counting it
at the end seen before (or not at all) would make the virtual clock move on while a
group still has records to handle. The bus must say the broker did not answer instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.errors import KafkaError  # type: ignore[import-untyped]
from aiokafka.protocol.fetch import FetchRequest  # type: ignore[import-untyped]

from ledgerlet_bus.api import BusTimeout, TopicSpec
from ledgerlet_bus.kafka import KafkaBus

_NOT_LEADER = 6
_OUT_OF_RANGE = 1


@pytest.fixture
async def bus(kafka_bootstrap: str, kafka_namespace: str) -> AsyncIterator[KafkaBus]:
    b = KafkaBus(kafka_bootstrap, namespace=kafka_namespace)
    await b.start()
    await b.create_topics([TopicSpec("u", 1)])
    try:
        yield b
    finally:
        await b.close()


def answer_fetches(bus: KafkaBus, how: str) -> list[int]:
    """From now on the broker's Fetch responses give no end for any partition: each comes
    back with an error (``how``: an error code) or is left out (``how``: "omitted").
    The list returned grows by one with every Fetch answered so."""
    send = bus.client.send
    answered: list[int] = []

    async def fake_send(node_id: int, request: Any, **kwargs: Any) -> Any:
        response = await send(node_id, request, **kwargs)
        if not isinstance(request, FetchRequest):
            return response
        answered.append(1)
        if how == "omitted":
            return SimpleNamespace(topics=[])
        code = int(how)
        return SimpleNamespace(
            topics=[(topic, [(part[0], code, -1, *part[3:]) for part in parts]) for topic, parts in response.topics]
        )

    bus.client.send = fake_send  # type: ignore[method-assign]
    return answered


@pytest.mark.parametrize("how", [str(_NOT_LEADER), str(_OUT_OF_RANGE), "omitted"])
async def test_a_partition_without_an_end_is_never_taken_as_caught_up(bus: KafkaBus, how: str) -> None:
    groups = {"g": ["u"]}
    assert await bus.lag(groups) == 0  # the end of "u" (0) is now known to the bus
    producer = bus.producer()
    await producer.send("u", b"tick", key=b"clock")
    await producer.flush()
    send = bus.client.send
    answered = answer_fetches(bus, how)  # (nobody has handled the tick)
    with pytest.raises(BusTimeout):
        await bus.wait_idle(groups, timeout=0.5)  # never idle while "g" has a record to handle
    bus.lag_patience = 0.5
    with pytest.raises(KafkaError):
        await bus.lag(groups)  # not 0: the end is unknown, not where it was last seen
    bus.lag_patience = 30.0
    asking = asyncio.create_task(bus.lag(groups))  # asked again while the broker gives no end...
    before = len(answered)
    while len(answered) < before + 2:  # (the bus's own probes, counted: it asks again and again)
        assert not asking.done()
        await asyncio.sleep(0.01)
    assert not asking.done()
    bus.client.send = send  # type: ignore[method-assign]
    assert await asking == 1  # ... until it does
