"""The event store on a SQL database: what SQLite and PostgreSQL do alike, in SQLAlchemy Core.

A backend (sqlite.py, postgres.py) adds what only it does: how it connects, how an
appender takes the write lock, how a batch of rows is written fast, how a failure is
told apart from a database that is away, whether text sorts byte by byte. Nothing here
asks which database it is on.

Appenders are serialised (one at a time per process, and a database-level write lock)
so positions become visible in order and concurrent appenders cannot interleave versions.
Every connection is taken through :meth:`SqlEventStore.connect` or :meth:`SqlEventStore.writing`,
which turn a driver's exceptions into the store's own (contract.py).
"""

from __future__ import annotations

import abc
import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ledgerlet_core.contracts.batch import BATCH
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import INTERNAL_TYPES
from ledgerlet_core.contracts.observed import OBSERVED, OBSERVED_BATCH
from ledgerlet_core.contracts.registry import DECISION, INTERNAL
from ledgerlet_store import snapshots
from ledgerlet_store.batches import (
    MemberRow,
    expanded,
    in_batches,
    in_decision_order,
    member_rows,
    observation_rows,
    order_key,
    with_batches,
)
from ledgerlet_store.contract import StoredEvent, StoreError, WrongExpectedVersion, stream_id
from ledgerlet_store.dsn import describe
from ledgerlet_store.rows import StoredRow, encode_causes, stored
from ledgerlet_store.schema import SCHEMA_REVISION, batch_members, events, metadata, observation_members
from ledgerlet_store.snapshots import StoredSnapshot

MIGRATIONS: Final = Path(__file__).parent / "migrations"
#: ids (or streams) looked up per statement
ID_CHUNK: Final = 1000
#: streams whose version a store remembers (the fast appends)
STREAM_VERSIONS_KEPT: Final = 1_000_000

#: batches whose members the store lists in an index of their own
INDEXED_BATCHES: Final = frozenset({BATCH, OBSERVED_BATCH})


class Conflict(StoreError):
    """A unique constraint refused a row: an event stored already, or a stream another
    writer moved on (the fast appends then append again, looking everything up)."""


