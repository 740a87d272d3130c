"""The API server's admission: PriorityClass validation, the Priority, RuntimeClass and
DefaultTolerationSeconds plugins, ResourceQuota; and the authority that holds what they read.

Examples are upstream's where they exist (``pkg/apis/scheduling/validation/validation_test.go``,
``plugin/pkg/admission/priority/admission_test.go``, ``resourcequota/admission_test.go``).
"""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.apiserver.admission import (
    add_default_tolerations,
    admit_pod,
    default_conflict,
    validate_priority_class,
    validate_priority_class_update,
)
from ledgerlet_core.apiserver.priority_admission import AdmissionError, known_classes
from ledgerlet_core.apiserver.quota import check_quota, pod_usage
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import PriorityClass, ResourceQuota
from tests.support.pods import c, make_pod

CPU = 10**9  # nanocores in a core


def pc(name: str, value: int, **kw: Any) -> PriorityClass:
    return convert({"metadata": {"name": name}, "value": value, **kw}, PriorityClass)


def test_priority_class_validation_as_upstream() -> None:
    assert validate_priority_class(pc("tier1", 1_000_000_000)) is None  # the maximum itself is fine
    assert validate_priority_class(pc("tier1", -100)) is None
    err = validate_priority_class(pc("tier1", 1_000_000_001))
    assert (
        err is not None
        and err.field == "value"
        and "maximum allowed value of a user defined priority is 1000000000" in err.message
    )
    err = validate_priority_class(pc("system-foo", 10))
    assert (
        err is not None
        and err.field == "metadata.name"
        and "system-foo is not a known system priority class" in err.message
    )
    assert validate_priority_class(pc("system-node-critical", 2_000_001_000)) is None
    err = validate_priority_class(pc("system-cluster-critical", 5))
    assert err is not None and "value of system-cluster-critical PriorityClass must be 2000000000" in err.message
    err = validate_priority_class(pc("tier1", 5, preemptionPolicy="Sometimes"))
    assert err is not None and err.field == "preemptionPolicy"
    err = validate_priority_class(pc("tier&1", 5))
    assert err is not None and err.field == "metadata.name"
    err = validate_priority_class_update(pc("a", 5), pc("a", 6))
    assert err is not None and err.field == "value" and "may not be changed in an update" in err.message
    err = validate_priority_class_update(pc("a", 5, preemptionPolicy="Never"), pc("a", 5))
    assert err is not None and err.field == "preemptionPolicy"
    assert validate_priority_class_update(pc("a", 5), pc("a", 5, description="now documented")) is None
    err = default_conflict(pc("b", 1, globalDefault=True), {"a": pc("a", 5, globalDefault=True)})
    assert err is not None and "PriorityClass a is already marked as default. Only one default can exist" in err.message


def test_priority_admission_default_lowest_wins_and_preset_priority_must_match() -> None:
    classes = {"a": pc("a", 50, globalDefault=True), "b": pc("b", 10, globalDefault=True), "hi": pc("hi", 1000)}
    assert admit_pod(make_pod("p", {"containers": [c("x")]}), classes, {}).spec.priority == 10
    assert admit_pod(make_pod("p", {"priorityClassName": "hi", "priority": 1000, "containers": [c("x")]}), classes, {})
    with pytest.raises(AdmissionError, match=r"the integer value of priority \(7\) must not be provided"):
        admit_pod(make_pod("p", {"priorityClassName": "hi", "priority": 7, "containers": [c("x")]}), classes, {})
    with pytest.raises(AdmissionError, match="no PriorityClass with name nope was found"):
        admit_pod(make_pod("p", {"priorityClassName": "nope", "containers": [c("x")]}), classes, {})
    assert admit_pod(make_pod("p", {"containers": [c("x")]}), {}, {}).spec.priority == 0
    crit = admit_pod(
        make_pod("p", {"priorityClassName": "system-node-critical", "containers": [c("x")]}), known_classes(), {}
    )
    assert crit.spec.priority == 2_000_001_000


def test_default_toleration_seconds_are_added_unless_the_pod_has_its_own() -> None:
    pod = add_default_tolerations(make_pod("p", {"containers": [c("x", "1")]}), 300, 200)
    got = {(t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations}
    assert ("node.kubernetes.io/not-ready", "NoExecute", 300) in got
    assert ("node.kubernetes.io/unreachable", "NoExecute", 200) in got
    own = make_pod(
        "q",
        {
            "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}],
            "containers": [c("x")],
        },
    )
    assert [
        t for t in add_default_tolerations(own, 300, 300).spec.tolerations if t.key.endswith("unreachable")
    ] == own.spec.tolerations


# -- ResourceQuota ----------------------------------------------------------------------------------
def test_quota_counts_overhead_and_scopes_by_priority_class() -> None:
    p = make_pod(
        "p",
        {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}],
            "overhead": {"cpu": "1"},
        },
    )
    usage = pod_usage(p)
    assert usage["requests.cpu"] == 2 * CPU and usage["limits.cpu"] == 3 * CPU  # reference §8's example
    q = convert(
        {"metadata": {"name": "q", "namespace": "default"}, "spec": {"hard": {"requests.cpu": "2"}}}, ResourceQuota
    )
    assert check_quota(p, [q], {"default/q": {}}) is None
    err = check_quota(p, [q], {"default/q": {"requests.cpu": 1}})
    assert err is not None and err.message == (
        'pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=1n, '
        "limited: requests.cpu=2"
    )
    scoped = convert(
        {
            "metadata": {"name": "crit", "namespace": "default"},
            "spec": {
                "hard": {"pods": "0"},
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": ["system-cluster-critical"]}
                    ]
                },
            },
        },
        ResourceQuota,
    )
    assert check_quota(p, [scoped], {}) is None  # not that class: the quota does not apply
    crit = make_pod("c", {"priorityClassName": "system-cluster-critical", "containers": [c("a")]})
    err = check_quota(crit, [scoped], {})
    assert err is not None and "exceeded quota: crit" in err.message


# -- preemption -----------------------------------------------------------------------------------
