"""A service's traffic with the bus: a batch read, what handling it emitted sent and
acknowledged, then its offsets committed. Offsets are committed only after everything the
batch produced is acknowledged, so a crash at any point loses nothing: the batch is
delivered again, and what it emits again carries the ids it had."""

from __future__ import annotations

import asyncio
import logging

from ledgerlet_bus.api import BusUnavailable, CommitRejected, Consumer, Producer, Record, TopicPartition
from ledgerlet_bus.retry import with_backoff
from ledgerlet_core.contracts.envelope import encode_envelope
from ledgerlet_services.runtime.outgoing import Outgoing

log = logging.getLogger(__name__)


async def poll(consumer: Consumer, max_records: int, who: str) -> list[Record]:
    """One batch, or none: while the broker is away, say so and wait a little."""
    try:
        return await consumer.getmany(timeout=0.2, max_records=max_records)
    except BusUnavailable as exc:
        log.warning("%s: %s", who, exc)
        await asyncio.sleep(0.5)
        return []


async def stream(producer: Producer, chunk: list[Outgoing], streamed: set[int]) -> None:
    """Send part of a batch's output early (acknowledged with the rest, by the flush);
    ``streamed`` notes what was sent. While the bus is away it is left to :func:`publish`."""
    try:
        for o in chunk:
            await producer.send(o.topic, encode_envelope(o.envelope), key=o.key, headers=o.headers)
            streamed.add(id(o))
    except BusUnavailable:
        pass


async def publish(
    producer: Producer, outgoing: list[Outgoing], streamed: set[int] | None, *, who: str, stop: asyncio.Event
) -> bool:
    """Send what was not streamed and flush; while the bus is away, send everything again
    and again. False if ``stop`` was set first (the batch is then not committed, and is
    handled again)."""
    if not outgoing and not streamed:
        return True
    first = [o for o in outgoing if id(o) not in (streamed or ())]
    tries = 0

    async def attempt() -> None:
        nonlocal tries
        tries += 1
        for o in first if tries == 1 else outgoing:
            await producer.send(o.topic, encode_envelope(o.envelope), key=o.key, headers=o.headers)
        await producer.flush()

    publishing = asyncio.create_task(
        with_backoff(f"{who}: publishing {len(outgoing)} events", attempt, retry_on=(BusUnavailable,))
    )
    stopping = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([publishing, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if publishing in done:
        publishing.result()
        return True
    publishing.cancel()
    return False


#: seconds a commit may still take once the runner is told to stop (the broker may be
#: away, and the commit would retry for ever: compose gives a service 10 s on SIGTERM)
COMMIT_PATIENCE_ONCE_STOPPED = 2.0


async def commit(
    consumer: Consumer, offsets: dict[TopicPartition, int], who: str, *, stop: asyncio.Event | None = None
) -> bool | None:
    """Commit ``offsets``; False if the group refused (the records come again; their ids
    are known by then); None if ``stop`` was set and the commit had not succeeded
    :data:`COMMIT_PATIENCE_ONCE_STOPPED` seconds later (left uncommitted: the records come
    again to whoever reads them next, and their ids are known by then)."""
    committing = asyncio.ensure_future(consumer.commit(offsets))
    patience = asyncio.ensure_future(_stopped_for(stop, COMMIT_PATIENCE_ONCE_STOPPED)) if stop is not None else None
    try:
        await asyncio.wait([committing, *([patience] if patience else [])], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if patience is not None:
            patience.cancel()
    if not committing.done():
        committing.cancel()
        log.warning("%s: stopping before the broker took the commit: the batch comes again", who)
        return None
    try:
        committing.result()
    except CommitRejected as exc:
        log.warning("%s: commit rejected (%s)", who, exc)
        return False
    return True


async def _stopped_for(stop: asyncio.Event, seconds: float) -> None:
    await stop.wait()
    await asyncio.sleep(seconds)
