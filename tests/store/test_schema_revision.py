"""The schema revision the code names is alembic's head; a new SQLite store is made at it
directly and a store already there opens as it is, neither loading alembic (a tenth of
a second of every ``ledgerlet run``); an older store is still migrated by alembic."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from ledgerlet_store.schema import SCHEMA_REVISION
from ledgerlet_store.sql_store import MIGRATIONS
from ledgerlet_store.store import open_store


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def test_the_named_revision_is_the_newest_migration() -> None:
    assert ScriptDirectory.from_config(_config()).get_current_head() == SCHEMA_REVISION


def _migrated_by_alembic(path: Path, to: str = "head") -> None:
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, to)
    engine.dispose()


def _schema(path: Path) -> list[tuple[str, str, str]]:
    """Every table and index as SQLite keeps it (its SQL, whitespace aside)."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return sorted((t, n, " ".join((sql or "").split())) for t, n, sql in rows)


_OPEN = """
import asyncio, sys
from ledgerlet_store.store import open_store

async def main() -> None:
    store = await open_store(sys.argv[1])
    await store.close()

asyncio.run(main())
print("alembic" in sys.modules)
"""


def _opens_with_alembic(dsn: str) -> bool:
    done = subprocess.run([sys.executable, "-c", _OPEN, dsn], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_a_new_sqlite_store_is_what_the_migrations_make(tmp_path: Path) -> None:
    made, migrated = tmp_path / "made.db", tmp_path / "migrated.db"
    assert not _opens_with_alembic(f"sqlite:///{made}")  # new: made at the newest schema
    assert not _opens_with_alembic(f"sqlite:///{made}")  # there already
    _migrated_by_alembic(migrated)
    assert _schema(made) == _schema(migrated)
    with sqlite3.connect(made) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(SCHEMA_REVISION,)]


async def test_an_older_store_is_still_migrated(tmp_path: Path) -> None:
    older, migrated = tmp_path / "older.db", tmp_path / "migrated.db"
    previous = ScriptDirectory.from_config(_config()).get_revision(SCHEMA_REVISION).down_revision
    assert isinstance(previous, str)
    _migrated_by_alembic(older, previous)
    assert _opens_with_alembic(f"sqlite:///{older}")
    _migrated_by_alembic(migrated)
    assert _schema(older) == _schema(migrated)
    async with await open_store(f"sqlite:///{older}") as store, store.engine.connect() as conn:
        assert (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar() == SCHEMA_REVISION
