"""The per-node services split between three processes each on Tansu and PostgreSQL:
``ledgerlet service stats-collector --member I/3`` and ``ledgerlet service
eviction-manager --member I/3``, driven with ``--members
stats-collector=3,eviction-manager=3`` (which orders the run by node). Every example
decides what the embedded run ordered by node decides, byte for byte, ids included; a
member of either service killed with SIGKILL mid-run and started again loses and
duplicates nothing. (The collector split in a run ordered by step, which keeps every id
of the original order, is proved on every golden case in tests/services.)"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_core.contracts.order import ORDER_BY_NODE
from ledgerlet_services.runtime.catalog import service_names
from tests.conftest import EXAMPLES, fresh_pg_database
from tests.distributed.test_faults import _run_with_fault
from tests.distributed.test_parity import drives_as_embedded
from tests.support.events import assert_same_events
from tests.support.stack import LocalStack

SPLIT = ("stats-collector", "eviction-manager")
MEMBERS = 3


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    namespace = f"split{uuid.uuid4().hex[:8]}"
    with fresh_pg_database() as dsn:
        s = LocalStack(
            f"kafka://{kafka_bootstrap}?namespace={namespace}",
            dsn,
            tmp_path_factory.mktemp("stack"),
            {"LEDGERLET_MEMBERS": ",".join(f"{name}={MEMBERS}" for name in SPLIT)},
        )
        others = [n for n in service_names() if n not in (*SPLIT, "audit-api")]
        s.start(others)
        shares = [s.start_share(name, i, MEMBERS) for name in SPLIT for i in range(1, MEMBERS + 1)]
        s.wait_healthy(shares)
        try:
            yield s
        finally:
            codes = s.stop()
            assert all(c == 0 for c in codes.values()), f"services did not stop cleanly on SIGTERM: {codes}"


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
async def test_three_members_of_each_per_node_service_decide_what_the_embedded_run_decides(
    example: str, stack: LocalStack, tmp_path: Path
) -> None:
    name = f"split-{example.removesuffix('.yaml')}"
    await drives_as_embedded(stack, EXAMPLES / example, tmp_path, name, order_scheme=ORDER_BY_NODE)


@pytest.mark.parametrize("service", SPLIT)
def test_a_member_killed_mid_run_and_started_again_loses_nothing(
    service: str, stack: LocalStack, tmp_path: Path
) -> None:
    member = f"{service}.member-2-of-{MEMBERS}"

    def kill_and_restart() -> None:
        assert stack.kill(member) == -9
        time.sleep(1.0)  # the clock waits for the member's group meanwhile
        stack.start_share(service, 2, MEMBERS)

    embedded, distributed, log_e, log_d = _run_with_fault(
        stack, tmp_path, kill_and_restart, at_fraction=0.4, order_scheme=ORDER_BY_NODE
    )
    assert_same_events(embedded, distributed)
    assert log_d == log_e
    assert stack.log_path(member).read_text().count("rebuilt state from") >= 2  # started, then again
