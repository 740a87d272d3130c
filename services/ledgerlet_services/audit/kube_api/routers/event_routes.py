"""Events, in both groups that serve them: core ``v1`` (kubectl get events) and
``events.k8s.io/v1`` (kubectl events)."""

from __future__ import annotations

from ledgerlet_services.audit.kube_api.routers.resource_routes import ReadOnly, resource_router, served

router = resource_router()
ReadOnly(served("", "v1", "events")).add_to(router)
ReadOnly(served("events.k8s.io", "v1", "events")).add_to(router)
