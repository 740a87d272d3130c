"""The core group (``/api/v1``): namespaces, nodes, pods and resource quotas (its events
are with the other events: ``event_routes``)."""

from __future__ import annotations

from typing import Final

from ledgerlet_services.audit.kube_api.routers.resource_routes import ReadOnly, resource_router, served

#: a pod's subresources besides ``status``, refused (403) under their own names
POD_SUBRESOURCES: Final = ("log", "exec", "attach", "portforward", "proxy", "eviction", "binding")

router = resource_router()
ReadOnly(served("", "v1", "pods"), refused=POD_SUBRESOURCES).add_to(router)
ReadOnly(served("", "v1", "nodes"), refused=("proxy",)).add_to(router)
# (a namespace's own subresources are named, so that /namespaces/NS/RESOURCE is a list in NS)
ReadOnly(served("", "v1", "namespaces"), only=("finalize",)).add_to(router)
ReadOnly(served("", "v1", "resourcequotas")).add_to(router)
