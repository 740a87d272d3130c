"""Pods for core tests, written the way upstream's tests write them."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod


def make_pod(name: str, spec: dict[str, Any], **meta: Any) -> Pod:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **meta}, "spec": spec}
    obj = apply_defaults(convert(raw, Pod))
    assert isinstance(obj, Pod)
    return obj


def c(name: str, cpu: str = "", memory: str = "", *, limits: bool = False, sidecar: bool = False) -> dict[str, Any]:
    res = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    out: dict[str, Any] = {"name": name, "resources": {"limits" if limits else "requests": res}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out
