"""The audit API on both stores: pages, filters, one decision with its inputs, a pod's
history and explanation, a node's timeline, problem+json errors, bearer tokens."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from ledgerlet_services.audit.http_api import create_app
from tests.conftest import fresh_pg_database
from tests.postmortem.conftest import EVICTED, RUN, record

TOKEN = "s3cret-token"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The incident recorded once for the whole file on each store: the audit API only
    reads (it opens the store for reading), so no test sees another's."""
    if request.param == "sqlite":
        dsn = f"sqlite:///{tmp_path_factory.mktemp('audit') / 'events.db'}"
        asyncio.run(record(dsn))
        yield dsn
    else:
        request.getfixturevalue("pg_server")
        with fresh_pg_database() as dsn:
            asyncio.run(record(dsn))
            yield dsn


@pytest.fixture
def client(recorded: str) -> Iterator[TestClient]:
    with TestClient(create_app(recorded)) as c:
        yield c


def test_pages_cover_every_decision_once_in_decision_order(client: TestClient) -> None:
    full = client.get(f"/v1/runs/{RUN}/decisions", params={"limit": 1000}).json()
    assert full["next"] is None
    everything = [d["id"] for d in full["items"]]
    assert len(everything) == 45  # 35 kubelet decisions + 10 API-server admissions of DaemonSet pods
    paged, cursor = [], None
    while True:
        params: dict[str, object] = {"limit": 4}
        if cursor:
            params["cursor"] = cursor
        body = client.get(f"/v1/runs/{RUN}/decisions", params=params).json()
        assert len(body["items"]) <= 4
        paged += [d["id"] for d in body["items"]]
        cursor = body["next"]
        if cursor is None:
            break
    assert paged == everything
    times = [d["t"] for d in full["items"]]
    assert times == sorted(times)


def test_filters(client: TestClient) -> None:
    evicted = client.get("/v1/runs/latest/decisions", params={"type": "PodEvicted"}).json()["items"]
    assert [(d["pod"], d["t"]) for d in evicted] == [(EVICTED, 300.0)]
    both = client.get("/v1/runs/latest/decisions", params=[("type", "PodEvicted"), ("type", "PodTerminated")])
    assert {d["type"] for d in both.json()["items"]} == {"PodEvicted", "PodTerminated"}
    window = client.get("/v1/runs/latest/decisions", params={"from": 260, "to": 260}).json()["items"]
    assert window and all(d["t"] == 260.0 for d in window)
    by_pod = client.get("/v1/runs/latest/decisions", params={"pod": EVICTED}).json()["items"]
    assert {d["type"] for d in by_pod} == {"PodEvicted", "PodTerminated", "PodReplaced"}
    assert client.get("/v1/runs/latest/decisions", params={"node": "nope"}).json()["items"] == []


def test_windows_take_clock_time_as_well_as_offsets(client: TestClient) -> None:
    def window(**bounds: object) -> list[str]:
        answer = client.get("/v1/runs/latest/decisions", params={**bounds, "limit": 1000})
        assert answer.status_code == 200, answer.text
        return [d["id"] for d in answer.json()["items"]]

    by_seconds = window(**{"from": 260, "to": 300})
    assert by_seconds
    for start, end in (("09:04:20", "09:05"), ("2026-01-29T09:04:20Z", "2026-01-29T10:05:00+01:00"), ("4m20s", "5m")):
        assert window(**{"from": start, "to": end}) == by_seconds, (start, end)
    timeline = client.get("/v1/runs/latest/nodes/k8s-m1/timeline", params={"from": "09:05", "to": "09:05"}).json()
    assert timeline["events"] and {e["time"] for e in timeline["events"]} == {"2026-01-29T09:05:00Z"}
    bad = client.get("/v1/runs/latest/decisions", params={"to": "25:00"})
    assert bad.status_code == 400 and bad.headers["content-type"] == "application/problem+json"
    assert "to: '25:00' is none of end, an offset such as 5m or 90, a time of day" in bad.json()["detail"]


