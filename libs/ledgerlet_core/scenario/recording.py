"""Recorded data to a scenario (``ledgerlet import``): kubelet ``/stats/summary``
documents become ``stats`` events (open-loop nodes, section 4 of the scenario spec), and
``kubectl get ... -o json`` output becomes the scenario's ``objects``.

What the API server adds that a scenario does not need (managed fields, resource
versions, the last-applied annotation, most of ``status``) is dropped; what the control
loops read is kept: a node's capacity and allocatable, a pod's phase and start time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from ledgerlet_core.kubelet.config import FEATURE_GATE_DEFAULTS, KubeletConfigSpec
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.timefmt import parse_rfc3339

#: object kinds a scenario models; others in a kubectl dump are skipped (and counted)
KINDS = (
    "Node", "PriorityClass", "RuntimeClass", "PodDisruptionBudget", "ResourceQuota", "PersistentVolume",
    "PersistentVolumeClaim", "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "Pod",
)  # fmt: skip
_KEEP_STATUS = {"Node": ("capacity", "allocatable"), "Pod": ("phase", "startTime", "qosClass")}
_DROP_META = ("managedFields", "resourceVersion", "selfLink", "generation")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CONFIG_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(KubeletConfigSpec))


def clean_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _DROP_META}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    status = {k: v for k, v in (obj.get("status") or {}).items() if k in _KEEP_STATUS.get(obj.get("kind", ""), ())}
    if status:
        out["status"] = status
    return out


def collect_objects(documents: Sequence[tuple[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Objects from kubectl JSON documents (``List``s or single objects), in dependency
    order (nodes and classes before the pods that use them); skipped kinds counted."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    skipped: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    for source, doc in documents:
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object (kubectl get ... -o json)", file=source)
        items = doc.get("items") if doc.get("kind", "").endswith("List") else [doc]
        for i, obj in enumerate(items or []):
            if not isinstance(obj, dict) or "kind" not in obj:
                raise InputError("not a Kubernetes object", file=source, obj=f"items[{i}]", field="kind")
            kind = obj["kind"]
            if kind not in KINDS:
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            meta = obj.get("metadata") or {}
            key = (kind, meta.get("namespace", ""), meta.get("name", ""))
            if key in seen:
                continue  # the same object in two dumps: the first wins
            seen.add(key)
            found.append((KINDS.index(kind), len(found), clean_object(obj)))
    found.sort(key=lambda x: (x[0], x[1]))
    return [o for _, _, o in found], skipped


def summary_time(summary: Mapping[str, Any], source: str) -> datetime:
    """When the kubelet took the summary: the earliest timestamp in its node stats."""
    node = summary.get("node")
    if not isinstance(node, dict) or not node.get("nodeName"):
        raise InputError("not a /stats/summary document", file=source, field="node.nodeName")
    stamps = []
    for section in ("cpu", "memory", "fs", "rlimit", "network"):
        value = (node.get(section) or {}).get("time")
        if value:
            stamps.append((section, value))
    runtime = node.get("runtime") or {}
    for section in ("imageFs", "containerFs"):
        value = (runtime.get(section) or {}).get("time")
        if value:
            stamps.append((f"runtime.{section}", value))
    if not stamps:
        raise InputError("no timestamp in the node's stats", file=source, field="node.memory.time")
    times = []
    for section, value in stamps:
        try:
            times.append(parse_rfc3339(value))
        except ValueError:
            raise InputError(f"bad timestamp {value!r}", file=source, field=f"node.{section}.time") from None
    return min(times)


def kubelet_config_from(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields the scenario models from a configz document (``{"kubeletconfig": ...}``)
    or a KubeletConfiguration; the names of the fields left out."""
    raw = doc.get("kubeletconfig", doc)
    kept = {k: v for k, v in raw.items() if k in _CONFIG_FIELDS and k != "featureGates"}
    dropped = sorted(k for k in raw if k not in _CONFIG_FIELDS and k not in ("kind", "apiVersion"))
    gates = {k: v for k, v in (raw.get("featureGates") or {}).items() if k in FEATURE_GATE_DEFAULTS}
    if gates:
        kept["featureGates"] = gates
    return kept, dropped


def build_scenario(
    *,
    name: str,
    objects: Sequence[tuple[str, Any]],
    summaries: Sequence[tuple[str, Any]],
    kubelet_config: Mapping[str, Any] | None = None,
    housekeeping_seconds: int = 10,
) -> tuple[dict[str, Any], list[str]]:
    """The scenario document and notes for the user (what was skipped or assumed)."""
    notes: list[str] = []
    objs, skipped = collect_objects(objects)
    if skipped:
        notes.append(
            "skipped kinds a scenario does not model: " + ", ".join(f"{k} x{n}" for k, n in sorted(skipped.items()))
        )
    nodes = {o["metadata"]["name"] for o in objs if o["kind"] == "Node"}
    timed = []
    for source, summary in summaries:
        if not isinstance(summary, dict):
            raise InputError("expected a JSON object (kubelet /stats/summary)", file=source)
        at = summary_time(summary, source)
        node = summary["node"]["nodeName"]
        if node not in nodes:
            raise InputError(
                f"node {node!r} has no Node object in the --objects files", file=source, field="node.nodeName"
            )
        timed.append((at, source, summary))
    timed.sort(key=lambda x: (x[0], x[1]))
    start = timed[0][0].replace(microsecond=0) if timed else None
    events = []
    for at, _, summary in timed:
        assert start is not None
        offset = (at - start).total_seconds()
        events.append({"at": f"{offset:g}s", "stats": summary})
    last = (timed[-1][0] - start).total_seconds() if timed and start else 0
    spec: dict[str, Any] = {}
    if start is not None:
        spec["start"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec["duration"] = f"{int(last) + housekeeping_seconds}s"
    if kubelet_config:
        cfg, dropped = kubelet_config_from(kubelet_config)
        spec["kubeletConfig"] = cfg
        if dropped:
            notes.append(f"kubelet configuration fields not modelled: {', '.join(dropped)}")
    spec["objects"] = objs
    spec["events"] = events
    observed = {s["node"]["nodeName"] for _, _, s in timed}
    silent = sorted(nodes - observed)
    if silent:
        notes.append(f"nodes with no stats (never observed, no passes): {', '.join(silent)}")
    return {"apiVersion": "ledgerlet/v1", "kind": "Scenario", "metadata": {"name": name}, "spec": spec}, notes
