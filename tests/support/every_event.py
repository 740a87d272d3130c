"""Every event an embedded run's loops emit, by id (observations in full): the split
services' tests compare runs event by event, not only their decisions."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.inputs import OBSERVATIONS_WHOLE
from ledgerlet_core.contracts.observed import expand_observed
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.replay import DecisionsSink
from ledgerlet_services.runtime.embedded import _seeded_feed, run_feed
from tests.golden.cases import RUN_ID

#: what is compared of an event: its type, data, causes and order
Compared = tuple[str, bytes, list[str], list[int]]


class EveryEvent(DecisionsSink):
    """Every event the loops emit, by id; one id given twice must be the same event. A
    tick's observations count one by one (how they were batched is a matter of transport:
    a split collector's members each carry their own nodes')."""

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, Envelope] = {}

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        for e in expand_observed(envelopes):
            had = self.events.get(e.id)
            assert had is None or compared(had) == compared(e), f"{e.type} {e.id} emitted twice, unlike"
            self.events[e.id] = e
        return len(envelopes)


def compared(e: Envelope) -> Compared:
    return (e.type, bytes(e.data), e.causes, e.order)


async def every_event(
    text: str, source: str, *, order_scheme: str = "", members: Mapping[str, int] | None = None
) -> dict[str, Envelope]:
    """The scenario run in-process (its services split as ``members`` says), ordered as
    ``order_scheme`` says (contracts/order.py): every event by id."""
    scenario = dataclasses.replace(
        load_scenario(text, source), order_scheme=order_scheme, observations=OBSERVATIONS_WHOLE
    )
    sink = EveryEvent()
    decoding = SharedDecoding()
    await run_feed(
        _seeded_feed(scenario, RUN_ID, decoding),
        sink,
        run=RUN_ID,
        duration=scenario.duration,
        members=members,
        full_observations=True,
        decoding=decoding,
    )
    return sink.events
