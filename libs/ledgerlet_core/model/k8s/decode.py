"""Kubernetes objects from plain data: typed, defaulted and validated."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import MODEL_FOR_KIND, AnyObject
from ledgerlet_core.model.k8s.validation import validate_object


class UnsupportedKind(InputError):
    """A kind ledgerlet does not model; scenarios may carry them and they are skipped."""


#: kinds not modelled that change what upstream decides, and how (the load warning says so;
#: ``scenario/unmodelled.py`` keeps them in the run's record)
UNMODELLED_KINDS: dict[str, tuple[str, str]] = {
    "Service": (
        "PodTopologySpread",
        "its selector feeds the default spread constraints of the pods it selects; ledgerlet spreads them by "
        "their ReplicaSet, ReplicationController or StatefulSet only",
    ),
    "Namespace": (
        "InterPodAffinity",
        "its labels feed namespaceSelector in pod (anti-)affinity terms; ledgerlet knows only "
        "kubernetes.io/metadata.name",
    ),
    "LimitRange": (
        "LimitRanger",
        "its defaults and limits set the requests of pods admitted in its namespace; ledgerlet admits them as written",
    ),
    "StorageClass": (
        "VolumeBinding",
        "its volumeBindingMode and allowedTopologies decide where pods with unbound claims can go",
    ),
    "CSINode": ("NodeVolumeLimits", "its per-driver attach limits bound how many volumes a node takes"),
    "ResourceClaim": ("DynamicResources", "dynamic resource allocation: no device is allocated to a pod"),
    "ResourceClaimTemplate": ("DynamicResources", "dynamic resource allocation: no device is allocated to a pod"),
    "DeviceClass": ("DynamicResources", "dynamic resource allocation: no device is allocated to a pod"),
    "ResourceSlice": ("DynamicResources", "dynamic resource allocation: no device is allocated to a pod"),
    "HorizontalPodAutoscaler": (
        "horizontal-pod-autoscaler",
        "it changes its target's replicas over time; ledgerlet keeps the replicas written",
    ),
    "CronJob": ("cronjob-controller", "it creates Jobs on its schedule; ledgerlet creates none"),
}


def object_label(raw: Any) -> str:
    """``Pod default/web-1`` as best the raw data allows, for error messages."""
    if not isinstance(raw, dict):
        return "object"
    kind = raw.get("kind") if isinstance(raw.get("kind"), str) else "object"
    meta_raw = raw.get("metadata")
    meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "?"
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _rc_selector(raw: dict[str, Any]) -> dict[str, Any]:
    """A ReplicationController's ``spec.selector`` is a plain label map: as ``matchLabels``."""
    spec = raw.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    if isinstance(selector, dict) and not ({"matchLabels", "matchExpressions"} & selector.keys()):
        return {**raw, "spec": {**spec, "selector": {"matchLabels": selector}}}  # type: ignore[dict-item]
    return raw


def decode_object(raw: Any, *, label: str = "") -> AnyObject:
    """Typed, defaulted, validated object; :class:`InputError` names the failing field."""
    where = label or object_label(raw)
    if not isinstance(raw, dict):
        raise InputError(f"expected a Kubernetes object (a mapping), got {type(raw).__name__}", obj=where)
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError("required field is missing", obj=where, field="kind")
    model = MODEL_FOR_KIND.get(kind)
    if model is None:
        note = UNMODELLED_KINDS.get(kind)
        why = f" ({note[0]}: {note[1]})" if note else ""
        raise UnsupportedKind(f"kind {kind!r} is not modelled by ledgerlet{why}", obj=where, field="kind")
    if kind == "ReplicationController":
        raw = _rc_selector(raw)
    obj = convert(raw, model, obj=where)
    obj = apply_defaults(obj)
    try:
        validate_object(obj)
    except InputError as exc:
        raise exc.located(obj=where) from None
    return obj
