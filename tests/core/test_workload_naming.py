"""Names the workload controllers give: a Deployment's ReplicaSet by its template's hash."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.controllers.workloads import replica_set_for
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import Workload


def deployment(container: dict[str, Any]) -> Workload:
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 3,
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}},
        },
    }
    return convert(doc, Workload)


def test_the_replica_set_name_is_the_template_hash() -> None:
    # the name every earlier run gave this template: hashing must not change it
    assert replica_set_for(deployment({"name": "web"})).metadata.name == "web-7c449bb967"


def test_a_template_with_resources_is_hashed_with_its_quantities() -> None:
    """Regression: a template holding quantities (requests) crashed the controller manager."""
    small = replica_set_for(deployment({"name": "web", "resources": {"requests": {"cpu": "200m"}}}))
    large = replica_set_for(deployment({"name": "web", "resources": {"requests": {"cpu": "2"}}}))
    same = replica_set_for(deployment({"name": "web", "resources": {"requests": {"cpu": "0.2"}}}))
    assert small.metadata.name != large.metadata.name
    assert small.metadata.name == same.metadata.name  # 0.2 and 200m are one quantity
    assert small.metadata.name.startswith("web-")
