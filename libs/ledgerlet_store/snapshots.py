"""Services' state checkpoints in the store's database (table ``snapshots``).

A snapshot is what a service's state was once its consumer group had committed some
offsets; a restarted service loads it and folds only the records after them. One row
per key (the group, with the bus namespace), replaced whole in one transaction, so a
reader sees the old checkpoint or the new one, never half of either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from ledgerlet_store.schema import snapshots

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class StoredSnapshot:
    key: str
    #: the state's shape: a reader that expects another one folds from the start instead
    version: str
    #: per partition, the next offset the state has folded (what the group had committed)
    offsets: dict[TopicPartition, int]
    state: bytes
    #: records folded into the state since the group's first record (for the logs)
    records: int
    taken_at: datetime


async def save(conn: AsyncConnection, snap: StoredSnapshot) -> None:
    """Replace the key's checkpoint with ``snap`` (in the write transaction ``conn`` is in)."""
    row = {
        "key": snap.key,
        "version": snap.version,
        "offsets": json.dumps(sorted([t, p, o] for (t, p), o in snap.offsets.items())),
        "state": snap.state,
        "records": snap.records,
        "taken_at": snap.taken_at,
    }
    await conn.execute(sa.delete(snapshots).where(snapshots.c.key == snap.key))
    await conn.execute(sa.insert(snapshots), [row])


async def load(conn: AsyncConnection, key: str) -> StoredSnapshot | None:
    row = (await conn.execute(sa.select(snapshots).where(snapshots.c.key == key))).mappings().first()
    if row is None:
        return None
    offsets = {(str(t), int(p)): int(o) for t, p, o in json.loads(row["offsets"])}
    return StoredSnapshot(
        key=row["key"],
        version=row["version"],
        offsets=offsets,
        state=bytes(row["state"]),
        records=int(row["records"]),
        taken_at=row["taken_at"],
    )


async def drop(conn: AsyncConnection, key: str) -> None:
    await conn.execute(sa.delete(snapshots).where(snapshots.c.key == key))
