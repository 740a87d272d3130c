"""Shared fixtures: real PostgreSQL (the local server, or LEDGERLET_TEST_PG), temp SQLite."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

if TYPE_CHECKING:
    from tests.support.cli import Command

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: An admin DSN for the PostgreSQL server tests may create databases on.
PG_ADMIN = os.environ.get("LEDGERLET_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_dsn(database: str) -> str:
    base, _, _ = PG_ADMIN.rpartition("/")
    return f"{base}/{database}"


async def _pg_exec(sql: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN.replace("postgresql+asyncpg", "postgresql"))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The PostgreSQL admin DSN; fails loudly when the server is not there."""
    try:
        asyncio.run(_pg_exec("SELECT 1"))
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.fail(f"PostgreSQL is needed at {PG_ADMIN} (set LEDGERLET_TEST_PG): {exc}")
    return PG_ADMIN


@contextlib.contextmanager
def fresh_pg_database(icu_locale: str | None = None) -> Iterator[str]:
    """Create an empty PostgreSQL database (whose text sorts as ICU's ``icu_locale`` does,
    if given, not byte by byte); drop it afterwards."""
    name = f"ledgerlet_t_{uuid.uuid4().hex[:12]}"
    collation = f" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}'" if icu_locale else ""
    asyncio.run(_pg_exec(f'CREATE DATABASE "{name}"{collation}'))
    try:
        yield _pg_dsn(name)
    finally:
        asyncio.run(_pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def pg_database(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    with fresh_pg_database() as dsn:
        yield dsn


@pytest.fixture(params=["sqlite", "postgresql"])
def store_dsn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each store test runs against both backends."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'events.db'}"
    else:
        yield request.getfixturevalue("pg_database")


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[object]:
    from ledgerlet_store.store import open_store

    s = await open_store(store_dsn)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """A real Kafka-protocol broker: ``KAFKA_BOOTSTRAP`` if set, else Tansu on a free port."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    from tests.support.brokers import tansu

    with tansu() as broker:
        yield broker.bootstrap


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on a real broker is a distributed one, whatever its file (``make check``
    leaves them out: the broker alone takes seconds to start)."""
    for item in items:
        if "kafka_bootstrap" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.distributed)


@pytest.fixture
def kafka_namespace() -> str:
    """Topic and group names of one test, so tests sharing a broker do not see each other."""
    return f"t{uuid.uuid4().hex[:10]}"


# -- the compose test's figures, printed at the end of the run -------------------------
# Its fixture records them in the process that ran it: under pytest-xdist a worker, whose
# figures reach the controller (which prints the summary) through ``workeroutput``.


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from tests.compose.stack import FIGURES

        workeroutput["compose_figures"] = json.dumps(FIGURES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    from tests.compose.stack import FIGURES

    FIGURES.update(json.loads(getattr(node, "workeroutput", {}).get("compose_figures", "{}")))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.compose.stack import FIGURES

    if FIGURES:
        terminalreporter.section("compose stack figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture
def ledgerlet(capsys: pytest.CaptureFixture[str]) -> Command:
    """The command line in this process (``tests/support/cli.py``): ``ledgerlet(*args, cwd=...)``."""
    from tests.support.cli import in_process

    return in_process(capsys)