class SqlEventStore(abc.ABC):
    """Open one with :func:`ledgerlet_store.store.open_store`; close it with :meth:`close`
    (or ``async with``)."""

    #: the SQLAlchemy dialect's name (``sqlite``, ``postgresql``)
    dialect: str

    def __init__(self, engine: AsyncEngine, dsn: str) -> None:
        self.engine = engine
        self.dsn = dsn
        self._lock = asyncio.Lock()
        #: the version of each stream this store last wrote (the fast appends)
        self._stream_versions: OrderedDict[str, int] = OrderedDict()

    # -- what a backend does its own way ------------------------------------------------
    @abc.abstractmethod
    def _failure(self, exc: BaseException) -> StoreError | None:
        """The store's error for ``exc`` (:class:`~ledgerlet_store.contract.StoreUnavailable`
        when the database is away, :class:`Conflict` for a unique constraint, else
        :class:`StoreError`); None for what is not the database's (left as it is)."""

    @abc.abstractmethod
    async def _take_write_lock(self, conn: AsyncConnection) -> None:
        """Serialise appenders across processes, in the write transaction just begun."""

    @abc.abstractmethod
    async def _take_migration_lock(self, conn: AsyncConnection) -> None:
        """One migrator at a time across processes, in the write transaction just begun."""

    @abc.abstractmethod
    async def _insert_batch(self, envelopes: Sequence[Envelope], *, careful: bool) -> int:
        """Append events of many streams in one transaction, the backend's fastest way.
        Not ``careful``: stored ids are not looked up and stream versions come from what
        this store wrote last; a redelivered event or a stream another writer moved on
        raises :class:`Conflict`, and the batch is appended again ``careful``ly, with
        everything looked up."""

    @abc.abstractmethod
    async def _insert_members(
        self, conn: AsyncConnection, inputs: list[MemberRow], observed: list[tuple[str, str, int, str, int]]
    ) -> None:
        """Write rows of ``batch_members`` and ``observation_members``."""

    @abc.abstractmethod
    async def text_sorts_bytewise(self) -> bool:
        """Whether text sorts byte by byte here, so that a key range can end a prefix."""

    # -- lifecycle ----------------------------------------------------------------------
    async def close(self) -> None:
        await self.engine.dispose()

    async def __aenter__(self) -> SqlEventStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def describe(self) -> str:
        return describe(self.dsn)

    def _described(self, kind: type[StoreError], exc: BaseException) -> StoreError:
        """A failure naming this store, keeping the database's own words as ``reason``."""
        reason = driver_message(exc)
        return kind(f"{self.describe()}: {reason}", reason=reason)

    async def migrate(self) -> None:
        """Bring the schema to the newest migration, one migrator at a time (a second
        process waits instead of failing when both read the schema's version and then
        both try to write)."""
        async with self._guarded(self.engine.execution_options(ledgerlet_write=True).begin()) as conn:
            await self._take_migration_lock(conn)
            await conn.run_sync(_upgrade)

    async def ping(self) -> None:
        """Return once the database answers (raises StoreUnavailable if it does not)."""
        async with self.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))

    # -- connections --------------------------------------------------------------------
    def connect(self) -> Any:
        """A connection for reading (``async with``)."""
        return self._guarded(self.engine.connect())

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction: one writer at a time per process, and the database's
        write lock."""
        async with self._lock, self._guarded(self.engine.execution_options(ledgerlet_write=True).begin()) as conn:
            await self._take_write_lock(conn)
            yield conn

    @asynccontextmanager
    async def _guarded(self, opening: Any) -> AsyncIterator[AsyncConnection]:
        try:
            async with opening as conn:
                yield conn
        except Exception as exc:
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc

    # -- appending ----------------------------------------------------------------------
    async def append(
        self, stream: str, envelopes: Sequence[Envelope], *, expected_version: int | None = None
    ) -> list[int]:
        run = envelopes[0].run if envelopes else ""
        sid = stream_id(run, stream)
        async with self.writing() as conn:
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
        """Append events of many streams in one transaction; how many were new."""
        if not envelopes:
            return 0
        try:
            return await self._insert_batch(envelopes, careful=False)
        except Conflict:
            self._stream_versions.clear()
            return await self._insert_batch(envelopes, careful=True)

    def _remember(self, versions: dict[str, int]) -> None:
        """Where the streams are, once a batch is committed (the next fast append's guess)."""
        known = self._stream_versions
        known.update(versions)
        while len(known) > STREAM_VERSIONS_KEPT:
            known.popitem(last=False)

    async def _index_members(self, conn: AsyncConnection, batches: Sequence[Envelope]) -> None:
        """List the members of batches just stored (``batch_members``, ``observation_members``),
        in the same transaction."""
        if not batches:
            return
        positions = await self._existing(conn, [b.id for b in batches])
        unique = list({b.id: b for b in batches}.values())
        inputs = member_rows([(b, positions[b.id]) for b in unique if b.type == BATCH])
        observed = observation_rows([(b, positions[b.id]) for b in unique if b.type == OBSERVED_BATCH])
        if inputs or observed:  # (not for batches of usage entries only)
            await self._insert_members(conn, inputs, observed)

    async def _existing(self, conn: AsyncConnection, ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), ID_CHUNK):
            chunk = unique[i : i + ID_CHUNK]
            result = await conn.execute(
                sa.select(events.c.event_id, events.c.position).where(events.c.event_id.in_(chunk))
            )
            found.update({row.event_id: row.position for row in result})
        return found

    async def _versions(self, conn: AsyncConnection, sids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(sids), ID_CHUNK):
            chunk = sids[i : i + ID_CHUNK]
            result = await conn.execute(
                sa.select(events.c.stream, sa.func.max(events.c.version))
                .where(events.c.stream.in_(chunk))
                .group_by(events.c.stream)
            )
            out.update({row[0]: row[1] for row in result})
        return out

    # -- reading ------------------------------------------------------------------------
    async def fetch(self, q: sa.Select[Any]) -> list[StoredEvent]:
        """The events a query on ``events`` (every column) finds, as stored."""
        async with self.connect() as conn:
            result = await conn.execute(q)
            return [stored(r) for r in result]

    async def batch_members_of(
        self, run: str, keep: Callable[[Envelope], bool], where: Any, *, t_to: int | None = None
    ) -> list[StoredEvent]:
        """The pods' inputs carried by stored batches that ``where`` (on ``batch_members``)
        finds and ``keep`` takes, up to ``t_to``, each at its batch's position."""
        positions = sa.select(batch_members.c.position).where(batch_members.c.run == run, where)
        if t_to is not None:
            positions = positions.where(batch_members.c.t <= t_to)
        batches = await self.fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
        return expanded(batches, keep)

    async def read_stream(
        self, run: str, stream: str, *, from_version: int = 1, limit: int | None = None
    ) -> list[StoredEvent]:
        """One stream's events from a version on, in version order."""
        q = (
            sa.select(events)
            .where(events.c.stream == stream_id(run, stream), events.c.version >= from_version)
            .order_by(events.c.version)
        )
        return await self.fetch(q.limit(limit) if limit else q)

    async def stream_version(self, run: str, stream: str) -> int:
        """The stream's version now (0: nothing stored on it)."""
        async with self.connect() as conn:
            return (await self._versions(conn, [stream_id(run, stream)])).get(stream_id(run, stream), 0)

    async def read_all(self, *, from_position: int = 1, limit: int = 1000) -> list[StoredEvent]:
        """Every run's events by position, as stored (batches whole)."""
        q = sa.select(events).where(events.c.position >= from_position).order_by(events.c.position).limit(limit)
        return await self.fetch(q)

    async def read_by_type(
        self,
        types: Iterable[str],
        *,
        run: str | None = None,
        t_from: int | None = None,
        t_to: int | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        """Events of some types (of one run, in a time window), in decision order."""
        wanted = list(types)
        q = sa.select(events).where(events.c.type.in_(with_batches(wanted)))
        if not any(t in INTERNAL_TYPES for t in wanted):
            # lets the partial index on (run, type, t) serve it (internal events are not in it)
            q = q.where(events.c.kind != sa.literal(INTERNAL, literal_execute=True))
        if run is not None:
            q = q.where(events.c.run == run)
        q = window(q, t_from, t_to)
        if not in_batches(wanted):
            return await self.fetch(_first(q.order_by(events.c.t, events.c.order_key, events.c.position), limit))
        return await self._members_in_order(q, lambda e: e.type in wanted, limit)

    async def read_run(self, run: str, *, kind: str | None = None) -> list[StoredEvent]:
        """A run's events in decision order (virtual time, then causal order)."""
        q = sa.select(events).where(events.c.run == run)
        if kind is not None:
            # a literal, so SQLite can see that the partial decisions index applies
            q = q.where(events.c.kind == sa.literal(kind, literal_execute=True))
        rows = await self.fetch(q.order_by(events.c.t, events.c.order_key))
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
            rows = await self.fetch(q)
            if not rows:
                return
            for r in expanded(rows) if members else rows:
                yield r
            last = rows[-1].position

    async def iter_run_rows(
        self, run: str, *, batch: int = 5000, kinds: Sequence[str] = ()
    ) -> AsyncIterator[StoredRow]:
        """:meth:`iter_run` with ``members=False``, each event as its row (:class:`StoredRow`:
        compared as stored, made an envelope only if asked)."""
        last = 0
        while True:
            q = sa.select(events).where(events.c.run == run, events.c.position > last)
            if kinds:
                q = q.where(events.c.kind.in_(list(kinds)))
            q = q.order_by(events.c.position).limit(batch)
            async with self.connect() as conn:
                rows = [StoredRow(r) for r in await conn.execute(q)]
            if not rows:
                return
            for r in rows:
                yield r
            last = rows[-1].row[0]

    async def get_events(self, ids: Sequence[str]) -> list[StoredEvent]:
        """Events by id (a decision's causes), in position order; unknown ids are left out."""
        out: list[StoredEvent] = []
        wanted = list(dict.fromkeys(ids))
        for i in range(0, len(wanted), 500):
            q = sa.select(events).where(events.c.event_id.in_(wanted[i : i + 500]))
            out.extend(await self.fetch(q))
        missing = set(wanted) - {e.envelope.id for e in out}
        for table in (batch_members, observation_members):  # members of stored batches
            if not missing:
                break
            chunk = sorted(missing)
            for i in range(0, len(chunk), 500):
                positions = sa.select(table.c.position).where(table.c.event_id.in_(chunk[i : i + 500]))
                batches = await self.fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
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
        q = window(q, t_from, t_to)
        if after is not None:
            q = q.where(after_cursor(events, after))
        q = q.order_by(events.c.t, events.c.order_key, events.c.position).limit(limit)
        return await self.fetch(q)

    async def read_pod(self, run: str, pod: str) -> list[StoredEvent]:
        """Everything recorded about one pod (``namespace/name``), in decision order."""
        q = sa.select(events).where(events.c.run == run, events.c.pod == pod)
        rows = await self.fetch(q.order_by(events.c.t, events.c.order_key))
        members = await self.batch_members_of(run, lambda e: e.pod == pod, batch_members.c.pod == pod)
        return in_decision_order([*rows, *members]) if members else rows

    async def pods_named(self, run: str, name: str) -> list[str]:
        """The pods (``namespace/name``) of ``run`` called ``name``, in any namespace: what a
        bare pod name may mean."""
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found: set[str] = set()
        async with self.connect() as conn:
            for table in (events, batch_members):
                q = sa.select(table.c.pod).where(table.c.run == run, table.c.pod.like(f"%/{escaped}", escape="\\"))
                found.update(row[0] for row in await conn.execute(q.distinct()))
        return sorted(p for p in found if p.rsplit("/", 1)[-1] == name)  # (SQLite's LIKE ignores case)

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
        q = window(q, t_from, t_to)
        return await self._members_in_order(q, lambda e: e.node == node and (not types or e.type in types), limit)

    async def _members_in_order(
        self, q: sa.Select[Any], keep: Callable[[Envelope], bool], limit: int | None
    ) -> list[StoredEvent]:
        """The rows ``q`` finds in decision order, each batch replaced by the members ``keep``
        takes; the first ``limit`` of them. A batch's members stand where they would alone
        and no other row falls between two of them, so pages of rows by keyset cursor give
        the members in order; a page is read after another while a batch holds fewer of the
        members wanted than its row took of the page (a batch of pods' objects, when their
        usage is asked for)."""
        q = q.order_by(events.c.t, events.c.order_key, events.c.position)
        found: list[StoredEvent] = []
        after: tuple[int, str, int] | None = None
        while True:
            rows = await self.fetch(_first(q if after is None else q.where(after_cursor(events, after)), limit))
            found += expanded(rows, keep)
            if not limit or len(found) >= limit or len(rows) < limit:
                break
            last = rows[-1]
            after = (last.envelope.t, order_key(last.envelope.order), last.position)
        found = in_decision_order(found)
        return found[:limit] if limit else found

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
            out.extend(await self.fetch(window(q, None, t_to).order_by(events.c.t, events.c.order_key)))
        return sorted(out, key=lambda e: (e.envelope.t, order_key(e.envelope.order), e.position))

    async def read_stream_window(
        self, run: str, stream: str, *, types: Sequence[str] = (), t_from: int | None = None, t_to: int | None = None
    ) -> list[StoredEvent]:
        """One stream's events of some types in a time window (a node's observations, those
        stored in batches too)."""
        q = sa.select(events).where(events.c.stream == stream_id(run, stream))
        if types:
            q = q.where(events.c.type.in_(list(types)))
        q = window(q, t_from, t_to)
        rows = await self.fetch(q.order_by(events.c.t, events.c.order_key))
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
        batches = await self.fetch(sa.select(events).where(events.c.position.in_(positions.distinct())))
        if not batches:
            return rows
        members = expanded(batches, lambda e: e.node == node)
        return sorted([*rows, *members], key=lambda e: (e.envelope.t, order_key(e.envelope.order)))

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
        async with self.connect() as conn:
            for node, type_, n in await conn.execute(q):
                out.setdefault(node, {})[type_] = n
            if batched and INTERNAL in kinds:  # (observations stored in batches, by their own index)
                for node, n in await conn.execute(observed):
                    types = out.setdefault(node, {})
                    types[OBSERVED] = types.get(OBSERVED, 0) + n
        return out

    async def known(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored (a driver's check that the recorder kept all it sent)."""
        async with self.connect() as conn:
            return set(await self._existing(conn, ids))

    async def count(self, run: str | None = None) -> int:
        """Rows stored (of one run): a batch is one."""
        q = sa.select(sa.func.count()).select_from(events)
        if run is not None:
            q = q.where(events.c.run == run)
        async with self.connect() as conn:
            return int((await conn.execute(q)).scalar_one())

    # -- services' checkpoints (not events: see ledgerlet_store.snapshots) -------------
    async def save_snapshot(self, snap: StoredSnapshot) -> None:
        async with self._guarded(self.engine.execution_options(ledgerlet_write=True).begin()) as conn:
            await snapshots.save(conn, snap)

    async def load_snapshot(self, key: str) -> StoredSnapshot | None:
        async with self.connect() as conn:
            return await snapshots.load(conn, key)

    async def drop_snapshot(self, key: str) -> None:
        async with self._guarded(self.engine.execution_options(ledgerlet_write=True).begin()) as conn:
            await snapshots.drop(conn, key)


def window(q: sa.Select[Any], t_from: int | None, t_to: int | None) -> sa.Select[Any]:
    """Events in ``[t_from, t_to]`` (virtual ns, either end open when None)."""
    if t_from is not None:
        q = q.where(events.c.t >= t_from)
    if t_to is not None:
        q = q.where(events.c.t <= t_to)
    return q


def after_cursor(table: sa.Table, after: tuple[int, str, int]) -> sa.ColumnElement[bool]:
    """Rows of ``table`` after the keyset cursor ``(t, order_key, position)``."""
    t, key, position = after
    return sa.tuple_(table.c.t, table.c.order_key, table.c.position) > sa.tuple_(
        sa.literal(t), sa.literal(key), sa.literal(position)
    )


def _first(q: sa.Select[Any], limit: int | None) -> sa.Select[Any]:
    return q.limit(limit) if limit else q


def _id_in(ids: set[str]) -> Callable[[Envelope], bool]:
    wanted = set(ids)
    return lambda e: e.id in wanted


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
        "causes": encode_causes(e.causes),
        "data": bytes(e.data).decode(),
        "recorded_at": datetime.now(UTC),
    }


def _upgrade(sync_conn: Any) -> None:
    """Migrate to the newest schema. A store there already is left as it is, and a new
    SQLite file is made at the newest schema directly (the tables the migrations make,
    tests/store/test_schema_revision.py): neither loads alembic, a tenth of a second of
    every ``ledgerlet run``."""
    inspector = sa.inspect(sync_conn)
    if inspector.has_table("alembic_version"):
        found = sync_conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        if found == SCHEMA_REVISION:
            return
    elif sync_conn.dialect.name == "sqlite" and not inspector.get_table_names():
        _create_at_newest(sync_conn)
        return
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = sync_conn
    command.upgrade(cfg, "head")


def _create_at_newest(sync_conn: Any) -> None:
    """An empty SQLite database made at :data:`SCHEMA_REVISION`, stamped as alembic
    stamps it (so a later migration takes it from there)."""
    metadata.create_all(sync_conn)
    version = sa.Table(  # (alembic's own: runtime/migration.py, MigrationContext._version)
        "alembic_version",
        sa.MetaData(),
        sa.Column("version_num", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
    )
    version.create(sync_conn)
    sync_conn.execute(version.insert().values(version_num=SCHEMA_REVISION))


def driver_message(exc: BaseException) -> str:
    """The first line of what the database driver said (SQLAlchemy wraps the driver's
    error in ``orig`` and adds its class name and the statement)."""
    orig = getattr(exc, "orig", None)
    said = str(orig if orig is not None else exc).strip() or type(exc).__name__
    return said.splitlines()[0]
