"""Event recorder: every event on every topic, appended to the event store.

It commits a batch's offsets only once the store has it, and the store drops event ids
it already holds, so redelivery after a crash or a restart of the store loses nothing
and duplicates nothing. While the database is away it retries the same batch with
backoff and consumes nothing new.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import msgspec

from ledgerlet_bus.api import Bus
from ledgerlet_bus.retry import Stopped, with_backoff
from ledgerlet_core.contracts.envelope import Envelope, decode_envelope
from ledgerlet_core.contracts.internal import compact_observation_json
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, stored_observed
from ledgerlet_services.runtime.causal_buffer import next_offsets
from ledgerlet_services.runtime.publishing import commit, poll
from ledgerlet_services.runtime.shell import SharedEnvelopes
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_services.runtime.topic_specs import ALL_TOPICS
from ledgerlet_store.contract import StoreError, StoreUnavailable

log = logging.getLogger(__name__)

NAME = "event-recorder"

#: how long a stopping recorder waits for the write under way before it gives up on it
STOP_GRACE = 30.0

#: seconds a run waits for a store that refuses every write before it fails (``ledgerlet
#: run --store-wait``): a database restart is ridden out, a store that stays away ends it
DEFAULT_STORE_WAIT: Final = 60.0

#: what a database restart looks like from here (the store says so: contract.StoreUnavailable)
_STORE_AWAY = (StoreUnavailable, asyncio.TimeoutError)


class StoreUnwritable(RuntimeError):
    """The store took no batch for the recorder's whole ``store_wait``."""


class EventSink(Protocol):
    """Where the recorder puts what it consumes: the event store, or a list (replay). A
    sink whose database is away raises StoreUnavailable: the recorder tries again."""

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int: ...


class RecorderRunner:
    name = NAME

    def __init__(
        self,
        bus: Bus,
        store: EventSink,
        *,
        group: str = NAME,
        max_records: int = 5000,
        full_observations: bool = False,
        telemetry: Telemetry | None = None,
        envelopes: SharedEnvelopes | None = None,
        store_wait: float | None = None,
    ) -> None:
        """``envelopes``: decoding shared with the loops of an embedded run.
        ``store_wait``: seconds of failed appends after which the recorder gives up
        (:class:`StoreUnwritable`); None, as a service does, waits for ever."""
        self.store_wait = store_wait
        self._decode: Callable[[bytes, str], Envelope] = (
            envelopes.decode if envelopes is not None else lambda value, _: decode_envelope(value)
        )
        self.full_observations = full_observations
        self.bus = bus
        self.store = store
        self.group = group
        self.max_records = max_records
        self.telemetry = telemetry or Telemetry.disabled()
        self.appended = 0
        self.received = 0
        self._stop = asyncio.Event()
        #: called on every turn of the loop (a liveness signal)
        self.heartbeat: Callable[[], None] | None = None
        self.ready = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        consumer = self.bus.consumer(self.group, ALL_TOPICS, whole=True)
        self.ready.set()
        try:
            while not self._stop.is_set():
                if self.heartbeat is not None:
                    self.heartbeat()
                records = await poll(consumer, self.max_records, self.name)
                if not records:
                    continue
                decoded = [(self._decode(r.value, r.topic), r.headers) for r in records]
                envelopes = [stored_form(env, full=self.full_observations) for env, _ in decoded]
                self.received += len(envelopes)
                stored = await self._append(envelopes)
                if stored is None:
                    return  # stopping before the store took the batch: it is not committed
                self.appended += stored
                self.telemetry.stored(self.name, decoded)
                if await commit(consumer, next_offsets(records), self.name, stop=self._stop) is None:
                    return  # stopping while the broker is away: the batch comes again (stored once)
        finally:
            await consumer.close()

    async def _append(self, envelopes: list[Envelope]) -> int | None:
        """Append, retrying while the database is away; None if told to stop before the
        store took the batch. A write under way is let finish (for at most
        ``STOP_GRACE`` seconds): one cut off half way can leave its connection unusable
        and closing the store would then wait for ever."""
        try:
            return await append_waiting(self.store, envelopes, who=self.name, stop=self._stop, wait=self.store_wait)
        except Stopped:
            return None

    async def stopped(self, task: asyncio.Task[None]) -> None:
        """Stop, and wait for the write under way to finish (cancelled after ``STOP_GRACE``)."""
        self.stop()
        _, pending = await asyncio.wait([task], timeout=STOP_GRACE)
        for t in pending:
            t.cancel()


async def append_waiting(
    store: EventSink, envelopes: Sequence[Envelope], *, who: str, stop: asyncio.Event, wait: float | None
) -> int:
    """Append, retrying with backoff while the database is away, for at most ``wait``
    seconds (None: for ever), then :class:`StoreUnwritable`; :class:`Stopped` if told to
    ``stop`` before the store took them."""
    try:
        return await with_backoff(
            f"{who}: storing {len(envelopes)} events",
            lambda: store.append_batch(envelopes),
            retry_on=_STORE_AWAY,
            stop=stop,
            deadline=wait,
        )
    except _STORE_AWAY as exc:  # (only past the deadline: before it, with_backoff retries)
        said = exc.reason if isinstance(exc, StoreError) else str(exc).strip()
        reason = said.splitlines()[0] if said else type(exc).__name__
        raise StoreUnwritable(f"the store took nothing for {wait:g} s: {reason}") from exc


def stored_form(env: Envelope, *, full: bool) -> Envelope:
    """How an event is stored: derived observations without their pods' stats unless the
    run keeps them whole (``full``: single observations; a batch says so itself)."""
    if env.type == OBSERVED_BATCH:
        stored = stored_observed(env.data)
        return env if stored is None else msgspec.structs.replace(env, data=msgspec.Raw(stored))
    if full or env.type != "NodeObserved":
        return env
    compact = compact_observation_json(env.data)
    if compact is None:
        return env
    return msgspec.structs.replace(env, data=msgspec.Raw(compact))