def test_one_decision_with_its_inputs(client: TestClient) -> None:
    evicted = client.get("/v1/runs/latest/decisions", params={"type": "PodEvicted"}).json()["items"][0]
    body = client.get(f"/v1/runs/latest/decisions/{evicted['id']}").json()
    assert body["data"]["ranking"][0] == EVICTED
    assert body["data"]["threshold"] == "imagefs.available<15%"
    (observation,) = body["inputs"]
    assert observation["type"] == "NodeObserved" and observation["t"] == 300.0
    # the signal as the kubelet computed it from that observation is the decision's figure
    assert observation["signals"]["imagefs.available"]["available"] == body["data"]["observed"]


def test_pod_history_node_timeline_and_explain(client: TestClient) -> None:
    history = client.get(f"/v1/runs/latest/pods/{EVICTED}").json()["events"]
    assert [e["type"] for e in history][:1] == ["ObjectApplied"]
    assert "PodEvicted" in [e["type"] for e in history]
    timeline = client.get("/v1/runs/latest/nodes/k8s-m1/timeline", params={"to": 300}).json()["events"]
    assert all(e["kind"] != "internal" for e in timeline)
    assert "NodeConditionChanged" in {e["type"] for e in timeline}
    exp = client.get(f"/v1/runs/latest/pods/{EVICTED}/explain").json()
    assert exp["outcome"]["type"] == "PodEvicted"
    assert exp["ranking"][0]["this"] and exp["ranking"][0]["position"] == 1
    assert exp["signal"]["signal"] == "imagefs.available"
    text = client.get(f"/v1/runs/latest/pods/{EVICTED}/explain", params={"format": "text"})
    assert text.headers["content-type"].startswith("text/plain")
    assert "ranked 1st of 8" in text.text


