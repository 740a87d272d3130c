"""Workloads as the run stored them, their status from the pods at the instant:
``apps/v1`` deployments, replica sets, daemon sets, stateful sets and ``batch/v1`` jobs."""

from __future__ import annotations

from ledgerlet_services.audit.kube_api.routers.resource_routes import ReadOnly, resource_router, served

router = resource_router()
for name in ("deployments", "replicasets", "daemonsets", "statefulsets"):
    ReadOnly(served("apps", "v1", name)).add_to(router)
ReadOnly(served("batch", "v1", "jobs")).add_to(router)
