"""kubectl's read path over HTTP, without kubectl: the root's answers and its token, the
self-subject reviews in JSON and in Kubernetes protobuf, the OpenAPI documents (v3 per
group version, v2 as JSON and as gnostic protobuf), and the definitions' conversion back
from JSON Schema (``openapi_gen``). ``test_kubectl.py`` runs the same with kubectl."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.quantity import parse_quantity
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.audit.http_api import create_app
from ledgerlet_services.audit.kube_api import openapi_gen
from ledgerlet_services.audit.kube_api import protobuf as pb
from ledgerlet_services.audit.kube_api.metrics import stored_pods
from ledgerlet_services.audit.kube_api.openapi import V2_PROTOBUF, definitions, v2_document
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.postmortem.conftest import RUN, record

PROTOBUF = "application/vnd.kubernetes.protobuf"
TOKEN = "s3cret"


@pytest.fixture(scope="module")
def dsn(tmp_path_factory: pytest.TempPathFactory) -> str:
    found = f"sqlite:///{tmp_path_factory.mktemp('read-path') / 'events.db'}"
    asyncio.run(record(found))
    return found


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn)) as c:
        yield c


def _k8s(path: str) -> str:
    return f"/k8s/{RUN}/end{path}"


def test_the_root_answers_version_discovery_and_openapi_and_wants_the_token(dsn: str) -> None:
    with TestClient(create_app(dsn, token=TOKEN)) as c:
        assert c.get("/version").json()["gitVersion"] == "v1.34.0"  # open, as the API server's is
        assert c.get("/api").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert c.get("/api", headers=auth).json()["versions"] == ["v1"]
        apps = c.get("/apis/apps/v1", headers=auth).json()
        assert {r["name"] for r in apps["resources"]} >= {"deployments", "daemonsets", "deployments/status"}
        assert c.get("/apis/metrics.k8s.io", headers=auth).json()["preferredVersion"]["version"] == "v1beta1"
        index = c.get("/openapi/v3", headers=auth).json()["paths"]
        assert index["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")
        missing = c.get("/api/v1/pods", headers=auth)
        assert missing.status_code == 404 and missing.json()["kind"] == "Status"
        assert "/k8s/RUN/INSTANT" in missing.json()["message"]
        assert "/version" not in c.get("/openapi.json", headers=auth).json()["paths"]  # not the audit API's


def test_openapi_v3_per_group_version_under_the_runs_prefix(client: TestClient) -> None:
    index = client.get(_k8s("/openapi/v3")).json()["paths"]
    assert set(index) >= {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/metrics.k8s.io/v1beta1"}
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith(f"/k8s/{RUN}/end/openapi/v3/apis/apps/v1?hash=")  # client-go asks for it as it is
    doc = client.get(url).json()
    assert doc["openapi"] == "3.0.0"
    schemas = doc["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert {"group": "apps", "kind": "Deployment", "version": "v1"} in deployment["x-kubernetes-group-version-kind"]
    assert deployment["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}
    ]
    listed = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"]
    assert listed["x-kubernetes-group-version-kind"] == {"group": "apps", "kind": "Deployment", "version": "v1"}
    refs = set(_refs(doc))
    assert refs <= set(schemas), refs - set(schemas)  # every reference resolves within the document
    assert client.get(_k8s("/openapi/v3/apis/nothing/v1")).status_code == 404


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$ref":
                yield str(v).rsplit("/", 1)[-1]
            else:
                yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def test_openapi_v2_as_json_and_as_gnostic_protobuf(client: TestClient) -> None:
    as_json = client.get(_k8s("/openapi/v2")).json()
    assert as_json == v2_document() and as_json["swagger"] == "2.0"
    assert set(_refs(as_json["definitions"])) <= set(as_json["definitions"])
    answer = client.get(
        _k8s("/openapi/v2"), headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    )
    assert answer.headers["content-type"] == V2_PROTOBUF
    fields = list(pb.fields(answer.content))
    assert (fields[0][0], fields[0][2]) == (1, b"2.0")
    (named_definitions,) = [v for n, _, v in fields if n == 9]
    assert isinstance(named_definitions, bytes)
    decoded = {}
    for _, _, named in pb.fields(named_definitions):
        assert isinstance(named, bytes)
        decoded[pb.strings(named, {1: "name"})["name"]] = pb.message(named, 2)
    assert set(decoded) == set(definitions())
    pod = decoded["io.k8s.api.core.v1.Pod"]
    assert pod is not None
    assert pb.strings(pod, {4: "description"})["description"].startswith("Pod is a collection of containers")
    extensions = [v for n, _, v in pb.fields(pod) if n == 31]
    (gvk,) = [e for e in extensions if isinstance(e, bytes) and b"x-kubernetes-group-version-kind" in e]
    assert b"kind: Pod" in (pb.message(gvk, 2) or b"")


def _protobuf_review(kind: str, group_version: str, spec: bytes) -> bytes:
    type_meta = pb.field_string(1, group_version) + pb.field_string(2, kind)
    return pb.K8S_MAGIC + pb.field_bytes(1, type_meta) + pb.field_bytes(2, pb.field_bytes(2, spec))


def test_reviews_in_json_and_in_protobuf_tell_read_only_truths(client: TestClient) -> None:
    path = _k8s("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")

    def access(verb: str, resource: str, group: str = "", sub: str = "") -> dict[str, Any]:
        attributes = {"verb": verb, "resource": resource, "group": group, "subresource": sub}
        answer = client.post(path, json={"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}})
        assert answer.status_code == 201, answer.text
        status: dict[str, Any] = answer.json()["status"]
        return status

    assert access("get", "pods")["allowed"] is True
    assert access("watch", "deployments", "apps")["allowed"] is True
    assert access("get", "pods", sub="status")["allowed"] is True
    for verb, resource, group, sub in (
        ("create", "pods", "", ""),
        ("get", "pods", "", "log"),
        ("get", "secrets", "", ""),
    ):
        denied = access(verb, resource, group, sub)
        assert denied["allowed"] is False and "stored run" in denied["reason"]
    attributes = pb.field_string(2, "delete") + pb.field_string(5, "nodes")
    body = _protobuf_review("SelfSubjectAccessReview", "authorization.k8s.io/v1", pb.field_bytes(1, attributes))
    answer = client.post(path, content=body, headers={"Content-Type": PROTOBUF})
    assert answer.status_code == 201
    assert answer.json()["spec"]["resourceAttributes"] == {"verb": "delete", "resource": "nodes"}
    assert answer.json()["status"]["allowed"] is False
    rules = client.post(
        _k8s("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"),
        content=_protobuf_review(
            "SelfSubjectRulesReview", "authorization.k8s.io/v1", pb.field_string(1, "kube-system")
        ),
        headers={"Content-Type": PROTOBUF},
    ).json()
    assert rules["spec"] == {"namespace": "kube-system"} and rules["status"]["incomplete"] is False
    core = next(r for r in rules["status"]["resourceRules"] if r["apiGroups"] == [""])
    assert core["verbs"] == ["get", "list", "watch"] and "pods/status" in core["resources"]
    who = client.post(_k8s("/apis/authentication.k8s.io/v1/selfsubjectreviews"), json={}).json()
    assert who["status"]["userInfo"]["username"] == "system:anonymous"
    assert client.get(path).status_code == 405 and client.get(path).headers["allow"] == "POST"
    garbage = client.post(path, content=b"k8s\x00\xff", headers={"Content-Type": PROTOBUF})
    assert garbage.status_code == 400 and garbage.json()["reason"] == "BadRequest"
    assert client.post(_k8s("/api/v1/namespaces/default/pods"), json={}).status_code == 405  # writes still refused


def test_definitions_come_back_from_json_schema_as_openapi_v2() -> None:
    """``openapi_gen`` on a small source in kubernetes-validate's form."""
    source = {
        "io.k8s.api.core.v1.Thing": {
            "description": "A thing.",
            "properties": {
                "apiVersion": {"type": ["string", "null"], "enum": ["v1"]},
                "spec": {"$ref": "#/$defs/io.k8s.api.core.v1.ThingSpec", "description": "Its spec."},
            },
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Thing", "version": "v1"}],
            "$schema": "https://json-schema.org/draft/2020-12/schema",
        },
        "io.k8s.api.core.v1.ThingSpec": {
            "properties": {
                "size": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"},
                "port": {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]},
                "names": {"items": {"type": ["string", "null"]}, "type": ["array", "null"]},
            },
            "type": ["object", "null"],
        },
        "io.k8s.apimachinery.pkg.api.resource.Quantity": {
            "oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]
        },
        "io.k8s.api.core.v1.Unrelated": {"type": "object"},
    }
    found = openapi_gen.closure(source, ["io.k8s.api.core.v1.Thing"])
    assert set(found) == {
        "io.k8s.api.core.v1.Thing",
        "io.k8s.api.core.v1.ThingSpec",
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
    }
    thing = found["io.k8s.api.core.v1.Thing"]
    assert "$schema" not in thing and thing["properties"]["apiVersion"] == {"type": "string"}
    assert thing["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.ThingSpec",
        "description": "Its spec.",
    }
    spec = found["io.k8s.api.core.v1.ThingSpec"]
    assert spec["type"] == "object" and spec["properties"]["names"] == {"items": {"type": "string"}, "type": "array"}
    assert spec["properties"]["port"] == {"type": "string", "format": "int-or-string"}
    assert found["io.k8s.apimachinery.pkg.api.resource.Quantity"] == {"type": "string"}
    with pytest.raises(KeyError, match=re.escape("no definition 'io.k8s.api.core.v1.Pod'")):
        openapi_gen.closure(source, ["io.k8s.api.core.v1.Pod"])