def test_errors_are_problem_json(client: TestClient) -> None:
    for path, params, status in [
        ("/v1/runs/no-such-run/decisions", {}, 404),
        ("/v1/runs/latest/decisions/not-an-id", {}, 404),
        ("/v1/runs/latest/pods/default/nobody", {}, 404),
        ("/v1/runs/latest/decisions", {"limit": 5000}, 400),
        ("/v1/runs/latest/decisions", {"cursor": "garbage!"}, 400),
        ("/v1/runs/latest/decisions", {"from": "soon"}, 400),
    ]:
        r = client.get(path, params=params)
        assert r.status_code == status, (path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["status"] == status and body["title"] and body["detail"]


def test_health_readiness_and_openapi(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ready"
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/runs/{run}/pods/{namespace}/{name}/explain" in paths


def test_bearer_token(recorded: str) -> None:
    with TestClient(create_app(recorded, token=TOKEN)) as c:
        denied = c.get("/v1/runs")
        assert denied.status_code == 401
        assert denied.headers["www-authenticate"] == "Bearer"
        assert denied.headers["content-type"] == "application/problem+json"
        assert c.get("/v1/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = c.get("/v1/runs", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json()[0]["run"] == RUN
        assert c.get("/healthz").status_code == 200  # probes need no token


def test_with_a_token_metrics_are_behind_it_and_readiness_says_nothing_of_the_store(recorded: str) -> None:
    """/metrics answered anyone (the routes and their traffic), /readyz showed the store's
    address (its host and user) to anyone."""
    with TestClient(create_app(recorded, token=TOKEN)) as c:
        denied = c.get("/metrics")
        assert denied.status_code == 401 and denied.headers["content-type"] == "application/problem+json"
        metrics = c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert metrics.status_code == 200 and "ledgerlet_api_requests" in metrics.text
        ready = c.get("/readyz")  # (probes send no token)
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        assert (
            "401"
            in c.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()["paths"]["/metrics"]["get"][
                "responses"
            ]
        )
    with TestClient(create_app(recorded)) as c:  # no token: open, as before
        assert c.get("/metrics").status_code == 200 and c.get("/readyz").json() == {"status": "ready"}


def _cursor(*parts: object) -> str:
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


def test_hostile_requests_get_a_problem_never_a_500(client: TestClient) -> None:
    """What a fuzzer found (a 500 each, on one store or both): window bounds beyond the
    clock or not finite, cursors holding numbers no column holds, NUL bytes."""
    for path, params in [
        ("/v1/runs/latest/decisions", {"from": "1e12"}),
        ("/v1/runs/latest/decisions", {"to": "-1e300"}),
        ("/v1/runs/latest/decisions", {"from": "nan"}),
        ("/v1/runs/latest/decisions", {"to": "inf"}),
        ("/v1/runs/latest/nodes/k8s-m1/timeline", {"from": "1e19"}),
        ("/v1/runs/latest/decisions", {"cursor": _cursor(2**70, "k", 1)}),
        ("/v1/runs/latest/decisions", {"cursor": _cursor(True, "k", False)}),
        ("/v1/runs/latest/decisions", {"cursor": _cursor(1, "k\x00", 1)}),
        ("/v1/runs/latest/decisions", {"node": "k8s\x00m1"}),
        ("/v1/runs/latest/pods/default/a%00b", {}),
    ]:
        r = client.get(path, params=params)
        assert r.status_code == 400, (path, params, r.status_code, r.text)
        assert r.headers["content-type"] == "application/problem+json"


def test_unknown_pods_explain_as_404_and_405_says_what_is_allowed(client: TestClient) -> None:
    assert client.get("/v1/runs/latest/pods/default/nobody/explain").status_code == 404
    r = client.post("/v1/runs")
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    assert r.headers["content-type"] == "application/problem+json"


def test_runs_show_their_state_and_no_server_path(client: TestClient) -> None:
    (run,) = client.get("/v1/runs").json()
    assert run["status"] == "completed"
    assert run["source"] == "disk-pressure-fluentd.yaml"  # the file's name, not where the server keeps it
    assert run["recordedAt"].endswith("+00:00")  # with its zone, on SQLite too


@pytest.mark.slow
def test_with_a_token_the_openapi_document_is_behind_it(recorded: str) -> None:
    with TestClient(create_app(recorded, token=TOKEN)) as c:
        assert c.get("/openapi.json").status_code == 401
        assert c.get("/docs").status_code == 404
        assert "paths" in c.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    with TestClient(create_app(recorded, token=TOKEN, publish_docs=True)) as c:
        assert c.get("/openapi.json").status_code == 200 and c.get("/docs").status_code == 200


def test_the_docs_pages_load_nothing_from_elsewhere(client: TestClient) -> None:
    """Swagger UI and ReDoc from the assets the package ships (a CDN page is blank offline)."""
    import re

    for page, asset in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        html = client.get(page).text
        assert f"/docs-assets/{asset}" in html
        fetched = re.findall(r"""(?:src|href)=["']?(https?://[^"' >]+)""", html)
        assert fetched == [], fetched
        script = client.get(f"/docs-assets/{asset}")
        assert script.status_code == 200 and len(script.content) > 100_000


@pytest.mark.slow
def test_the_document_names_the_errors_the_server_gives(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    decisions = doc["paths"]["/v1/runs/{run}/decisions"]["get"]["responses"]
    assert set(decisions) == {"200", "400", "401", "404"} and "422" not in str(doc["paths"])
    problem = decisions["400"]["content"]["application/problem+json"]["schema"]
    assert problem == {"$ref": "#/components/schemas/Problem"}
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    answered = client.get(f"/v1/runs/{RUN}/decisions", params={"limit": "many"})
    assert answered.status_code == 400 and answered.headers["content-type"] == "application/problem+json"
    assert set(doc["paths"]["/healthz"]["get"]["responses"]) == {"200"}


def test_prometheus_metrics_count_requests_by_route_template(client: TestClient) -> None:
    for _ in range(3):
        assert client.get(f"/v1/runs/{RUN}/decisions", params={"limit": 2}).status_code == 200
    assert client.get("/v1/runs/no-such-run/decisions").status_code == 404
    text = client.get("/metrics").text
    route = 'route="/v1/runs/{run}/decisions"'
    assert f'ledgerlet_api_requests_total{{method="GET",{route},status="200"}} 3.0' in text
    assert f'ledgerlet_api_requests_total{{method="GET",{route},status="404"}} 1.0' in text
    assert f'ledgerlet_api_request_seconds_count{{method="GET",{route}}} 4.0' in text
    assert "no-such-run" not in text  # ids never become series
    assert client.request("ZZ0", "/v1/runs").status_code in (400, 405)
    assert 'method="ZZ0"' not in client.get("/metrics").text  # nor do made-up methods


def test_the_kube_facade_is_counted_by_route_template_and_the_process_is_measured(client: TestClient) -> None:
    """Every kubectl request used to be counted as route="/{path:path}"."""
    ns, name = EVICTED.split("/")
    asked = {
        f"/k8s/{RUN}/end/api/v1/namespaces/{ns}/pods/{name}": (200, "/api/v1/namespaces/{namespace}/pods/{name}"),
        f"/k8s/{RUN}/5m/api/v1/pods": (200, "/api/v1/pods"),
        f"/k8s/{RUN[:6]}/end/api/v1/nodes/k8s-m1": (200, "/api/v1/nodes/{name}"),
        f"/k8s/{RUN}/end/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets": (
            200,
            "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
        ),
        f"/k8s/{RUN}/end/api/v1/namespaces/{ns}/pods/{name}/log": (
            403,
            "/api/v1/namespaces/{namespace}/pods/{name}/log",
        ),
        f"/k8s/{RUN}/end/apis/made.up/v9/things": (404, "/apis/{group}/{version}/{resource}"),
        f"/k8s/{RUN}/end/nonsense/a/b": (404, "/{path}"),
    }
    for path, (status, _) in asked.items():
        assert client.get(path).status_code == status, path
    text = client.get("/metrics").text
    for status, route in asked.values():
        assert (
            f'ledgerlet_api_requests_total{{method="GET",route="/k8s/{{run}}/{{at}}{route}",status="{status}"}} 1.0'
            in text
        )
    assert "{path:path}" not in text and RUN not in text and name not in text and "made.up" not in text
    # buckets from a millisecond to a watch's half hour
    assert 'le="0.001"' in text and 'le="1800.0"' in text
    for metric in ("process_resident_memory_bytes ", "process_cpu_seconds_total ", "process_open_fds "):
        assert any(line.startswith(metric) and float(line.split()[1]) > 0 for line in text.splitlines()), metric


@pytest.mark.slow
def test_a_misspelt_type_filter_is_a_400_with_the_closest_type(client: TestClient) -> None:
    """It used to answer 200 and an empty page, as if nothing had happened."""
    answer = client.get(f"/v1/runs/{RUN}/decisions", params={"type": "PodEvictd"})
    assert answer.status_code == 400 and answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["detail"] == "type: 'PodEvictd' is no decision type; did you mean 'PodEvicted'?"
    listed = client.get(f"/v1/runs/{RUN}/decisions", params={"type": "Nonsense"}).json()["detail"]
    assert "is no decision type; see " in listed and "PodEvicted" in listed
    fine = client.get(f"/v1/runs/{RUN}/decisions", params={"type": ["PodEvicted", "NodeReclaimed"]})
    assert fine.status_code == 200 and {d["type"] for d in fine.json()["items"]} == {"PodEvicted", "NodeReclaimed"}


@pytest.mark.slow
def test_answers_are_typed_in_the_document(client: TestClient) -> None:
    """Every 200 names a schema with the fields a client gets, and answers match it."""
    import jsonschema

    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    page = doc["paths"]["/v1/runs/{run}/decisions"]["get"]["responses"]["200"]["content"]["application/json"]
    assert page["schema"] == {"$ref": "#/components/schemas/DecisionsPage"}
    assert set(schemas["Record"]["properties"]) >= {"id", "t", "time", "type", "kind", "node", "pod", "data", "causes"}
    assert schemas["Run"]["properties"]["status"]["enum"] == ["completed", "failed", "running", "abandoned"]
    explain = doc["paths"]["/v1/runs/{run}/pods/{namespace}/{name}/explain"]["get"]["responses"]["200"]["content"]
    assert explain["application/json"]["schema"] == {"$ref": "#/components/schemas/Explanation"}

    def valid(name: str, body: object) -> None:
        schema = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": schemas}}
        jsonschema.Draft202012Validator(schema).validate(body)

    valid("DecisionsPage", client.get(f"/v1/runs/{RUN}/decisions").json())
    first = client.get(f"/v1/runs/{RUN}/decisions", params={"type": "PodEvicted"}).json()["items"][0]
    assert "signals" not in first  # a field the handler did not set is left out, not null
    valid("Decision", client.get(f"/v1/runs/{RUN}/decisions/{first['id']}").json())
    valid("Explanation", client.get(f"/v1/runs/{RUN}/pods/{EVICTED}/explain").json())
