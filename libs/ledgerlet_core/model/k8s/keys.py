"""``namespace/name``: how the core and the loops key a namespaced object they hold
(pods, PVCs, PDBs, quotas, workloads), an empty namespace read as the API server
defaults it. ``Pod.key`` is the one other spelling: it reads the namespace as stored,
which the scenario's defaulting has already filled in (``defaults.py``)."""

from __future__ import annotations

from ledgerlet_core.model.k8s.defaults import DEFAULT_NAMESPACE


def object_key(namespace: str | None, name: str) -> str:
    """``namespace/name``, ``default`` for a namespace left empty."""
    return f"{namespace or DEFAULT_NAMESPACE}/{name}"
