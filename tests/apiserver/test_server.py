"""The API server as the one authority: what it holds decides what exists."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.apiserver.priority_admission import AdmissionError
from ledgerlet_core.apiserver.server import ApiServer
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod, PriorityClass, ResourceQuota


def pc(name: str, value: int, **kw: Any) -> PriorityClass:
    doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    return apply_defaults(convert({**doc, **kw}, PriorityClass))  # type: ignore[return-value]


def pod(name: str, cpu: str = "", **spec: Any) -> Pod:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}} if cpu else {}}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"}}
    return apply_defaults(convert({**doc, "spec": {"containers": [container], **spec}}, Pod))  # type: ignore[return-value]


def test_a_refused_class_never_exists_and_the_one_default_is_used() -> None:
    api = ApiServer()
    api.class_exists(pc("default-low", 100, globalDefault=True))
    refused = api.admit_class(pc("another-default", 50, globalDefault=True))
    assert refused is not None and refused.reason == "Forbidden"
    assert "another-default" not in api.classes
    changed = api.admit_class(pc("default-low", 200, globalDefault=True))
    assert changed is not None and changed.reason == "Invalid" and "may not be changed" in changed.message
    admitted = api.admit_pod(pod("late"))
    assert (admitted.spec.priority_class_name, admitted.spec.priority) == ("default-low", 100)


def test_quota_is_charged_at_admission_and_released_when_the_pod_is_gone() -> None:
    api = ApiServer()
    quota = {"metadata": {"name": "team", "namespace": "team"}, "spec": {"hard": {"pods": "1"}}}
    api.quota_applied(convert(quota, ResourceQuota))
    api.admit_pod(pod("a", "100m"))
    with pytest.raises(AdmissionError, match="exceeded quota: team"):
        api.admit_pod(pod("b", "100m"))
    api.release("team/a")
    assert api.admit_pod(pod("b", "100m")).key == "team/b"


def test_an_unknown_class_is_refused_with_upstreams_message() -> None:
    with pytest.raises(AdmissionError, match="no PriorityClass with name nope was found"):
        ApiServer().admit_pod(pod("x", priorityClassName="nope"))
