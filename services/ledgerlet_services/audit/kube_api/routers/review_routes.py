"""Who am I, and what may I do (``kubectl auth whoami``, ``kubectl auth can-i``): the
self-subject reviews, created and answered (``reviews``), never stored."""

from __future__ import annotations

from ledgerlet_services.audit.kube_api.routers.resource_routes import CreateOnly, resource_router, served

router = resource_router()
CreateOnly(served("authorization.k8s.io", "v1", "selfsubjectaccessreviews")).add_to(router)
CreateOnly(served("authorization.k8s.io", "v1", "selfsubjectrulesreviews")).add_to(router)
CreateOnly(served("authentication.k8s.io", "v1", "selfsubjectreviews")).add_to(router)