def test_pod_metrics_worked_out_again_equal_those_stored_whole(tmp_path: Path) -> None:
    """The incident twice: observations stored without their pods (the default) and whole
    (``--store-observations full``). What ``kubectl top`` is answered from the first is
    worked out again from the inputs; from the second, read."""
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    incident = load_scenario((EXAMPLES / "disk-pressure-fluentd.yaml").read_text(), "disk-pressure-fluentd.yaml")

    async def record_both() -> tuple[list[Envelope], list[Envelope]]:
        async with await open_store(dsn) as store:
            await run_embedded(incident, store, run="whole", full_observations=True)
            await run_embedded(incident, store, run="node")
            out = []
            for run in ("whole", "node"):
                rows = await store.read_stream_window(run, "node/k8s-m1", types=["NodeObserved"], t_to=299 * SECOND)
                out.append([r.envelope for r in rows])
            return out[0], out[1]

    whole, node = asyncio.run(record_both())
    assert all(decode_data(e).summary.pods for e in whole)  # every pod of every observation
    stored = stored_pods(whole)
    assert stored is not None and stored_pods(node) is None
    with TestClient(create_app(dsn)) as c:
        path = "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods"
        read = c.get(f"/k8s/whole/4m59s{path}").json()["items"]
        derived = c.get(f"/k8s/node/4m59s{path}").json()["items"]
        assert read == derived and len(read) == 8
        fluentd = next(p for p in read if p["metadata"]["name"] == "fluentd-elasticsearch-wk8xc")
        memory = stored["kube-system/fluentd-elasticsearch-wk8xc"]["fluentd-elasticsearch"]
        (container,) = fluentd["containers"]
        assert container["name"] == "fluentd-elasticsearch" and set(container["usage"]) == {"memory"}
        assert parse_quantity(container["usage"]["memory"]).value() == memory > 0
        assert fluentd["timestamp"] == "2026-01-29T09:04:50Z" and fluentd["window"] == "10s"
        node_metrics = c.get("/k8s/node/4m59s/apis/metrics.k8s.io/v1beta1/nodes/k8s-m1").json()
        observed = decode_data(node[-1]).summary.node.memory.working_set_bytes  # the node's, as stored
        assert (
            node_metrics["kind"] == "NodeMetrics"
            and parse_quantity(node_metrics["usage"]["memory"]).value() == observed
        )
        assert "cpu" not in node_metrics["usage"]  # not modelled, so not made up
