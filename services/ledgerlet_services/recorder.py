"""Event recorder: every event on every topic, appended to the event store.

It commits a batch's offsets only once the store has it, and the store drops event ids
it already holds, so redelivery after a crash or a restart of the store loses nothing
and duplicates nothing.
"""

from __future__ import annotations

import asyncio
import logging

import msgspec

from ledgerlet_bus.api import Bus
from ledgerlet_core.contracts.envelope import Envelope, decode_envelope
from ledgerlet_core.contracts.internal import compact_observation_json
from ledgerlet_services.shell import next_offsets
from ledgerlet_services.topics import ALL_TOPICS
from ledgerlet_store.store import EventStore

log = logging.getLogger(__name__)

NAME = "event-recorder"


class RecorderRunner:
    name = NAME

    def __init__(
        self,
        bus: Bus,
        store: EventStore,
        *,
        group: str = NAME,
        max_records: int = 5000,
        full_observations: bool = False,
    ) -> None:
        self.full_observations = full_observations
        self.bus = bus
        self.store = store
        self.group = group
        self.max_records = max_records
        self.appended = 0
        self.received = 0
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        consumer = self.bus.consumer(self.group, ALL_TOPICS)
        try:
            while not self._stop.is_set():
                records = await consumer.getmany(timeout=0.2, max_records=self.max_records)
                if not records:
                    continue
                envelopes = [self._stored_form(decode_envelope(r.value)) for r in records]
                self.received += len(envelopes)
                self.appended += await self.store.append_batch(envelopes)
                await consumer.commit(next_offsets(records))
        finally:
            await consumer.close()

    def _stored_form(self, env: Envelope) -> Envelope:
        """Derived observations are stored without per-pod stats unless asked for in full."""
        if self.full_observations or env.type != "NodeObserved":
            return env
        compact = compact_observation_json(env.data)
        if compact is None:
            return env
        return msgspec.structs.replace(env, data=msgspec.Raw(compact))
