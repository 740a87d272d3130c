"""The append-only event store: SQLite (embedded default) or PostgreSQL, one API.

* Every event gets a global ``position`` and a per-stream ``version``.
* ``append`` to one stream can state the version it expects (optimistic concurrency).
* Appends are idempotent by event id: an event already stored is skipped, so a
  redelivered or re-derived event never becomes a duplicate.
* Reads: by stream, by position, by type and virtual-time range, a run's decisions in
  decision order.
Appenders are serialised (a table lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) so
positions become visible in order and concurrent appenders cannot interleave versions.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]
import msgspec
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from ledgerlet_core.contracts.batch import BATCH, BATCHABLE
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import INTERNAL_TYPES
from ledgerlet_core.contracts.observed import OBSERVED, OBSERVED_BATCH
from ledgerlet_core.contracts.registry import DECISION, INTERNAL
from ledgerlet_store import snapshots
from ledgerlet_store.batches import (
    expanded,
    in_batches,
    in_decision_order,
    member_rows,
    observation_rows,
    with_batches,
)
from ledgerlet_store.batches import order_key as order_key
from ledgerlet_store.dsn import async_url, describe
from ledgerlet_store.read_only import newest_revision, read_only_url
from ledgerlet_store.schema import batch_members, events, observation_members
from ledgerlet_store.snapshots import StoredSnapshot

MIGRATIONS = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 7_420_117  # advisory lock id: one migrator at a time
_ID_CHUNK = 1000
_STREAM_VERSIONS_KEPT = 1_000_000
_CAUSES = msgspec.json.Encoder()


#: a run that has not ended and has stored nothing for this long was cut off, not slow
ABANDONED_AFTER: Final = timedelta(minutes=2)

COMPLETED: Final = "completed"
FAILED: Final = "failed"
RUNNING: Final = "running"
ABANDONED: Final = "abandoned"


@dataclass(frozen=True, slots=True)
class RunState:
    """A run's place in its lifecycle: ``completed`` or ``failed`` (its ``RunEnded``
    says), else ``running`` or, with nothing stored for :data:`ABANDONED_AFTER`,
    ``abandoned`` (a killed run: what is stored is a prefix of it)."""

    run: str
    #: when its ScenarioStarted was recorded
    started_at: datetime
    status: str
    reason: str = ""

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED


class UnknownRun(LookupError):
    """No run, or more than one, answers to the name given."""


#: how many runs an ambiguous prefix names in its error
_SHOWN = 5


def pick_run(states: Sequence[RunState], run: str | None) -> RunState:
    """The run a reader means, from ``states`` (newest first): ``None`` or ``latest`` is
    the newest *completed* run; a full id is that run; otherwise a prefix that names one
    run only (as git and docker take ids: run ids are 32 hex digits)."""
    if not states:
        raise UnknownRun("the store holds no runs")
    if run in (None, "", "latest"):
        done = next((s for s in states if s.completed), None)
        if done is None:
            raise UnknownRun(f"the store holds no completed run (newest: {states[0].run}, {states[0].status})")
        return done
    assert run is not None
    exact = next((s for s in states if s.run == run), None)
    if exact is not None:
        return exact
    matches = [s for s in states if s.run.startswith(run)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(s.run for s in matches[:_SHOWN]) + (", ..." if len(matches) > _SHOWN else "")
        raise UnknownRun(f"{run!r} is the start of {len(matches)} runs ({shown}): give more of it")
    raise UnknownRun(f"no run {run!r} (newest: {states[0].run})")


class StoreError(RuntimeError):
    pass


class WrongExpectedVersion(StoreError):
    """The stream is not at the version the appender expected (someone else wrote)."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at version {actual}, expected {expected}")
        self.stream = stream
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True, slots=True)
class StoredEvent:
    position: int
    version: int
    recorded_at: datetime
    envelope: Envelope


def _decode_order(key: str) -> list[int]:
    return list(map(int, key.split("."))) if key else []


def stream_id(run: str, stream: str) -> str:
    return f"{run}:{stream}"


