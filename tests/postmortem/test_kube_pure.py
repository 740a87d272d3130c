"""The facade's pure parts: selectors as apimachinery parses them, kubectl's ages, instants,
and which pod a pod's Events name."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope, pod_stream
from ledgerlet_core.model.duration import SECOND
from ledgerlet_services.audit.kube_api import events as ev
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant, human_duration, parse_at
from ledgerlet_services.audit.kube_api.pods import build_pod, object_uid
from ledgerlet_services.audit.kube_api.selectors import POD_FIELDS, parse_field_selector, parse_label_selector


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web,tier!=db", {"app": "web", "tier": "fe"}, True),
        ("app!=web", {}, True),
        ("app in (web, api),!canary", {"app": "api"}, True),
        ("app in (web, api),!canary", {"app": "api", "canary": ""}, False),
        ("app notin (web)", {"app": "web"}, False),
        ("app", {"app": ""}, True),
        ("replicas>2", {"replicas": "3"}, True),
        ("replicas<2", {"replicas": "x"}, False),
        ("example.com/role=db", {"example.com/role": "db"}, True),
    ],
)
def test_label_selectors_match_as_upstream(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is matches


@pytest.mark.parametrize("bad", ["a in (b", "a=b=c", "a>b", "-a=b", "a=" + "x" * 64, ",", "a in (b,,c) d"])
def test_a_label_selector_that_does_not_parse_is_a_400(bad: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_label_selector(bad)
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"


def test_field_selectors_escape_and_refuse_unknown_fields() -> None:
    sel = parse_field_selector(r"spec.nodeName=a\,b,status.phase!=Failed", POD_FIELDS)
    assert sel.wanted("spec.nodeName") == "a,b"
    assert sel.matches({"spec.nodeName": "a,b", "status.phase": "Running"})
    assert not sel.matches({"spec.nodeName": "a,b", "status.phase": "Failed"})
    with pytest.raises(ApiError, match=r"field label not supported: spec\.foo"):
        parse_field_selector("spec.foo=1", POD_FIELDS)
    with pytest.raises(ApiError, match="invalid selector"):
        parse_field_selector("spec.nodeName", POD_FIELDS)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (299, "4m59s"), (600, "10m"),
     (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (7 * 3600 + 60, "7h1m"), (47 * 3600, "47h"), (2 * 86400, "2d"),
     (50 * 3600, "2d2h"), (300 * 86400, "300d"), (3 * 365 * 86400, "3y0d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_ages_read_as_kubectls(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_instants_are_end_a_duration_or_a_clock_time_within_the_run() -> None:
    run, start = 1500 * SECOND, datetime(2026, 1, 29, 9, 0, tzinfo=UTC)
    assert parse_at("end", start, run) == run
    assert parse_at("5m", start, run) == 300 * SECOND
    assert parse_at("1m30s", start, run) == 90 * SECOND
    assert parse_at("09:05", start, run) == parse_at("2026-01-29T09:05:00Z", start, run) == 300 * SECOND
    for bad in ("26m", "-1s", "soon", "", "09:26", "2026-01-28T09:05:00Z"):
        with pytest.raises(ApiError) as caught:
            parse_at(bad, start, run)
        assert caught.value.code == 404


def _stored(pod: str, t: float, data: msgspec.Struct, n: int, node: str | None = None) -> Envelope:
    return make_envelope(data, run="r", t=round(t * SECOND), order=[0, n], stream=pod_stream(pod), node=node, pod=pod)


def test_a_pods_events_name_the_pod_the_facade_shows_when_they_were_recorded() -> None:
    """An update of a pod given without a uid keeps the uid its first submission gave it,
    and a pod created again under the name after an eviction is another: the Events and
    the Pod object agree, the preemptor named as it was when it preempted."""
    pod, preemptor = "shop/db-0", "shop/urgent"
    meta = {"name": "db-0", "namespace": "shop"}
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    relabelled = {**manifest, "metadata": {**meta, "labels": {"track": "canary"}}}
    stop = dec.PodTerminated(reason="Evicted", grace_period_seconds=0, killed_at=20.0)
    history = [
        _stored(
            pod,
            0,
            inp.ObjectApplied(
                object={**manifest, "spec": {"nodeName": "n1", "containers": [{"name": "db"}]}}, initial=True
            ),
            0,
        ),
        _stored(pod, 5, inp.ObjectApplied(object=relabelled), 1),
        _stored(pod, 10, dec.PodPreempted(preemptor=preemptor, grace_period_seconds=0, message="m"), 2, "n1"),
        _stored(pod, 20, stop, 3, "n1"),
        _stored(pod, 21, internal.ObjectCreated(object=manifest, owner="StatefulSet/shop/db"), 4),
        _stored(pod, 21, dec.PodAdmitted(priority=0, qos_class="BestEffort", overhead={}), 5),
        _stored(pod, 22, dec.PodScheduled(requests={}), 6, "n2"),
    ]
    urgent = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "urgent", "namespace": "shop"}}
    preemptor_history = [
        _stored(preemptor, 1, inp.ObjectApplied(object=urgent), 0),
        _stored(preemptor, 1, dec.PodAdmitted(priority=9, qos_class="BestEffort", overhead={}), 1),
        _stored(preemptor, 30, dec.PodTerminated(reason="Deleted", grace_period_seconds=0, killed_at=30.0), 2, "n1"),
        _stored(preemptor, 40, inp.ObjectApplied(object=urgent), 3),
    ]
    specs = ev.pod_event_specs(pod, history, ev.uid_at({preemptor: ev.pod_uids(preemptor_history)}))
    uids = {s.reason: s.involved["uid"] for s in specs}
    instant = Instant("r", datetime(2026, 1, 29, 9, 0, tzinfo=UTC), 0, 60 * SECOND)
    shown = {t: build_pod(history, replace(instant, t=t * SECOND)) or {} for t in (15, 22)}
    assert uids["Preempted"] == uids["Killing"] == object_uid(history[0].id) == shown[15]["metadata"]["uid"]
    assert uids["Scheduled"] == object_uid(history[4].id) == shown[22]["metadata"]["uid"]
    (preempted,) = [s for s in specs if s.reason == "Preempted"]
    assert preempted.related is not None and preempted.related["uid"] == object_uid(preemptor_history[0].id)
    assert preempted.message == f"Preempted by pod {object_uid(preemptor_history[0].id)} on node n1"
