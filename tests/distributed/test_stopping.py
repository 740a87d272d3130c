"""Every service stops on SIGTERM within compose's stop grace period (10 s), cleanly (exit 0,
no traceback), also when what it talks to is gone mid-scenario: the broker, the database or
the driver. (With the broker away, closing a consumer let aiokafka's cancelled fetch out as
a traceback and exit 1.) On a broker and a PostgreSQL cluster of the test's own: stopping
the machine's shared ones would cut off every other user of them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.support import private_pg
from tests.support.brokers import tansu
from tests.support.events import wait_until_stored
from tests.support.stack import LocalStack

pytestmark = pytest.mark.distributed

#: compose's default stop_grace_period
GRACE = 10.0


@pytest.mark.parametrize("gone", ["broker", "database", "driver"])
def test_services_stop_cleanly_when_what_they_talk_to_is_gone(gone: str, tmp_path: Path) -> None:
    if not private_pg.available():
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    with tansu() as broker, private_pg.private_cluster() as pg:
        dsn = asyncio.run(pg.create_database("ledgerlet"))
        stack = LocalStack(broker.url, dsn, tmp_path / "stack").start()
        run = f"stop-{uuid.uuid4().hex[:8]}"
        drive = stack.drive(EXAMPLES / "disk-pressure-fluentd.yaml", tmp_path / "d.jsonl", run_id=run)
        try:
            wait_until_stored(stack.store_dsn, run, 200, drive)  # mid-scenario
            if gone == "broker":
                broker.stop()
            elif gone == "database":
                pg.stop("immediate")
            else:
                drive.kill()
            codes = stack.stop(grace=GRACE)  # (-9: still running after GRACE, then killed)
        finally:
            stack.stop()
            drive.kill()
            drive.wait()
        assert codes and all(c == 0 for c in codes.values()), codes
        tracebacks = [p.name for p in stack.workdir.glob("*.log") if "Traceback" in p.read_text(errors="replace")]
        assert not tracebacks, f"tracebacks in {tracebacks}"
