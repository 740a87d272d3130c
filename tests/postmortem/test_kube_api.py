"""The Kubernetes API facade over HTTP, on both stores: objects as the API server held them
at an instant, events with their counts, Tables, selectors, pages, watch, and Status
errors. What is expected is read from the run's own decisions (the audit API), not
written down here."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.audit.http_api import create_app
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import ROOT, fresh_pg_database
from tests.golden.cases import SCENARIOS
from tests.postmortem.conftest import EVICTED, RUN, record

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
OOS = "out-of-service"
PREEMPTION = "preemption"
KATA = "kata"
#: a StatefulSet's pod evicted and created again under its name (twice)
CONTROLLERS = "controllers"
RECREATED = "shop/db-0"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def kube(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The audit API on a store holding the fluentd incident and two other runs."""

    def serve(dsn: str) -> Iterator[TestClient]:
        asyncio.run(record(dsn))
        asyncio.run(record(dsn, "out-of-service-statefulset.yaml", run=OOS))
        asyncio.run(record(dsn, "preemption-with-pdb.yaml", run=PREEMPTION))
        asyncio.run(record(dsn, "pod-overhead-kata-fc.yaml", run=KATA))
        asyncio.run(record_golden(dsn, "workloads-create-their-pods-and-replace-evicted-ones.yaml", CONTROLLERS))
        with TestClient(create_app(dsn)) as c:
            yield c

    if request.param == "sqlite":
        yield from serve(f"sqlite:///{tmp_path_factory.mktemp('kube') / 'events.db'}")
    else:
        request.getfixturevalue("pg_server")
        with fresh_pg_database() as dsn:
            yield from serve(dsn)


async def record_golden(dsn: str, name: str, run: str) -> None:
    path = SCENARIOS / name
    scenario = load_scenario(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=run)


def k8s(run: str, at: str, path: str) -> str:
    return f"/k8s/{run}/{at}{path}"


def pod_path(pod: str) -> str:
    namespace, name = pod.split("/")
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def decisions(c: TestClient, run: str, kind: str) -> list[dict[str, Any]]:
    return list(c.get(f"/v1/runs/{run}/decisions", params={"type": kind, "limit": 1000}).json()["items"])


