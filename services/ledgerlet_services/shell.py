"""The loop every service runs: consume a batch, handle it, publish, then commit.

Offsets are committed only after everything the batch produced is acknowledged, so a
crash at any point loses nothing: the batch is delivered again, handlers skip event
ids they have seen, and re-derived decisions carry the same ids as before (the store
and downstream consumers drop them). Batching amortises produce and commit round trips
over up to ``max_records`` events (the hot path is per batch, not per message).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from ledgerlet_bus.api import Bus, Record, TopicPartition
from ledgerlet_core.contracts.envelope import decode_envelope, encode_envelope
from ledgerlet_services.base import Service
from ledgerlet_services.dedupe import RecentIds
from ledgerlet_services.emitter import Emitter, Outgoing

log = logging.getLogger(__name__)


@dataclass
class RunnerStats:
    events_in: int = 0
    events_out: int = 0
    duplicates: int = 0
    batches: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


class ServiceRunner:
    def __init__(self, bus: Bus, service: Service, *, group: str | None = None, max_records: int = 2000) -> None:
        self.bus = bus
        self.service = service
        self.group = group or service.name
        self.max_records = max_records
        self.stats = RunnerStats()
        self._seen = RecentIds()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        consumer = self.bus.consumer(self.group, self.service.topics)
        producer = self.bus.producer()
        try:
            while not self._stop.is_set():
                records = await consumer.getmany(timeout=0.2, max_records=self.max_records)
                if not records:
                    continue
                outgoing = self.handle_records(records)
                for o in outgoing:
                    await producer.send(o.topic, encode_envelope(o.envelope), key=o.key)
                await producer.flush()
                self.stats.events_out += len(outgoing)
                await consumer.commit(next_offsets(records))
        finally:
            await producer.close()
            await consumer.close()

    def handle_records(self, records: list[Record]) -> list[Outgoing]:
        self.stats.batches += 1
        outgoing: list[Outgoing] = []
        for rec in records:
            env = decode_envelope(rec.value)
            if self._seen.seen(env.id):
                self.stats.duplicates += 1
                continue
            self.stats.events_in += 1
            self.stats.by_type[env.type] = self.stats.by_type.get(env.type, 0) + 1
            emitter = Emitter(env, self.service.rank)
            self.service.handle(env, emitter)
            outgoing.extend(emitter.out)
        return outgoing


def next_offsets(records: list[Record]) -> dict[TopicPartition, int]:
    offsets: dict[TopicPartition, int] = {}
    for r in records:
        tp = (r.topic, r.partition)
        if r.offset + 1 > offsets.get(tp, 0):
            offsets[tp] = r.offset + 1
    return offsets
