"""The Kubernetes API facade under schemathesis, as the audit API is fuzzed
(``test_fuzz_audit_api.py``): requests generated from an OpenAPI description of its
routes (``kube_openapi.py``: hostile runs, instants, names, selectors, limits, resource
versions, timeouts, every write) against a real server process on each store. Not one
may fail with a 5xx (superscript digits and 4,300-digit numbers were a 500), every
error is a Kubernetes ``Status`` whose code is the answer's, and every status is one the
description names. Bounded: a fixed number of derandomized examples per operation."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from tests.postmortem.conftest import EVICTED, RUN
from tests.postmortem.kube_openapi import document
from tests.postmortem.test_fuzz_audit_api import NODE, audit_server  # noqa: F401  (the server, on each store)
from tests.support.tiers import slow_unless

EXAMPLES_PER_OPERATION = 25
#: a watch that is answered 200 streams until its timeout: its head is enough
READ_TIMEOUT = 10.0


def _call(case: Any, base_url: str) -> tuple[int, str, bytes]:
    """The answer's status, content type and body (a watch's: none, it would stream on)."""
    kwargs = case.as_transport_kwargs(base_url=base_url)
    kwargs.pop("timeout", None)
    with requests.request(**kwargs, stream=True, timeout=(5, READ_TIMEOUT)) as answer:
        watch = str((case.query or {}).get("watch")) in ("true", "1")
        body = b"" if watch and answer.status_code == 200 else answer.content
        return answer.status_code, answer.headers.get("content-type", ""), body


@pytest.mark.slow  # (a minute and a half of generated requests: in make test, not make check)
def test_no_request_fails_the_facade(audit_server: str) -> None:  # noqa: F811
    import schemathesis  # (here: a second of imports for every test process that collects this file)

    schema = schemathesis.openapi.from_dict(document())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    statuses: dict[int, int] = {}

    for operation, mode in [(o, m) for o in operations for m in schemathesis.GenerationMode]:

        @given(
            case=operation.as_strategy(mode),
            run=st.sampled_from([RUN, "latest", None]),
            at=st.sampled_from(["end", "5m", None]),
            real=st.sampled_from([True, False]),
        )
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any, run: str | None, at: str | None, real: bool) -> None:
            # random runs and instants meet a 404: aim most requests at what the store holds
            # (hypothesis draws the first of each list most: the real ones)
            params = case.path_parameters or {}
            if run is not None:
                params["run"] = run
            if at is not None:
                params["at"] = at
            if real and "namespace" in params:
                params["namespace"], params["name"] = EVICTED.split("/")
            elif real and "name" in params:
                params["name"] = NODE
            status, kind, body = _call(case, audit_server)
            where = (case.method, case.formatted_path, case.query)
            assert status < 500, (where, body[:500])
            if status >= 400:
                assert kind.startswith("application/json"), (where, kind)
                answer = json.loads(body)
                assert answer["kind"] == "Status" and answer["code"] == status, (where, answer)
            documented = case.operation.definition.raw.get("responses", {})
            assert str(status) in documented, (where, status, sorted(documented))
            statuses[status] = statuses.get(status, 0) + 1

        try:
            fuzz()
        except Unsatisfiable:  # no invalid request exists where every parameter takes any string
            assert mode is schemathesis.GenerationMode.NEGATIVE
    # it reached the data, not only the errors
    assert statuses.get(200, 0) > 100 and statuses.get(400, 0) > 30 and statuses.get(405, 0) > 20, statuses
    print(f"fuzzed {sum(statuses.values())} requests: {dict(sorted(statuses.items()))}")


#: the server on SQLite in the quick tier, on PostgreSQL too in make test: what is tried
#: here is the HTTP layer's reading of a request, before any store is asked
SERVER_ON_SQLITE_QUICK = pytest.mark.parametrize(
    "audit_server", slow_unless(["sqlite", "postgresql"], quick={"sqlite"}), indirect=True
)


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("limit=%C2%B2", 400),  # a superscript two: str.isdigit said yes, int() said no (a 500)
        ("limit=" + "9" * 4301, 400),  # past int()'s 4,300 digits (a 500)
        ("watch=1&timeoutSeconds=%C2%B9", 400),
        ("watch=1&timeoutSeconds=" + "9" * 5000, 400),
        ("watch=1&timeoutSeconds=1&resourceVersion=%C2%B2", 410),
        ("watch=1&timeoutSeconds=1&resourceVersion=" + "9" * 5000, 410),
        ("labelSelector=" + "x%3E" + "9" * 5000, 400),  # x>9999...: no int64 (a 500)
        ("labelSelector=x%3E%D9%A3", 400),  # an Arabic-Indic three: no digit to Go
    ],
)
@SERVER_ON_SQLITE_QUICK
def test_the_reproductions_each_get_a_status(audit_server: str, query: str, status: int) -> None:  # noqa: F811
    answer = requests.get(f"{audit_server}/k8s/{RUN}/end/api/v1/pods?{query}", timeout=30)
    assert answer.status_code == status, answer.text[:300]
    body = answer.json()
    assert body["kind"] == "Status" and body["code"] == status


@pytest.mark.parametrize(
    "path", ["/k8s/x%00/end/api/v1/pods", "/k8s/x%0A/end/api/v1/pods", "/k8s/x/end/api/v1/po%0Ads"]
)
@SERVER_ON_SQLITE_QUICK
def test_paths_holding_nul_or_a_newline_get_a_status(audit_server: str, path: str) -> None:  # noqa: F811
    answer = requests.get(audit_server + path, timeout=30)
    assert answer.status_code in (400, 404), answer.text[:300]
    assert answer.json()["kind"] == "Status"
