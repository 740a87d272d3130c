"""The cluster's other objects: disruption budgets (``policy``), priority classes
(``scheduling.k8s.io``), runtime classes (``node.k8s.io``) and leases (``coordination.k8s.io``)."""

from __future__ import annotations

from ledgerlet_services.audit.kube_api.routers.resource_routes import ReadOnly, resource_router, served

router = resource_router()
ReadOnly(served("policy", "v1", "poddisruptionbudgets")).add_to(router)
ReadOnly(served("scheduling.k8s.io", "v1", "priorityclasses")).add_to(router)
ReadOnly(served("node.k8s.io", "v1", "runtimeclasses")).add_to(router)
ReadOnly(served("coordination.k8s.io", "v1", "leases")).add_to(router)
