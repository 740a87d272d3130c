"""The facade's routers, one per API group (or resource family), in the order a request
is matched against them: the resources kubectl asks for most first (a route is a path
template tried in turn), what the facade says of itself, then paths nobody serves."""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter

from ledgerlet_services.audit.kube_api.routers import (
    cluster_routes,
    core_routes,
    discovery_routes,
    event_routes,
    metrics_routes,
    review_routes,
    unknown_routes,
    workload_routes,
)

ROUTERS: Final[tuple[APIRouter, ...]] = (
    core_routes.router,
    event_routes.router,
    workload_routes.router,
    metrics_routes.router,
    cluster_routes.router,
    discovery_routes.router,
    review_routes.router,
    unknown_routes.router,
)
