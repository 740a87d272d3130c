"""The distributed stack decides exactly what the embedded run decides.

Every service runs as its own OS process (``ledgerlet service NAME``) on a real
Kafka-protocol broker and the local PostgreSQL; ``ledgerlet drive`` feeds each example
in. With the same run id, the decision log must be the embedded run's byte for byte
(ids are derived from the run id and the events' places, never from wall time).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, fresh_pg_database
from tests.services.run_helpers import run_file
from tests.support.stack import LocalStack

pytestmark = pytest.mark.distributed

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    namespace = f"parity{uuid.uuid4().hex[:8]}"
    with fresh_pg_database() as dsn:
        s = LocalStack(f"kafka://{kafka_bootstrap}?namespace={namespace}", dsn, tmp_path_factory.mktemp("stack"))
        s.start()
        try:
            yield s
        finally:
            codes = s.stop()
            assert all(c == 0 for c in codes.values()), f"services did not stop cleanly on SIGTERM: {codes}"


@pytest.mark.parametrize("example", EXAMPLE_FILES)
async def test_separate_processes_on_kafka_and_postgres_decide_what_the_embedded_run_decides(
    example: str, stack: LocalStack, tmp_path: Path
) -> None:
    run_id = f"parity-{example.removesuffix('.yaml')}-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "distributed.jsonl"
    stack.finish(stack.drive(EXAMPLES / example, out, run_id=run_id), run_id)
    embedded, _ = await run_file(EXAMPLES / example, f"sqlite:///{tmp_path / 'embedded.db'}", run=run_id)
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == len(embedded) > 0
    assert got == embedded