class EventStore:
    """Open with :meth:`open`; close with :meth:`close` (or ``async with``)."""

    def __init__(self, engine: AsyncEngine, dsn: str) -> None:
        self.engine = engine
        self.dsn = dsn
        self.dialect = engine.dialect.name
        self._lock = asyncio.Lock()
        #: the version of each stream this store last wrote (the fast appends)
        self._stream_versions: OrderedDict[str, int] = OrderedDict()
        self._byte_ordered: bool | None = None
        #: a DateTime as the dialect's own bind processor writes it (SQLite: its text form)
        self._time_in_db: Callable[[Any], Any] | None = events.c.recorded_at.type.dialect_impl(
            engine.dialect
        ).bind_processor(engine.dialect)

    # -- lifecycle ---------------------------------------------------------------
    @classmethod
    async def open(cls, dsn: str, *, migrate: bool = True, reading: bool = False) -> EventStore:
        """``reading``: the caller only reads, so a SQLite file that cannot be written
        is opened read-only (:mod:`ledgerlet_store.read_only`) rather than refused."""
        url = async_url(dsn)
        frozen = read_only_url(dsn) if reading else None
        if frozen is not None:
            url, migrate = frozen, False
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 60}
        else:
            kwargs["pool_size"] = 5
            kwargs["max_overflow"] = 5
            kwargs["pool_pre_ping"] = True  # a database restart leaves dead connections in the pool
            # asyncpg prepares statements; after five runs PostgreSQL may switch to a generic
            # plan, and for the id/version look-ups on a fast-growing, not-yet-analysed table
            # that plan is a sequential scan (appends fell from 20k/s to 600/s at 50k rows).
            kwargs["connect_args"] = {"server_settings": {"plan_cache_mode": "force_custom_plan"}}
        engine = create_async_engine(url, **kwargs)
        if url.startswith("sqlite"):
            _sqlite_pragmas(engine)
        store = cls(engine, dsn)
        if migrate:
            await store.migrate()
        elif frozen is not None:
            await store._check_revision()
        return store

    async def _check_revision(self) -> None:
        """A store opened without migrating must already have this code's schema."""
        try:
            async with self.engine.connect() as conn:
                found = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar()
        except Exception:
            await self.close()
            raise
        if found != newest_revision():
            await self.close()
            raise StoreError(
                f"{self.describe()} holds schema {found or 'none'}, this ledgerlet reads {newest_revision()}; "
                "it cannot be written, so it cannot be upgraded (copy it somewhere writable)"
            )

    async def close(self) -> None:
        await self.engine.dispose()

    async def __aenter__(self) -> EventStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def describe(self) -> str:
        return describe(self.dsn)

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (serialised across processes: an
        advisory lock on PostgreSQL; on SQLite the write lock taken first, ``BEGIN
        IMMEDIATE``, so a second process waits instead of failing with "database is
        locked" when both read the schema's version and then both try to write)."""
        async with self.engine.execution_options(ledgerlet_write=True).begin() as conn:
            if self.dialect == "postgresql":
                await conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})"))
            await conn.run_sync(_upgrade)

    # -- appending ---------------------------------------------------------------
    async def append(
        self, stream: str, envelopes: Sequence[Envelope], *, expected_version: int | None = None
    ) -> list[int]:
        """Append to one stream; returns the positions (existing ones for duplicates).

        ``expected_version`` is the stream's version before this append (0 for a new
        stream); a mismatch raises :class:`WrongExpectedVersion` unless every event is
        already stored (a retried append succeeds).
        """
        run = envelopes[0].run if envelopes else ""
        sid = stream_id(run, stream)
        async with self._transaction() as conn:
            existing = await self._existing(conn, [e.id for e in envelopes])
            fresh = [e for e in envelopes if e.id not in existing]
            current = await self._versions(conn, [sid])
            version = current.get(sid, 0)
            if not fresh:
                return [existing[e.id] for e in envelopes]
            if expected_version is not None and version != expected_version:
                raise WrongExpectedVersion(stream, expected_version, version)
            rows = [_row(e, sid, version + i + 1) for i, e in enumerate(fresh)]
            await conn.execute(events.insert(), rows)
            positions = await self._existing(conn, [e.id for e in envelopes])
            return [positions[e.id] for e in envelopes]

    async def append_batch(self, envelopes: Sequence[Envelope]) -> int:
        """Append events of many streams in one transaction; returns how many were new."""
        if not envelopes:
            return 0
        if self.dialect == "postgresql":
            return await self._append_batch_copy(envelopes)
        try:
            return await self._insert_batch(envelopes, careful=False)
        except sa.exc.IntegrityError:
            self._stream_versions.clear()
            return await self._insert_batch(envelopes, careful=True)

    async def _insert_batch(self, envelopes: Sequence[Envelope], *, careful: bool) -> int:
        """SQLite, the embedded recorder's hot path: optimistically first, as PostgreSQL's
        COPY (:meth:`_append_batch_copy`): stored ids are not looked up and stream versions
        come from what this store wrote last; the unique constraints catch a redelivered
        event or a stream another writer moved on, and then the batch is appended again
        with everything looked up (``careful``)."""
        known = self._stream_versions
        async with self._transaction() as conn:
            seen: set[str] = set(await self._existing(conn, [e.id for e in envelopes])) if careful else set()
            fresh: list[Envelope] = []
            for e in envelopes:
                if e.id not in seen:
                    seen.add(e.id)
                    fresh.append(e)
            if not fresh:
                return 0
            sids = [stream_id(e.run, e.stream) for e in fresh]
            streams = set(sids)
            versions = {} if careful else {sid: known[sid] for sid in streams if sid in known}
            unknown = sorted(streams - versions.keys())
            if unknown:
                versions.update(await self._versions(conn, unknown))
            # Plain tuples through the driver's executemany: SQLAlchemy's per-row parameter
            # handling cost as much as SQLite's own insert on the embedded run's hot path.
            recorded_at = self._sqlite_time(datetime.now(UTC))
            rows = []
            for e, sid in zip(fresh, sids, strict=True):
                v = versions.get(sid, 0) + 1
                versions[sid] = v
                row = _copy_row(e)
                rows.append((*row[:3], v, *row[3:], recorded_at))
            await conn.exec_driver_sql(_SQLITE_INSERT, rows)
            await self._index_members(conn, [e for e in fresh if e.type in _INDEXED_BATCHES])
        # committed: remember where the streams are
        known.update(versions)
        while len(known) > _STREAM_VERSIONS_KEPT:
            known.popitem(last=False)
        return len(rows)

    async def _append_batch_copy(self, envelopes: Sequence[Envelope]) -> int:
        """PostgreSQL, the recorder's hot path: COPY, several times faster than INSERT.

        Optimistically first: stream versions come from what this store wrote last
        (looked up only for streams it has not seen), and stored ids are not looked up
        at all; the unique constraints on ``event_id`` and ``(stream, version)`` catch a
        redelivered event or a stream another writer moved on, and then the batch is
        appended again with everything looked up."""
        try:
            return await self._copy_batch(envelopes, careful=False)
        except asyncpg.UniqueViolationError:
            self._stream_versions.clear()
            return await self._copy_batch(envelopes, careful=True)

    async def _copy_batch(self, envelopes: Sequence[Envelope], *, careful: bool) -> int:
        # Rows are built before the write lock is taken, so a second appender's preparation
        # overlaps the first one's COPY; under the lock only the versions are filled in.
        rows = [_copy_row(e) for e in envelopes]
        versions: dict[str, int] = {}
        async with self._transaction() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            sids = {row[2] for row in rows}
            seen: set[str] = set()
            known = self._stream_versions
            if careful:
                ids = list(dict.fromkeys(row[0] for row in rows))
                found = await raw.fetch("SELECT event_id FROM events WHERE event_id = ANY($1::text[])", ids)
                seen = {r[0] for r in found}
                unknown = sorted(sids)
            else:
                versions = {sid: known[sid] for sid in sids if sid in known}
                unknown = sorted(sids - versions.keys())
            if unknown:
                found = await raw.fetch(
                    "SELECT stream, max(version) FROM events WHERE stream = ANY($1::text[]) GROUP BY stream", unknown
                )
                versions.update({r[0]: r[1] for r in found})
            now = datetime.now(UTC)
            records = []
            for row in rows:
                if row[0] in seen:
                    continue
                seen.add(row[0])
                sid = row[2]
                v = versions.get(sid, 0) + 1
                versions[sid] = v
                records.append((*row[:3], v, *row[3:], now))
            if records:
                await raw.copy_records_to_table("events", records=records, columns=_COPY_COLUMNS)
                stored = {r[0] for r in records}
                await self._index_members(conn, [e for e in envelopes if e.type in _INDEXED_BATCHES and e.id in stored])
        # committed: remember where the streams are
        known.update(versions)
        while len(known) > _STREAM_VERSIONS_KEPT:
            known.popitem(last=False)
        return len(records)

    def _transaction(self) -> Any:
        return _Transaction(self)

    def _sqlite_time(self, at: datetime) -> Any:
        """``at`` as the SQLite dialect stores a DateTime (its own text form, as every
        other row has it: the driver's default adapter would write another)."""
        return self._time_in_db(at) if self._time_in_db is not None else at

    async def _index_members(self, conn: AsyncConnection, batches: Sequence[Envelope]) -> None:
        """List the members of batches just stored (``batch_members``, ``observation_members``),
        in the same transaction."""
        if not batches:
            return
        positions = await self._existing(conn, [b.id for b in batches])
        unique = list({b.id: b for b in batches}.values())
        inputs = member_rows([(b, positions[b.id]) for b in unique if b.type == BATCH])
        observed = observation_rows([(b, positions[b.id]) for b in unique if b.type == OBSERVED_BATCH])
        postgres = self.dialect == "postgresql"
        raw: Any = (await conn.get_raw_connection()).driver_connection if postgres else None
        if inputs:  # (not for batches of usage entries only)
            records = [tuple(r[c] for c in _MEMBER_COLUMNS) for r in inputs]
            if postgres:
                await raw.copy_records_to_table("batch_members", records=records, columns=_MEMBER_COLUMNS)
            else:  # (plain tuples through the driver: a fleet's half a million pods)
                await conn.exec_driver_sql(_SQLITE_MEMBER_INSERT, records)
        if observed:
            if postgres:
                await raw.copy_records_to_table("observation_members", records=observed, columns=_OBSERVED_COLUMNS)
            else:
                await conn.exec_driver_sql(_SQLITE_OBSERVED_INSERT, observed)

    async def _existing(self, conn: AsyncConnection, ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), _ID_CHUNK):
            chunk = unique[i : i + _ID_CHUNK]
            result = await conn.execute(
                sa.select(events.c.event_id, events.c.position).where(events.c.event_id.in_(chunk))
            )
            found.update({row.event_id: row.position for row in result})
        return found

    async def _versions(self, conn: AsyncConnection, sids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(sids), _ID_CHUNK):
            chunk = sids[i : i + _ID_CHUNK]
            result = await conn.execute(
                sa.select(events.c.stream, sa.func.max(events.c.version))
                .where(events.c.stream.in_(chunk))
                .group_by(events.c.stream)
            )
            out.update({row[0]: row[1] for row in result})
        return out

    # -- reading -----------------------------------------------------------------
    async def read_stream(
        self, run: str, stream: str, *, from_version: int = 1, limit: int | None = None
    ) -> list[StoredEvent]:
        q = (
            sa.select(events)
            .where(events.c.stream == stream_id(run, stream), events.c.version >= from_version)
            .order_by(events.c.version)
        )
        return await self._fetch(q.limit(limit) if limit else q)

    async def stream_version(self, run: str, stream: str) -> int:
        async with self.engine.connect() as conn:
            return (await self._versions(conn, [stream_id(run, stream)])).get(stream_id(run, stream), 0)

    async def read_all(self, *, from_position: int = 1, limit: int = 1000) -> list[StoredEvent]:
        q = sa.select(events).where(events.c.position >= from_position).order_by(events.c.position).limit(limit)
        return await self._fetch(q)

    async def read_by_type(
        self,
        types: Iterable[str],
        *,
        run: str | None = None,
        t_from: int | None = None,
        t_to: int | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        wanted = list(types)
        q = sa.select(events).where(events.c.type.in_(with_batches(wanted)))
        if not any(t in INTERNAL_TYPES for t in wanted):
            # lets the partial index on (run, type, t) serve it (internal events are not in it)
            q = q.where(events.c.kind != sa.literal(INTERNAL, literal_execute=True))
        if run is not None:
            q = q.where(events.c.run == run)
        q = _window(q, t_from, t_to)
        q = q.order_by(events.c.t, events.c.order_key, events.c.position)
        rows = await self._fetch(q.limit(limit) if limit else q)
        if not in_batches(wanted):
            return rows
        found = in_decision_order(expanded(rows, lambda e: e.type in wanted))
        return found[:limit] if limit else found

    async def read_run(self, run: str, *, kind: str | None = None) -> list[StoredEvent]:
        """A run's events in decision order (virtual time, then causal order)."""
        q = sa.select(events).where(events.c.run == run)
        if kind is not None:
            # a literal, so SQLite can see that the partial decisions index applies
            q = q.where(events.c.kind == sa.literal(kind, literal_execute=True))
        rows = await self._fetch(q.order_by(events.c.t, events.c.order_key))
        return rows if kind == DECISION else in_decision_order(expanded(rows))

    async def iter_run(
        self,
        run: str,
        *,
        batch: int = 5000,
        members: bool = True,
        kinds: Sequence[str] = (),
        types_only_of: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> AsyncIterator[StoredEvent]:
        """Stream a run's events by position, in batches (for replay over big stores); of
        some ``kinds`` only, if given. ``members=False`` hands out stored input batches whole
        (for a reader that feeds them to the loops, which read their members themselves).
        ``types_only_of=(types, nodes)``: events of those types only if about one of
        those nodes (or about no node)."""
        last = 0
        while True:
            q = sa.select(events).where(events.c.run == run, events.c.position > last)
            if kinds:
                q = q.where(events.c.kind.in_(list(kinds)))
            if types_only_of is not None:
                types, nodes = types_only_of
                q = q.where(
                    sa.or_(events.c.type.not_in(list(types)), events.c.node.is_(None), events.c.node.in_(list(nodes)))
                )
            q = q.order_by(events.c.position).limit(batch)
            rows = await self._fetch(q)
            if not rows:
                return
            for r in expanded(rows) if members else rows:
                yield r
            last = rows[-1].position

    async def get_events(self, ids: Sequence[str]) -> list[StoredEvent]:
        """Events by id (a decision's causes), in position order; unknown ids are left out."""
        out: list[StoredEvent] = []
        wanted = list(dict.fromkeys(ids))
        for i in range(0, len(wanted), 500):
            q = sa.select(events).where(events.c.event_id.in_(wanted[i : i + 500]))
            out.extend(await self._fetch(q))
        missing = set(wanted) - {e.envelope.id for e in out}
        for table in (batch_members, observation_members):  # members of stored batches
            if not missing:
                break
            chunk = sorted(missing)
            for i in range(0, len(chunk), 500):
                positions = sa.select(table.c.position).where(table.c.event_id.in_(chunk[i : i + 500]))
                batches = await self._fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
                found = expanded(batches, _id_in(missing))
                out.extend(found)
                missing -= {e.envelope.id for e in found}
        return sorted(out, key=lambda e: e.position)

    async def list_decisions(
        self,
        run: str,
        *,
        types: Sequence[str] = (),
        node: str | None = None,
        pod: str | None = None,
        t_from: int | None = None,
        t_to: int | None = None,
        after: tuple[int, str, int] | None = None,
        limit: int = 100,
    ) -> list[StoredEvent]:
        """A page of a run's decisions in decision order, after the keyset cursor
        ``(t, order_key, position)`` of the previous page's last decision."""
        q = sa.select(events).where(events.c.run == run, events.c.kind == sa.literal(DECISION, literal_execute=True))
        if types:
            q = q.where(events.c.type.in_(list(types)))
        if node is not None:
            q = q.where(events.c.node == node)
        if pod is not None:
            q = q.where(events.c.pod == pod)
        q = _window(q, t_from, t_to)
        if after is not None:
            t, key, position = after
            q = q.where(
                sa.tuple_(events.c.t, events.c.order_key, events.c.position)
                > sa.tuple_(sa.literal(t), sa.literal(key), sa.literal(position))
            )
        q = q.order_by(events.c.t, events.c.order_key, events.c.position).limit(limit)
        return await self._fetch(q)

    async def read_pod(self, run: str, pod: str) -> list[StoredEvent]:
        """Everything recorded about one pod (``namespace/name``), in decision order."""
        q = sa.select(events).where(events.c.run == run, events.c.pod == pod)
        rows = await self._fetch(q.order_by(events.c.t, events.c.order_key))
        members = await self._members(run, lambda e: e.pod == pod, batch_members.c.pod == pod)
        return in_decision_order([*rows, *members]) if members else rows

    async def pods_named(self, run: str, name: str) -> list[str]:
        """The pods (``namespace/name``) of ``run`` called ``name``, in any namespace: what a
        bare pod name may mean."""
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found: set[str] = set()
        async with self.engine.connect() as conn:
            for table in (events, batch_members):
                q = sa.select(table.c.pod).where(table.c.run == run, table.c.pod.like(f"%/{escaped}", escape="\\"))
                found.update(row[0] for row in await conn.execute(q.distinct()))
        return sorted(p for p in found if p.rsplit("/", 1)[-1] == name)  # (SQLite's LIKE ignores case)

    # -- reads for the Kubernetes API facade: one page of objects at a time -----------------
    async def pod_keys(
        self, run: str, *, after: str | None = None, prefix: str | None = None, limit: int = 500
    ) -> list[str]:
        """The pods (``namespace/name``) a run holds anything about, in key order after
        ``after``; with ``prefix`` (``namespace/``) those of one namespace. One page, from
        the pod index (a listing never reads every pod of a large run at once)."""
        q = sa.select(events.c.pod).where(events.c.run == run, events.c.pod.is_not(None))
        if after is not None:
            q = q.where(events.c.pod > after)
        if prefix:
            q = q.where(events.c.pod >= prefix, sa.func.substr(events.c.pod, 1, len(prefix)) == prefix)
            if await self.byte_ordered():  # the namespace's keys end where the next character begins
                q = q.where(events.c.pod < prefix[:-1] + chr(ord(prefix[-1]) + 1))
        q = q.distinct().order_by(events.c.pod).limit(limit)
        m = sa.select(batch_members.c.pod).where(batch_members.c.run == run)
        if after is not None:
            m = m.where(batch_members.c.pod > after)
        if prefix:
            m = m.where(batch_members.c.pod >= prefix, sa.func.substr(batch_members.c.pod, 1, len(prefix)) == prefix)
            if await self.byte_ordered():
                m = m.where(batch_members.c.pod < prefix[:-1] + chr(ord(prefix[-1]) + 1))
        m = m.distinct().order_by(batch_members.c.pod).limit(limit)
        async with self.engine.connect() as conn:  # (the pods in events, and those only in batches)
            keys = {row[0] for row in await conn.execute(q)} | {row[0] for row in await conn.execute(m)}
        return sorted(keys)[:limit]

    async def pods_on_node(self, run: str, node: str) -> list[str]:
        """Every pod a run bound to, or refused on, ``node`` (``spec.nodeName`` listings)."""
        q = (
            sa.select(events.c.pod)
            .where(
                events.c.run == run,
                events.c.node == node,
                events.c.kind != sa.literal(INTERNAL, literal_execute=True),
                events.c.pod.is_not(None),
            )
            .distinct()
            .order_by(events.c.pod)
        )
        async with self.engine.connect() as conn:
            keys = {row[0] for row in await conn.execute(q)}
        batches = sa.select(events).where(
            events.c.run == run,
            events.c.node == node,
            events.c.kind != sa.literal(INTERNAL, literal_execute=True),
            events.c.type == sa.literal(BATCH, literal_execute=True),
        )
        keys.update(e.envelope.pod for e in expanded(await self._fetch(batches)) if e.envelope.pod is not None)
        return sorted(keys)

    async def read_pods(self, run: str, pods: Sequence[str], *, t_to: int | None = None) -> list[StoredEvent]:
        """Everything recorded about some pods up to ``t_to``, by pod, in decision order."""
        out: list[StoredEvent] = []
        wanted = list(dict.fromkeys(pods))
        for i in range(0, len(wanted), 500):
            q = sa.select(events).where(
                events.c.run == run, events.c.pod.is_not(None), events.c.pod.in_(wanted[i : i + 500])
            )
            q = _window(q, None, t_to).order_by(events.c.pod, events.c.t, events.c.order_key)
            out.extend(await self._fetch(q))
            chunk = set(wanted[i : i + 500])
            out.extend(await self._members(run, _pod_in(chunk), batch_members.c.pod.in_(chunk), t_to=t_to))
        return sorted(out, key=lambda e: (e.envelope.pod or "", e.envelope.t, e.envelope.order))

    async def read_nodes(
        self, run: str, nodes: Sequence[str], *, types: Sequence[str], t_to: int | None = None
    ) -> list[StoredEvent]:
        """Some nodes' own inputs and decisions of ``types`` up to ``t_to`` (not those about
        their pods, which carry the node too), in decision order."""
        out: list[StoredEvent] = []
        wanted = list(dict.fromkeys(nodes))
        for i in range(0, len(wanted), 500):
            q = sa.select(events).where(
                events.c.run == run,
                events.c.node.in_(wanted[i : i + 500]),
                events.c.kind != sa.literal(INTERNAL, literal_execute=True),
                events.c.type.in_(list(types)),
                events.c.pod.is_(None),
            )
            out.extend(await self._fetch(_window(q, None, t_to).order_by(events.c.t, events.c.order_key)))
        return sorted(out, key=lambda e: (e.envelope.t, order_key(e.envelope.order), e.position))

    async def read_streams(
        self, run: str, streams: Sequence[str], *, types: Sequence[str], t_to: int | None = None
    ) -> list[StoredEvent]:
        """Events of ``types`` on some streams up to ``t_to`` (internal ones too: a node's
        published status), in decision order."""
        out: list[StoredEvent] = []
        wanted = [stream_id(run, s) for s in dict.fromkeys(streams)]
        for i in range(0, len(wanted), 500):
            q = sa.select(events).where(events.c.stream.in_(wanted[i : i + 500]), events.c.type.in_(list(types)))
            out.extend(await self._fetch(_window(q, None, t_to)))
        return sorted(out, key=lambda e: (e.envelope.t, order_key(e.envelope.order), e.position))

    async def read_stream_range(
        self, run: str, prefix: str, *, types: Sequence[str], t_to: int | None = None
    ) -> list[StoredEvent]:
        """Events of ``types`` on every stream whose name starts with ``prefix`` (the
        ``object/PriorityClass/`` streams), up to ``t_to``, in decision order."""
        low = stream_id(run, prefix)
        q = sa.select(events).where(
            events.c.stream >= low,
            sa.func.substr(events.c.stream, 1, len(low)) == low,
            events.c.type.in_(list(types)),
        )
        if await self.byte_ordered():
            q = q.where(events.c.stream < low[:-1] + chr(ord(low[-1]) + 1))
        return await self._fetch(_window(q, None, t_to).order_by(events.c.t, events.c.order_key, events.c.position))

    async def list_run_events(
        self,
        run: str,
        *,
        types: Sequence[str],
        after: tuple[int, str, int] | None = None,
        t_to: int | None = None,
        scope: str = "decisions",
        limit: int = 500,
    ) -> list[StoredEvent]:
        """A page of a run's events of ``types`` in decision order after a keyset cursor
        ``(t, order_key, position)``, up to ``t_to``. ``scope`` says which index serves it:
        ``decisions`` (the decisions index), ``inputs`` (inputs by type) or ``pods``
        (events about a pod, internal ones too: through the pod index)."""
        q = sa.select(events).where(events.c.run == run, events.c.type.in_(list(types)))
        if scope == "decisions":
            q = q.where(events.c.kind == sa.literal(DECISION, literal_execute=True))
        elif scope == "inputs":
            q = q.where(events.c.kind != sa.literal(INTERNAL, literal_execute=True))
        else:
            q = q.where(events.c.pod.is_not(None))
        q = _window(q, None, t_to)
        if after is not None:
            t, key, position = after
            q = q.where(
                sa.tuple_(events.c.t, events.c.order_key, events.c.position)
                > sa.tuple_(sa.literal(t), sa.literal(key), sa.literal(position))
            )
        rows = await self._fetch(q.order_by(events.c.t, events.c.order_key, events.c.position).limit(limit))
        if scope == "decisions" or not BATCHABLE.intersection(types):
            return rows
        # and the pods' inputs a batch carries, through their own index, as far as a page goes
        m = sa.select(batch_members.c.event_id).where(batch_members.c.run == run, batch_members.c.type.in_(list(types)))
        if t_to is not None:
            m = m.where(batch_members.c.t <= t_to)
        if after is not None:
            t, key, position = after
            m = m.where(
                sa.tuple_(batch_members.c.t, batch_members.c.order_key, batch_members.c.position)
                > sa.tuple_(sa.literal(t), sa.literal(key), sa.literal(position))
            )
        m = m.order_by(batch_members.c.t, batch_members.c.order_key, batch_members.c.position).limit(limit)
        async with self.engine.connect() as conn:
            ids = {row[0] for row in await conn.execute(m)}
        members = await self._members(run, lambda e: e.id in ids, batch_members.c.event_id.in_(ids)) if ids else []
        return sorted([*rows, *members], key=lambda e: (e.envelope.t, order_key(e.envelope.order), e.position))[:limit]

    async def _members(
        self, run: str, keep: Callable[[Envelope], bool], where: Any, *, t_to: int | None = None
    ) -> list[StoredEvent]:
        """The pods' inputs carried by stored batches that ``where`` (on ``batch_members``)
        finds and ``keep`` takes, up to ``t_to``, each at its batch's position."""
        positions = sa.select(batch_members.c.position).where(batch_members.c.run == run, where)
        if t_to is not None:
            positions = positions.where(batch_members.c.t <= t_to)
        batches = await self._fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
        return expanded(batches, keep)

    async def byte_ordered(self) -> bool:
        """Whether text sorts byte by byte here (SQLite; PostgreSQL with the C collation),
        so that a key range can end a prefix; otherwise prefix reads only filter."""
        if self._byte_ordered is None:
            if self.dialect != "postgresql":
                self._byte_ordered = True
            else:
                q = sa.text("SELECT datcollate FROM pg_database WHERE datname = current_database()")
                async with self.engine.connect() as conn:
                    collation = str((await conn.execute(q)).scalar_one())
                self._byte_ordered = collation in ("C", "POSIX") or collation.startswith("C.")
        return self._byte_ordered

    async def read_node(
        self,
        run: str,
        node: str,
        *,
        t_from: int | None = None,
        t_to: int | None = None,
        types: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[StoredEvent]:
        """A node's inputs and decisions (not internal events), in decision order."""
        q = sa.select(events).where(
            events.c.run == run,
            events.c.node == node,
            events.c.kind != sa.literal(INTERNAL, literal_execute=True),
        )
        if types:
            q = q.where(events.c.type.in_(with_batches(types)))
        q = _window(q, t_from, t_to)
        q = q.order_by(events.c.t, events.c.order_key)
        rows = await self._fetch(q.limit(limit) if limit else q)
        if not any(r.envelope.type == BATCH for r in rows):
            return rows
        # a batch's members stand where they would alone; no other event of the node falls
        # between two of them, so the first ``limit`` of the expanded rows are the node's first
        found = in_decision_order(expanded(rows, lambda e: e.node == node and (not types or e.type in types)))
        return found[:limit] if limit else found

    async def read_stream_window(
        self, run: str, stream: str, *, types: Sequence[str] = (), t_from: int | None = None, t_to: int | None = None
    ) -> list[StoredEvent]:
        """One stream's events of some types in a time window (a node's observations, those
        stored in batches too)."""
        q = sa.select(events).where(events.c.stream == stream_id(run, stream))
        if types:
            q = q.where(events.c.type.in_(list(types)))
        q = _window(q, t_from, t_to)
        rows = await self._fetch(q.order_by(events.c.t, events.c.order_key))
        node = stream.removeprefix("node/") if stream.startswith("node/") else None
        if node is None or (types and OBSERVED not in types):
            return rows
        positions = sa.select(observation_members.c.position).where(
            observation_members.c.run == run, observation_members.c.node == node
        )
        if t_from is not None:
            positions = positions.where(observation_members.c.t >= t_from)
        if t_to is not None:
            positions = positions.where(observation_members.c.t <= t_to)
        batches = await self._fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
        if not batches:
            return rows
        members = expanded(batches, lambda e: e.node == node)
        return sorted([*rows, *members], key=lambda e: (e.envelope.t, order_key(e.envelope.order)))

    async def runs(self) -> list[tuple[str, datetime]]:
        """Runs in the store, newest first (by when their ScenarioStarted was recorded)."""
        q = (
            sa.select(events.c.run, events.c.recorded_at)
            .where(events.c.type == sa.literal("ScenarioStarted", literal_execute=True))
            .order_by(events.c.position.desc())
        )
        async with self.engine.connect() as conn:
            return [(r.run, r.recorded_at) for r in await conn.execute(q)]

    async def run_states(self, *, now: datetime | None = None) -> list[RunState]:
        """Every run with its lifecycle state, newest first (see :class:`RunState`)."""
        runs = await self.runs()
        ended: dict[str, tuple[str, str]] = {}
        q = sa.select(events.c.run, events.c.data).where(events.c.type == sa.literal("RunEnded", literal_execute=True))
        async with self.engine.connect() as conn:
            for row in await conn.execute(q):
                data = json.loads(row.data)
                if ended.get(row.run, ("", ""))[0] != COMPLETED:  # a resumed run's completion wins
                    ended[row.run] = (data.get("outcome", FAILED), data.get("reason", ""))
            unended = [r for r, _ in runs if r not in ended]
            newest: dict[str, datetime] = {}
            if unended:
                last = (
                    sa.select(events.c.run, sa.func.max(events.c.recorded_at).label("at"))
                    .where(events.c.run.in_(unended))
                    .group_by(events.c.run)
                )
                newest = {row.run: _aware(row.at) for row in await conn.execute(last)}
        now = now or datetime.now(UTC)
        out = []
        for run, started_at in runs:
            if run in ended:
                status, reason = ended[run]
            elif now - newest.get(run, _aware(started_at)) > ABANDONED_AFTER:
                status, reason = ABANDONED, "nothing stored since " + newest.get(run, _aware(started_at)).isoformat()
            else:
                status, reason = RUNNING, ""
            out.append(RunState(run, _aware(started_at), status, reason))
        return out

    # -- services' checkpoints (not events: see ledgerlet_store.snapshots) ---------
    async def save_snapshot(self, snap: StoredSnapshot) -> None:
        await snapshots.save(self.engine, snap)

    async def load_snapshot(self, key: str) -> StoredSnapshot | None:
        return await snapshots.load(self.engine, key)

    async def drop_snapshot(self, key: str) -> None:
        await snapshots.drop(self.engine, key)

    async def types_by_node(
        self, run: str, *, kinds: Sequence[str] = (DECISION, INTERNAL), batched: bool = True
    ) -> dict[str, dict[str, int]]:
        """How many events of each type ``run`` stored about each node, of ``kinds`` (one
        scan of the run: what a quick verified replay leaves out is worked out from it);
        ``batched``: the observations stored in batches too."""
        q = (
            sa.select(events.c.node, events.c.type, sa.func.count())
            .where(events.c.run == run, events.c.kind.in_(list(kinds)), events.c.node.is_not(None))
            .group_by(events.c.node, events.c.type)
        )
        out: dict[str, dict[str, int]] = {}
        observed = (
            sa.select(observation_members.c.node, sa.func.count())
            .where(observation_members.c.run == run)
            .group_by(observation_members.c.node)
        )
        async with self.engine.connect() as conn:
            for node, type_, n in await conn.execute(q):
                out.setdefault(node, {})[type_] = n
            if batched and INTERNAL in kinds:  # (observations stored in batches, by their own index)
                for node, n in await conn.execute(observed):
                    types = out.setdefault(node, {})
                    types[OBSERVED] = types.get(OBSERVED, 0) + n
        return out

    async def count(self, run: str | None = None) -> int:
        q = sa.select(sa.func.count()).select_from(events)
        if run is not None:
            q = q.where(events.c.run == run)
        async with self.engine.connect() as conn:
            return int((await conn.execute(q)).scalar_one())

    async def _fetch(self, q: sa.Select[Any]) -> list[StoredEvent]:
        async with self.engine.connect() as conn:
            result = await conn.execute(q)
            return [_stored(r) for r in result]


class _Transaction:
    """One writer at a time per process, and a database-level write lock."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._ctx: Any = None

    async def __aenter__(self) -> AsyncConnection:
        await self._store._lock.acquire()
        try:
            self._ctx = self._store.engine.execution_options(ledgerlet_write=True).begin()
            conn: AsyncConnection = await self._ctx.__aenter__()
            if self._store.dialect == "postgresql":
                await conn.execute(sa.text("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE"))
            return conn
        except BaseException:
            self._store._lock.release()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._ctx.__aexit__(*exc)
        finally:
            self._store._lock.release()


#: batches whose members the store lists in an index of their own
_INDEXED_BATCHES: Final = frozenset({BATCH, OBSERVED_BATCH})
_OBSERVED_COLUMNS: Final = ("event_id", "run", "t", "node", "position")
_MEMBER_COLUMNS: Final = ("event_id", "run", "type", "t", "order_key", "node", "pod", "position")
_SQLITE_MEMBER_INSERT: Final = (
    f"INSERT INTO batch_members ({', '.join(_MEMBER_COLUMNS)}) VALUES ({', '.join('?' * len(_MEMBER_COLUMNS))})"
)
_SQLITE_OBSERVED_INSERT: Final = (
    "INSERT INTO observation_members (event_id, run, t, node, position) VALUES (?, ?, ?, ?, ?)"
)


def _id_in(ids: set[str]) -> Callable[[Envelope], bool]:
    wanted = set(ids)
    return lambda e: e.id in wanted


def _pod_in(pods: set[str]) -> Callable[[Envelope], bool]:
    return lambda e: e.pod in pods


def _aware(at: datetime) -> datetime:
    """SQLite gives back the UTC times it stored without their zone."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _window(q: sa.Select[Any], t_from: int | None, t_to: int | None) -> sa.Select[Any]:
    """Events in ``[t_from, t_to]`` (virtual ns, either end open when None)."""
    if t_from is not None:
        q = q.where(events.c.t >= t_from)
    if t_to is not None:
        q = q.where(events.c.t <= t_to)
    return q


def _row(e: Envelope, sid: str, version: int) -> dict[str, Any]:
    return {
        "event_id": e.id,
        "run": e.run,
        "stream": sid,
        "version": version,
        "type": e.type,
        "kind": e.kind,
        "schema_version": e.v,
        "t": e.t,
        "order_key": order_key(e.order),
        "node": e.node,
        "pod": e.pod,
        "causes": _CAUSES.encode(e.causes).decode(),
        "data": bytes(e.data).decode(),
        "recorded_at": datetime.now(UTC),
    }


_COPY_COLUMNS = (
    "event_id",
    "run",
    "stream",
    "version",
    "type",
    "kind",
    "schema_version",
    "t",
    "order_key",
    "node",
    "pod",
    "causes",
    "data",
    "recorded_at",
)


#: the columns of ``_COPY_COLUMNS`` in SQLite's ``executemany`` form
_SQLITE_INSERT: Final = (
    f"INSERT INTO {events.name} ({', '.join(_COPY_COLUMNS)}) VALUES ({', '.join('?' * len(_COPY_COLUMNS))})"
)


def _copy_row(e: Envelope) -> tuple[Any, ...]:
    """A COPY row without its version and time (filled in under the write lock)."""
    return (
        e.id,
        e.run,
        f"{e.run}:{e.stream}",
        e.type,
        e.kind,
        e.v,
        e.t,
        order_key(e.order),
        e.node,
        e.pod,
        _CAUSES.encode(e.causes).decode(),
        bytes(e.data).decode(),
    )


def _stored(row: Any) -> StoredEvent:
    # (by place, not by name: a replay reads every row of a run, and ``Row._mapping``'s
    # look-ups by name were a tenth of its time; ``_AT`` checks the places at import)
    (position, event_id, run, stream, version, type_, kind, v, t, order, node, pod, causes, data, recorded) = row
    if stream.startswith(run) and stream[len(run) : len(run) + 1] == ":":
        stream = stream[len(run) + 1 :]
    env = Envelope(
        id=event_id,
        type=type_,
        v=v,
        run=run,
        t=t,
        order=_decode_order(order),
        stream=stream,
        kind=kind,
        node=node,
        pod=pod,
        causes=_CAUSES_DECODER.decode(causes),
        data=msgspec.Raw(data.encode()),
    )
    if recorded.tzinfo is None:
        recorded = recorded.replace(tzinfo=UTC)
    return StoredEvent(position=position, version=version, recorded_at=recorded, envelope=env)


_CAUSES_DECODER: Final = msgspec.json.Decoder(list[str])
#: the columns of ``events`` in the order :func:`_stored` unpacks them
_AT: Final = [
    *("position", "event_id", "run", "stream", "version", "type", "kind", "schema_version", "t"),
    *("order_key", "node", "pod", "causes", "data", "recorded_at"),
]
if [c.name for c in events.columns] != _AT:
    raise AssertionError(f"_stored unpacks {_AT}, the events table has {[c.name for c in events.columns]}")


def _upgrade(sync_conn: Any) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = sync_conn
    command.upgrade(cfg, "head")


def _sqlite_pragmas(engine: AsyncEngine) -> None:
    @sa_event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transactions out of the driver's hands so writers can BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.close()

    @sa_event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("ledgerlet_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
