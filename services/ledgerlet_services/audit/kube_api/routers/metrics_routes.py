"""``metrics.k8s.io/v1beta1``: what each node and pod used, from the run's observations,
as metrics-server serves it (``kubectl top``)."""

from __future__ import annotations

from ledgerlet_services.audit.kube_api.routers.resource_routes import ReadOnly, resource_router, served

router = resource_router()
ReadOnly(served("metrics.k8s.io", "v1beta1", "nodes")).add_to(router)
ReadOnly(served("metrics.k8s.io", "v1beta1", "pods")).add_to(router)
