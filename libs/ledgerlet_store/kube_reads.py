"""The Kubernetes API facade's reads (audit/kube_api/reader.py): one page of objects at a
time, by the indexes that keep a listing from reading every pod of a large run at once.

Nothing else reads these; they sit on the store (sql_store.py), not in it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa

from ledgerlet_core.contracts.batch import BATCH, BATCHABLE
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, INTERNAL
from ledgerlet_store.batches import expanded, order_key
from ledgerlet_store.contract import StoredEvent, stream_id
from ledgerlet_store.schema import batch_members, events
from ledgerlet_store.sql_store import SqlEventStore, after_cursor, window

#: keys asked for per statement
_CHUNK = 500


class KubeReads:
    """The facade's reads of ``store``."""

    def __init__(self, store: SqlEventStore) -> None:
        self.store = store

    async def byte_ordered(self) -> bool:
        """Whether text sorts byte by byte in the store (SQLite; PostgreSQL with the C
        collation), so that a key range can end a prefix; otherwise prefix reads only filter."""
        return await self.store.text_sorts_bytewise()

    async def pod_keys(
        self, run: str, *, after: str | None = None, prefix: str | None = None, limit: int = 500
    ) -> list[str]:
        """The pods (``namespace/name``) a run holds anything about, in the database's key
        order after ``after``; with ``prefix`` (``namespace/``) those of one namespace. One
        page, from the pod indexes of ``events`` and of ``batch_members`` (the pods only
        batches name), merged and cut in the database, so that a page ends where the next
        begins whatever the collation."""
        ends = bool(prefix) and await self.byte_ordered()  # (a namespace's keys end where the next begins)
        pages = []
        for table in (events, batch_members):
            q = sa.select(table.c.pod.label("pod")).where(table.c.run == run, table.c.pod.is_not(None))
            if after is not None:
                q = q.where(table.c.pod > after)
            if prefix:
                q = q.where(table.c.pod >= prefix, sa.func.substr(table.c.pod, 1, len(prefix)) == prefix)
                if ends:
                    q = q.where(table.c.pod < _next_prefix(prefix))
            pages.append(sa.select(q.distinct().order_by(table.c.pod).limit(limit).subquery().c.pod))
        merged = sa.union(*pages).subquery()
        async with self.store.connect() as conn:
            return [row[0] for row in await conn.execute(sa.select(merged.c.pod).order_by(merged.c.pod).limit(limit))]

    async def pods_on_node(self, run: str, node: str) -> list[str]:
        """Every pod a run bound to, or refused on, ``node`` (``spec.nodeName`` listings)."""
        on_node = (
            events.c.run == run,
            events.c.node == node,
            events.c.kind != sa.literal(INTERNAL, literal_execute=True),
        )
        q = sa.select(events.c.pod).where(*on_node, events.c.pod.is_not(None)).distinct().order_by(events.c.pod)
        async with self.store.connect() as conn:
            keys = {row[0] for row in await conn.execute(q)}
        batches = sa.select(events).where(*on_node, events.c.type == sa.literal(BATCH, literal_execute=True))
        keys.update(e.envelope.pod for e in expanded(await self.store.fetch(batches)) if e.envelope.pod is not None)
        return sorted(keys)

    async def read_pods(self, run: str, pods: Sequence[str], *, t_to: int | None = None) -> list[StoredEvent]:
        """Everything recorded about some pods up to ``t_to``, by pod, in decision order."""
        out: list[StoredEvent] = []
        wanted = list(dict.fromkeys(pods))
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            q = sa.select(events).where(events.c.run == run, events.c.pod.is_not(None), events.c.pod.in_(chunk))
            q = window(q, None, t_to).order_by(events.c.pod, events.c.t, events.c.order_key)
            out.extend(await self.store.fetch(q))
            out.extend(
                await self.store.batch_members_of(run, _pod_in(set(chunk)), batch_members.c.pod.in_(chunk), t_to=t_to)
            )
        return sorted(out, key=lambda e: (e.envelope.pod or "", e.envelope.t, e.envelope.order))

    async def read_streams(
        self, run: str, streams: Sequence[str], *, types: Sequence[str], t_to: int | None = None
    ) -> list[StoredEvent]:
        """Events of ``types`` on some streams up to ``t_to`` (internal ones too: a node's
        published status), in decision order."""
        out: list[StoredEvent] = []
        wanted = [stream_id(run, s) for s in dict.fromkeys(streams)]
        for i in range(0, len(wanted), _CHUNK):
            q = sa.select(events).where(events.c.stream.in_(wanted[i : i + _CHUNK]), events.c.type.in_(list(types)))
            out.extend(await self.store.fetch(window(q, None, t_to)))
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
            q = q.where(events.c.stream < _next_prefix(low))
        return await self.store.fetch(window(q, None, t_to).order_by(events.c.t, events.c.order_key, events.c.position))

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
        q = window(q, None, t_to)
        if after is not None:
            q = q.where(after_cursor(events, after))
        rows = await self.store.fetch(q.order_by(events.c.t, events.c.order_key, events.c.position).limit(limit))
        if scope == "decisions" or not BATCHABLE.intersection(types):
            return rows
        # and the pods' inputs a batch carries, through their own index, as far as a page goes
        m = sa.select(batch_members.c.event_id).where(batch_members.c.run == run, batch_members.c.type.in_(list(types)))
        if t_to is not None:
            m = m.where(batch_members.c.t <= t_to)
        if after is not None:
            m = m.where(after_cursor(batch_members, after))
        m = m.order_by(batch_members.c.t, batch_members.c.order_key, batch_members.c.position).limit(limit)
        async with self.store.connect() as conn:
            ids = {row[0] for row in await conn.execute(m)}
        members = (
            await self.store.batch_members_of(run, lambda e: e.id in ids, batch_members.c.event_id.in_(ids))
            if ids
            else []
        )
        return sorted([*rows, *members], key=lambda e: (e.envelope.t, order_key(e.envelope.order), e.position))[:limit]


def _next_prefix(prefix: str) -> str:
    """The first key after every key that starts with ``prefix`` (in byte order)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _pod_in(pods: set[str]) -> Callable[[Envelope], bool]:
    return lambda e: e.pod in pods
