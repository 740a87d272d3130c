"""kubectl against the past: a read-only Kubernetes API over the audit store.

``ledgerlet serve`` answers, under ``/k8s/{run}/{at}``, enough of the API server's
API for an unmodified ``kubectl``: version and discovery, get/list/watch of pods,
nodes, namespaces, events (``v1`` and ``events.k8s.io/v1``), priority classes,
runtime classes, disruption budgets and resource quotas, server-side ``Table``
output, label and field selectors, bounded lists. Every object is built from the
stored events of one run as the API server would have held it at one virtual
instant; the building is pure (``pods``, ``nodes``, ``events``, ``objects``,
``tables``), the reading is in ``reader`` and the HTTP side in ``app`` and ``routers``.
"""
