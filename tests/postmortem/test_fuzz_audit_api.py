"""The audit API under schemathesis: requests generated from its own OpenAPI document
(hostile path parameters, windows, cursors, limits) against a real server process on
each store. Not one may fail with a 5xx, and every error is problem+json. Bounded:
a fixed number of derandomized examples per operation."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from tests.conftest import fresh_pg_database
from tests.postmortem.conftest import EVICTED, RUN, record

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 100
#: the node the incident's pod was evicted from
NODE = "k8s-m1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _store(kind: str, tmp: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'events.db'}"
        return
    request.getfixturevalue("pg_server")  # fails loudly without PostgreSQL
    with fresh_pg_database() as dsn:
        yield dsn


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def audit_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``ledgerlet serve`` on a store holding the fluentd incident; its base URL."""
    with _store(request.param, tmp_path_factory.mktemp("fuzz"), request) as dsn:
        asyncio.run(record(dsn))
        port = _free_port()
        cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "serve", "--store", dsn, "--port", str(port)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, proc.communicate()[1]
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                assert time.monotonic() < deadline, "the audit API did not come up"
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                _, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
            # an unexpected error is logged with its traceback: there must be none
            assert "Traceback" not in err, err[-3000:]


@pytest.fixture(scope="module")
def api_schema(audit_server: str) -> Any:
    import schemathesis  # (here, not at the top: a second of imports for every test process that collects this file)

    return schemathesis.openapi.from_url(f"{audit_server}/openapi.json")


def test_no_request_fails_the_server(api_schema: Any) -> None:
    """No 5xx, every error problem+json, every status one the document names for that
    operation. Every operation of the document, one after another (schemathesis's pytest plugin
    does not work with this pytest; its strategies do)."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 8
    # the document promises the codes the server gives: problem+json 400, never FastAPI's 422
    assert not [o for o in operations if "422" in o.definition.raw.get("responses", {})]
    statuses: dict[int, int] = {}
    import schemathesis

    for operation, mode in [(o, m) for o in operations for m in schemathesis.GenerationMode]:

        @given(case=operation.as_strategy(mode), run=st.sampled_from([None, "latest", RUN]), real=st.booleans())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any, run: str | None, real: bool) -> None:
            # random ids mostly meet a 404: aim half the requests at what the store holds
            params = case.path_parameters or {}
            if run is not None and "run" in params:
                params["run"] = run
            if real and "namespace" in params:
                params["namespace"], params["name"] = EVICTED.split("/")
            elif real and "name" in params:
                params["name"] = NODE
            response = case.call(timeout=30)
            where = (case.method, case.formatted_path, case.query)
            assert response.status_code < 500, (where, response.text[:500])
            if response.status_code >= 400:
                kind = str(response.headers.get("content-type"))
                assert "application/problem+json" in kind, (where, response.headers)
            documented = case.operation.definition.raw.get("responses", {})
            assert str(response.status_code) in documented, (where, response.status_code, sorted(documented))
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        try:
            fuzz()
        except Unsatisfiable:  # no invalid request exists where every parameter takes any string
            assert mode is schemathesis.GenerationMode.NEGATIVE
    # it did reach the data, not only the errors
    assert statuses.get(200, 0) > 100 and statuses.get(400, 0) > 100, statuses
    print(f"fuzzed {sum(statuses.values())} requests: {dict(sorted(statuses.items()))}")