def items(c: TestClient, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a list, following ``continue``."""
    out: list[dict[str, Any]] = []
    token = None
    while True:
        answer = c.get(path, params={**params, **({"continue": token} if token else {})})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        out += body["items"]
        token = body["metadata"].get("continue")
        if not token:
            return out


def test_the_evicted_pod_before_at_and_after_its_eviction(kube: TestClient) -> None:
    (evicted,) = decisions(kube, RUN, "PodEvicted")
    assert evicted["pod"] == EVICTED and evicted["t"] == 300.0
    before = kube.get(k8s(RUN, "4m59s", pod_path(EVICTED))).json()
    assert before["status"]["phase"] == "Running"
    assert "DisruptionTarget" not in {c["type"] for c in before["status"]["conditions"]}
    assert before["status"]["containerStatuses"][0]["state"]["running"]
    for at in ("5m", "end"):
        pod = kube.get(k8s(RUN, at, pod_path(EVICTED))).json()
        status = pod["status"]
        assert (status["phase"], status["reason"], status["message"]) == (
            "Failed",
            "Evicted",
            evicted["data"]["message"],
        )
        (target,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
        assert (target["status"], target["reason"]) == ("True", "TerminationByKubelet")
        assert target["lastTransitionTime"] == evicted["time"]
        assert pod["metadata"]["uid"] and pod["spec"]["nodeName"] == evicted["node"]


def test_an_instant_in_clock_time_and_served_as_now(kube: TestClient) -> None:
    """``/k8s/RUN/09:05/...`` is ``5m``; ``@now`` moves every timestamp by one whole
    number of seconds so that the instant reads as the request's moment."""
    (evicted,) = decisions(kube, RUN, "PodEvicted")
    by_offset = kube.get(k8s(RUN, "5m", pod_path(EVICTED))).json()
    for at in ("09:05", "09:05:00Z", "2026-01-29T09:05:00Z", "2026-01-29T10:05:00+01:00", "300"):
        assert kube.get(k8s(RUN, at, pod_path(EVICTED))).json() == by_offset, at
    refused = kube.get(k8s(RUN, "08:00", pod_path(EVICTED)))
    assert refused.status_code == 404 and "outside the run" in refused.json()["message"]
    before = time.time()
    moved = kube.get(k8s(RUN, "5m@now", pod_path(EVICTED))).json()
    after = time.time()
    (target,) = [c for c in moved["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    shown = dt.datetime.fromisoformat(target["lastTransitionTime"]).timestamp()  # the eviction: the instant shown
    assert before - 1 <= shown <= after
    recorded_created = dt.datetime.fromisoformat(by_offset["metadata"]["creationTimestamp"]).timestamp()
    moved_created = dt.datetime.fromisoformat(moved["metadata"]["creationTimestamp"]).timestamp()
    assert moved_created - recorded_created == shown - dt.datetime.fromisoformat(evicted["time"]).timestamp()
    assert {k: v for k, v in moved.items() if k != "metadata" and k != "status"} == {
        k: v for k, v in by_offset.items() if k != "metadata" and k != "status"
    }
    rows = kube.get(k8s(RUN, "5m@now", "/api/v1/namespaces/kube-system/pods"), headers={"Accept": TABLE}).json()
    age = [c["name"] for c in rows["columnDefinitions"]].index("Age")
    ages = {r["cells"][0]: r["cells"][age] for r in rows["rows"]}
    assert ages[EVICTED.split("/")[1]] == "5m"  # the server's AGE is the same either way


def test_pods_exist_from_admission_and_a_refused_one_says_why(kube: TestClient) -> None:
    rejected = decisions(kube, RUN, "PodRejected")
    first = min(rejected, key=lambda d: d["t"])
    not_yet = kube.get(k8s(RUN, "5m", pod_path(first["pod"])))
    assert not_yet.status_code == 404
    assert not_yet.json() | {"details": None} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "{first["pod"].split("/")[1]}" not found',
        "reason": "NotFound",
        "details": None,
        "code": 404,
    }
    at = f"{int(first['t'])}s"
    status = kube.get(k8s(RUN, at, pod_path(first["pod"]))).json()["status"]
    assert (status["phase"], status["reason"]) == ("Failed", first["data"]["reason"])
    assert status["message"] == "Pod was rejected: " + first["data"]["message"]


def test_node_conditions_and_taints_follow_the_decisions(kube: TestClient) -> None:
    changes = decisions(kube, RUN, "NodeConditionChanged")
    taints = decisions(kube, RUN, "NodeTaintAdded")
    first = changes[0]
    assert (first["data"]["condition"], first["data"]["status"]) == ("DiskPressure", "True")

    def node(at: str) -> dict[str, Any]:
        return dict(kube.get(k8s(RUN, at, "/api/v1/nodes/k8s-m1")).json())

    def disk(n: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in n["status"]["conditions"] if c["type"] == "DiskPressure")

    before = node(f"{int(first['t']) - 1}s")
    assert disk(before)["status"] == "False" and disk(before)["reason"] == "KubeletHasNoDiskPressure"
    assert "taints" not in before["spec"]
    under = node(f"{int(first['t'])}s")
    assert (disk(under)["status"], disk(under)["reason"], disk(under)["message"]) == (
        "True",
        first["data"]["reason"],
        first["data"]["message"],
    )
    assert disk(under)["lastTransitionTime"] == first["time"]
    assert [(t["key"], t["effect"]) for t in under["spec"]["taints"]] == [
        (taints[0]["data"]["key"], taints[0]["data"]["effect"])
    ]
    assert [c["type"] for c in under["status"]["conditions"]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
    relieved = next(d for d in changes if d["data"]["status"] == "False")
    assert disk(node(f"{int(relieved['t'])}s"))["status"] == "False"
    assert under["status"]["allocatable"] and under["status"]["capacity"]


def test_events_come_from_the_decisions_with_upstreams_counts(kube: TestClient) -> None:
    events = items(kube, k8s(RUN, "end", "/api/v1/events"))
    names = [e["metadata"]["name"] for e in events]
    assert len(names) == len(set(names))
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_reason.setdefault(e["reason"], []).append(e)
    pressure = [d for d in decisions(kube, RUN, "NodeConditionChanged") if d["data"]["status"] == "True"]
    (disk,) = by_reason["NodeHasDiskPressure"]  # identical events are one Event, counted
    assert disk["count"] == len(pressure)
    assert disk["firstTimestamp"] == pressure[0]["time"] and disk["lastTimestamp"] == pressure[-1]["time"]
    assert disk["involvedObject"] == {"kind": "Node", "name": "k8s-m1", "uid": "k8s-m1"}
    assert disk["source"] == {"component": "kubelet", "host": "k8s-m1"} and disk["metadata"]["namespace"] == "default"
    kubelet_refusals = [d for d in decisions(kube, RUN, "PodRejected") if d["data"]["admitter"] == "kubelet"]
    (evicted,) = decisions(kube, RUN, "PodEvicted")
    assert {e["involvedObject"]["name"] for e in by_reason["Evicted"]} == {
        d["pod"].split("/")[1] for d in [evicted, *kubelet_refusals]
    }
    gc_failures = [d for d in decisions(kube, RUN, "ImageGarbageCollected") if d["data"].get("error")]
    assert [e["message"] for e in by_reason["FreeDiskSpaceFailed"]] == [d["data"]["error"] for d in gc_failures]
    created = [e["message"] for e in by_reason["SuccessfulCreate"]]
    assert created == [
        f"Created pod: {d['data']['replacement'].split('/')[1]}" for d in decisions(kube, RUN, "PodReplaced")
    ]
    # the same list through events.k8s.io/v1, under its own field names
    v1 = items(kube, k8s(RUN, "end", "/apis/events.k8s.io/v1/events"))
    assert [(e["metadata"]["name"], e["note"], e["regarding"]) for e in v1] == [
        (e["metadata"]["name"], e["message"], e["involvedObject"]) for e in events
    ]
    # at an earlier instant only what had happened, counted so far
    early = items(kube, k8s(RUN, f"{int(pressure[0]['t'])}s", "/api/v1/events"))
    assert [e["count"] for e in early if e["reason"] == "NodeHasDiskPressure"] == [1]


def test_pages_follow_continue_and_cover_the_list_once(kube: TestClient) -> None:
    for path in ("/api/v1/pods", "/api/v1/events", "/api/v1/namespaces/kube-system/pods"):
        whole = items(kube, k8s(RUN, "end", path))
        paged = items(kube, k8s(RUN, "end", path), limit=3)
        assert [o["metadata"]["uid"] for o in paged] == [o["metadata"]["uid"] for o in whole]
        assert len(whole) > 3
    first = kube.get(k8s(RUN, "end", "/api/v1/pods"), params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["metadata"]["continue"]
    elsewhere = kube.get(k8s(RUN, "5m", "/api/v1/pods"), params={"continue": first["metadata"]["continue"]})
    assert elsewhere.status_code == 400 and elsewhere.json()["reason"] == "BadRequest"


def test_tables_carry_kubectls_columns_aged_to_the_instant(kube: TestClient) -> None:
    body = kube.get(k8s(RUN, "end", "/api/v1/namespaces/kube-system/pods"), headers={"Accept": TABLE}).json()
    assert body["kind"] == "Table"
    assert [c["name"] for c in body["columnDefinitions"]] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates",
    ]  # fmt: skip
    rows = {r["cells"][0]: r["cells"] for r in body["rows"]}
    assert rows[EVICTED.split("/")[1]][1:5] == ["0/1", "Evicted", "0", "25m"]
    assert body["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    early = kube.get(k8s(RUN, "4m", "/api/v1/namespaces/kube-system/pods"), headers={"Accept": TABLE}).json()
    assert {r["cells"][2] for r in early["rows"]} == {"Running"} and {r["cells"][4] for r in early["rows"]} == {"4m"}
    nodes = kube.get(k8s(RUN, "end", "/api/v1/nodes"), headers={"Accept": TABLE}).json()
    assert nodes["rows"][0]["cells"][:3] == ["k8s-m1", "Ready", "control-plane"]


def test_label_and_field_selectors(kube: TestClient) -> None:
    path = k8s(RUN, "end", "/api/v1/pods")
    fluentd = items(kube, path, labelSelector="name=fluentd-elasticsearch")
    assert len(fluentd) == 1 + len(decisions(kube, RUN, "PodReplaced"))
    running = items(kube, path, fieldSelector="status.phase=Running")
    assert running and {p["status"]["phase"] for p in running} == {"Running"}
    on_node = items(kube, path, fieldSelector="spec.nodeName=k8s-m1,status.phase!=Failed")
    assert [p["metadata"]["name"] for p in on_node] == [p["metadata"]["name"] for p in running]
    assert items(kube, path, labelSelector="name in (nope)") == []
    evicted = items(kube, k8s(RUN, "end", "/api/v1/events"), fieldSelector="reason=Evicted")
    assert {e["reason"] for e in evicted} == {"Evicted"} and len(evicted) > 1
    (pod,) = [p for p in fluentd if p["metadata"]["name"] == EVICTED.split("/")[1]]
    about = items(
        kube,
        k8s(RUN, "end", "/api/v1/namespaces/kube-system/events"),
        fieldSelector=f"involvedObject.name={pod['metadata']['name']},involvedObject.namespace=kube-system,"
        f"involvedObject.kind=Pod,involvedObject.uid={pod['metadata']['uid']}",
    )
    assert [e["reason"] for e in about] == ["Evicted", "Killing"]
    for bad, why in (
        ({"fieldSelector": "spec.foo=bar"}, "field label not supported: spec.foo"),
        ({"labelSelector": "a in (b"}, "unable to parse requirement"),
        ({"labelSelector": "!!x"}, "unable to parse requirement"),
    ):
        answer = kube.get(path, params=bad)
        assert answer.status_code == 400 and why in answer.json()["message"], answer.text


@pytest.mark.slow
def test_watch_streams_the_changes_after_the_instant_in_decision_order(kube: TestClient) -> None:
    listed = kube.get(k8s(RUN, "4m50s", "/api/v1/namespaces/kube-system/pods")).json()
    rv = listed["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    with kube.stream("GET", k8s(RUN, "4m50s", "/api/v1/namespaces/kube-system/pods"), params=params) as answer:
        events = [json.loads(line) for line in answer.iter_lines() if line]
    assert events[0]["type"] == "MODIFIED" and events[0]["object"]["metadata"]["name"] == EVICTED.split("/")[1]
    assert events[0]["object"]["status"]["reason"] == "Evicted"
    replacements = [d["data"]["replacement"].split("/")[1] for d in decisions(kube, RUN, "PodReplaced")]
    added = [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"]
    assert added == replacements
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)
    # as a Table: kubectl get -w asks for rows, with the columns once
    with kube.stream(
        "GET", k8s(RUN, "4m50s", "/api/v1/namespaces/kube-system/pods"), params=params, headers={"Accept": TABLE}
    ) as answer:
        tables = [json.loads(line)["object"] for line in answer.iter_lines() if line]
    assert tables[0]["columnDefinitions"] and not any(t["columnDefinitions"] for t in tables[1:])
    assert tables[0]["rows"][0]["cells"][2] == "Evicted"


def test_a_name_used_again_is_a_new_pod_and_preemption_shows_on_both_sides(kube: TestClient) -> None:
    (forced,) = decisions(kube, OOS, "PodForceDeleted")
    gone_at = f"{int(forced['t'])}s"
    old = kube.get(k8s(OOS, f"{int(forced['t']) - 1}s", pod_path(forced["pod"]))).json()
    new = kube.get(k8s(OOS, "end", pod_path(forced["pod"]))).json()
    assert old["metadata"]["uid"] != new["metadata"]["uid"]
    assert "deletionTimestamp" not in new["metadata"] and new["status"]["phase"] == "Running"
    assert kube.get(k8s(OOS, gone_at, pod_path(forced["pod"]))).json()["spec"]["nodeName"] != forced["node"]
    preempted = decisions(kube, PREEMPTION, "PodPreempted")
    victim = preempted[0]
    during = kube.get(k8s(PREEMPTION, f"{int(victim['t'])}s", pod_path(victim["pod"]))).json()
    assert during["metadata"]["deletionTimestamp"]
    (target,) = [c for c in during["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["reason"], target["message"]) == ("PreemptionByScheduler", victim["data"]["message"])
    assert kube.get(k8s(PREEMPTION, "end", pod_path(victim["pod"]))).status_code == 404
    preemptor = kube.get(k8s(PREEMPTION, "end", pod_path(victim["data"]["preemptor"]))).json()
    events = items(kube, k8s(PREEMPTION, "end", "/api/v1/events"), fieldSelector="reason=Preempted")
    assert len(events) == len(preempted)
    assert events[0]["message"] == f"Preempted by pod {preemptor['metadata']['uid']} on node {victim['node']}"
    assert events[0]["action"] == "Preempting" and events[0]["eventTime"] and events[0]["firstTimestamp"] is None


def _of(c: TestClient, kind: str, pod: str = RECREATED) -> list[dict[str, Any]]:
    return [d for d in decisions(c, CONTROLLERS, kind) if d["pod"] == pod]


def _uids_by_reason(c: TestClient, at: str) -> dict[str, set[str]]:
    name = RECREATED.split("/")[1]
    events = items(c, k8s(CONTROLLERS, at, "/api/v1/events"), fieldSelector=f"involvedObject.name={name}")
    out: dict[str, set[str]] = {}
    for e in events:
        if e["involvedObject"]["kind"] == "Pod":
            out.setdefault(e["reason"], set()).add(e["involvedObject"]["uid"])
    return out


def test_an_evicted_statefulset_pod_created_again_is_shown_as_the_new_pod(kube: TestClient) -> None:
    """``db-0`` is evicted and its StatefulSet creates it again under its name: from then
    on the facade shows the new pod (its uid, its node, its restarts), and the Events of
    each pod name the pod it was."""
    first, second = _of(kube, "PodEvicted")
    replaced = _of(kube, "PodReplaced")
    assert [d["data"]["replacement"] for d in replaced] == [RECREATED, RECREATED]
    assert replaced[0]["t"] == first["t"] + 1 and replaced[1]["t"] == second["t"]
    evicted = kube.get(k8s(CONTROLLERS, f"{first['t'] + 0.5}s", pod_path(RECREATED))).json()
    original = kube.get(k8s(CONTROLLERS, "0s", pod_path(RECREATED))).json()
    assert evicted["metadata"]["uid"] == original["metadata"]["uid"] and evicted["spec"]["nodeName"] == first["node"]
    (target,) = [c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["reason"], target["lastTransitionTime"]) == ("TerminationByKubelet", first["time"])
    at = replaced[0]["t"] + 1
    new = kube.get(k8s(CONTROLLERS, f"{at}s", pod_path(RECREATED))).json()
    assert new["metadata"]["uid"] != evicted["metadata"]["uid"]
    assert new["metadata"]["creationTimestamp"] == replaced[0]["time"]
    (scheduled,) = [d for d in _of(kube, "PodScheduled") if replaced[0]["t"] <= d["t"] < second["t"]]
    assert new["spec"]["nodeName"] == scheduled["node"] != first["node"]
    status = new["status"]
    assert status["phase"] == "Running" and "reason" not in status
    assert "DisruptionTarget" not in {c["type"] for c in status["conditions"]}
    killed = [d for d in _of(kube, "OOMKilled") if d["t"] <= at]
    (container,) = status["containerStatuses"]
    assert container["restartCount"] == killed[-1]["data"]["restartCount"] == len(killed)
    assert container["lastState"]["terminated"]["reason"] == "OOMKilled"
    # evicted again at once: the third pod waits, unschedulable
    third = kube.get(k8s(CONTROLLERS, "end", pod_path(RECREATED))).json()
    (unschedulable,) = [d for d in _of(kube, "PodUnschedulable") if d["t"] == second["t"]]
    assert third["metadata"]["uid"] not in (new["metadata"]["uid"], evicted["metadata"]["uid"])
    assert third["status"]["phase"] == "Pending" and "nodeName" not in third["spec"]
    (waiting,) = [c for c in third["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (waiting["status"], waiting["message"]) == ("False", unschedulable["data"]["message"])
    assert _uids_by_reason(kube, "end") == {
        "Evicted": {evicted["metadata"]["uid"], new["metadata"]["uid"]},
        "Killing": {evicted["metadata"]["uid"], new["metadata"]["uid"]},
        "Scheduled": {new["metadata"]["uid"]},
        "FailedScheduling": {third["metadata"]["uid"]},
    }
    assert _uids_by_reason(kube, f"{at}s")["Scheduled"] == {new["metadata"]["uid"]}


@pytest.mark.slow
def test_a_watch_sees_the_evicted_pod_deleted_and_its_successor_added(kube: TestClient) -> None:
    (replaced, _) = _of(kube, "PodReplaced")
    since = f"{replaced['t'] - 0.5}s"
    before = kube.get(k8s(CONTROLLERS, since, pod_path(RECREATED))).json()
    listed = kube.get(k8s(CONTROLLERS, since, "/api/v1/namespaces/shop/pods")).json()
    params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"], "timeoutSeconds": "1"}
    with kube.stream("GET", k8s(CONTROLLERS, since, "/api/v1/namespaces/shop/pods"), params=params) as answer:
        events = [json.loads(line) for line in answer.iter_lines() if line]
    name = RECREATED.split("/")[1]
    mine = [(e["type"], e["object"]["metadata"]["uid"]) for e in events if e["object"]["metadata"]["name"] == name]
    after = kube.get(k8s(CONTROLLERS, f"{replaced['t']}s", pod_path(RECREATED))).json()
    assert mine[:2] == [("DELETED", before["metadata"]["uid"]), ("ADDED", after["metadata"]["uid"])]
    for (kind, uid), (was_kind, was_uid) in zip(mine[1:], mine, strict=False):
        assert kind != "MODIFIED" or uid == was_uid  # a pod's changes stay its own
        assert kind != "ADDED" or was_kind == "DELETED"
    assert len({uid for _, uid in mine}) == 3 and ("MODIFIED", after["metadata"]["uid"]) in mine


def test_budgets_quotas_and_classes_with_the_status_their_controllers_write(kube: TestClient) -> None:
    def cpu(text: str) -> int:
        return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)

    (pdb,) = items(kube, k8s(PREEMPTION, "5s", "/apis/policy/v1/poddisruptionbudgets"))
    selector = pdb["spec"]["selector"]["matchLabels"]
    pods = items(kube, k8s(PREEMPTION, "5s", "/api/v1/namespaces/default/pods"))
    matching = [p for p in pods if selector.items() <= p["metadata"].get("labels", {}).items()]
    status = pdb["status"]
    assert status["expectedPods"] == status["currentHealthy"] == len(matching)
    assert status["disruptionsAllowed"] == max(0, len(matching) - pdb["spec"]["minAvailable"])
    (quota,) = items(kube, k8s(KATA, "end", "/api/v1/resourcequotas"))
    sandbox = items(kube, k8s(KATA, "end", f"/api/v1/namespaces/{quota['metadata']['namespace']}/pods"))
    live = [p for p in sandbox if p["status"]["phase"] not in ("Succeeded", "Failed")]
    requested = sum(
        cpu(c["resources"].get("requests", {}).get("cpu", "0")) for p in live for c in p["spec"]["containers"]
    ) + sum(cpu(p["spec"].get("overhead", {}).get("cpu", "0")) for p in live)
    assert cpu(quota["status"]["used"]["requests.cpu"]) == requested > 0
    assert quota["status"]["hard"] == {k: str(v) for k, v in quota["spec"]["hard"].items()}
    (runtime_class,) = items(kube, k8s(KATA, "end", "/apis/node.k8s.io/v1/runtimeclasses"))
    assert {p["spec"].get("runtimeClassName") for p in live} == {runtime_class["metadata"]["name"]}
    classes = {
        c["metadata"]["name"]: c["value"]
        for c in items(kube, k8s(PREEMPTION, "end", "/apis/scheduling.k8s.io/v1/priorityclasses"))
    }
    assert classes["system-node-critical"] == 2000001000 and {"high", "low"} <= classes.keys()


def test_every_write_is_refused_and_every_error_is_a_status(kube: TestClient) -> None:
    path = k8s(RUN, "end", pod_path(EVICTED))
    for method in ("DELETE", "PUT", "PATCH", "POST"):
        answer = kube.request(method, path)
        body = answer.json()
        assert answer.status_code == 405 and body["reason"] == "MethodNotAllowed", answer.text
        assert answer.headers["allow"] == "GET, HEAD" and body["kind"] == "Status"
    assert kube.post(k8s(RUN, "end", "/api/v1/namespaces/default/pods")).status_code == 405
    log = kube.get(path + "/log")
    assert log.status_code == 403 and log.json()["reason"] == "Forbidden"
    for missing in (
        k8s(RUN, "end", "/api/v1/secrets"),
        k8s("nope", "end", "/api/v1/pods"),
        k8s(RUN, "99h", "/api/v1/pods"),
        k8s(RUN, "soon", "/api/v1/pods"),
        "/k8s/" + RUN,
    ):
        answer = kube.get(missing)
        assert answer.status_code == 404 and answer.json()["reason"] == "NotFound", missing


def test_discovery_aggregated_and_legacy(kube: TestClient) -> None:
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    answer = kube.get(k8s(RUN, "end", "/apis"), headers={"Accept": aggregated})
    assert answer.headers["content-type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    groups = {g["metadata"]["name"] for g in answer.json()["items"]}
    assert {"events.k8s.io", "policy", "scheduling.k8s.io", "node.k8s.io"} <= groups
    core = kube.get(k8s(RUN, "end", "/api/v1")).json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["verbs"] == ["get", "list", "watch"] and pods["namespaced"]
    assert kube.get(k8s(RUN, "end", "/version")).json()["major"] == "1"


def test_the_token_guards_the_facade_too(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    asyncio.run(record(dsn))
    with TestClient(create_app(dsn, token="s3cret")) as c:
        refused = c.get(k8s(RUN, "end", "/api/v1/pods"))
        assert refused.status_code == 401 and refused.json()["reason"] == "Unauthorized"
        ok = c.get(k8s(RUN, "end", "/api/v1/pods"), headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json()["items"]


def _many_pods(nodes: int, per_node: int) -> str:
    objects: list[dict[str, Any]] = []
    for n in range(nodes):
        node = f"n{n}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node},
                "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
            }
        )
        for i in range(per_node):
            container = {"name": "app", "image": "app:v1", "resources": {"requests": {"cpu": "10m"}}}
            spec = {"nodeName": node, "containers": [container]}
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"{node}-p{i}", "namespace": f"ns{i % 3}"},
                    "spec": spec,
                }
            )
    doc = {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": "many"},
        "spec": {"duration": "10s", "objects": objects},
    }
    return json.dumps(doc)


def test_a_listing_reads_the_store_a_page_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledgerlet_core.scenario.load import load_scenario
    from ledgerlet_services.audit.kube_api.reader import CHUNK
    from ledgerlet_services.runtime.embedded import run_embedded
    from ledgerlet_store.sql_store import SqlEventStore
    from ledgerlet_store.store import open_store

    dsn = f"sqlite:///{tmp_path / 'events.db'}"

    async def run() -> int:
        async with await open_store(dsn) as store:
            await run_embedded(load_scenario(_many_pods(4, 100), "many.json"), store, run="many")
            return len(await store.read_run("many"))  # (as readers see them: a node's pods are stored in one row)

    stored = asyncio.run(run())
    reads: list[int] = []
    fetch = SqlEventStore.fetch

    async def counted(self: SqlEventStore, q: Any) -> Any:
        rows = await fetch(self, q)
        reads.append(len(rows))
        return rows

    monkeypatch.setattr(SqlEventStore, "fetch", counted)
    with TestClient(create_app(dsn)) as c:
        c.get(k8s("many", "end", "/api/v1/pods"), params={"limit": 1})  # (the run's start, cached)
        reads.clear()
        page = c.get(k8s("many", "end", "/api/v1/pods"), params={"limit": 20}).json()
        assert len(page["items"]) == 20 and page["metadata"]["continue"]
        assert sum(reads) <= 2 * 21 < stored / 4  # the page's pods' events (and one more), not the run
        reads.clear()
        everything = c.get(k8s("many", "end", "/api/v1/pods")).json()["items"]
        assert len(everything) == 400
        assert max(reads) <= CHUNK < len(everything)  # streamed a chunk at a time
        reads.clear()
        namespace = c.get(k8s("many", "end", "/api/v1/namespaces/ns1/pods"), params={"limit": 10}).json()
        assert {p["metadata"]["namespace"] for p in namespace["items"]} == {"ns1"}
        assert len(namespace["items"]) == 10 and sum(reads) <= 2 * 11
