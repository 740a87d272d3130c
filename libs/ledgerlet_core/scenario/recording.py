"""Recorded data to a scenario (``ledgerlet import``): kubelet ``/stats/summary``
documents become ``stats`` events (open-loop nodes, section 4 of the scenario spec), and
``kubectl get ... -o yaml|json`` output and the kubelet's ``/pods`` list become the
scenario's ``objects``.

What the API server adds that a scenario does not need (managed fields, resource
versions, the last-applied annotation, most of ``status``) is dropped; what the control
loops read is kept: a node's capacity and allocatable, a pod's phase and start time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import msgspec

from ledgerlet_core.kubelet.config import FEATURE_GATE_DEFAULTS, KubeletConfigSpec
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.priority import CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION
from ledgerlet_core.model.timefmt import parse_rfc3339
from ledgerlet_core.scenario.observed_events import is_event, observed_event
from ledgerlet_core.scenario.recording_gaps import MAX_GAP, check_gaps

#: object kinds a scenario models; others in a kubectl dump are skipped (and counted)
KINDS = (
    "Node", "PriorityClass", "RuntimeClass", "PodDisruptionBudget", "ResourceQuota", "PersistentVolume",
    "PersistentVolumeClaim", "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job",
    "ReplicationController", "Pod",
)  # fmt: skip
_KEEP_STATUS = {
    "Node": ("capacity", "allocatable", "images"),
    "Pod": ("phase", "startTime", "qosClass", "nominatedNodeName"),
}
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


def _items(doc: Mapping[str, Any], source: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of one document, each with where it sits. A typed list (``PodList``,
    as the kubelet's ``/pods`` and the API server's list calls answer) omits its items'
    ``kind`` and ``apiVersion``: they come from the list; a ``List`` (kubectl's, of mixed
    kinds) names them per item."""
    kind = doc.get("kind")
    if not (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
        return [("", dict(doc))]
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise InputError("expected a list of objects", file=source, field="items")
    implied = {"apiVersion": doc.get("apiVersion"), "kind": kind.removesuffix("List")} if kind != "List" else {}
    out = []
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            raise InputError("not a Kubernetes object", file=source, obj=f"items[{i}]")
        obj = {**{k: v for k, v in implied.items() if v}, **obj}
        if not isinstance(obj.get("kind"), str):
            raise InputError("not a Kubernetes object", file=source, obj=f"items[{i}]", field="kind")
        out.append((f"items[{i}]", obj))
    return out


def kubelet_view(pod: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A mirror pod as the API server shows it, turned into the static pod its kubelet
    runs, and the API UID it had (None for any other pod).

    The kubelet knows a static pod by the hash of its manifest (``config.hash``; upstream
    pkg/kubelet/config/common.go ``applyDefaults`` makes it the pod's UID) and reports its
    stats under that UID; the API server's mirror pod has a UID of its own and carries the
    hash as ``kubernetes.io/config.mirror`` (pkg/kubelet/pod/mirror_client.go). A scenario
    holds the kubelet's view and derives the mirror pod (scenario format, section 1)."""
    meta = dict(pod.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    mirror_hash = annotations.pop(CONFIG_MIRROR_ANNOTATION, None)
    if not isinstance(mirror_hash, str) or not mirror_hash:
        return dict(pod), None
    api_uid = meta.get("uid")
    annotations.setdefault(CONFIG_SOURCE_ANNOTATION, "file")
    meta["annotations"] = annotations
    meta["uid"] = mirror_hash
    owners = [o for o in meta.get("ownerReferences") or [] if not (isinstance(o, dict) and o.get("kind") == "Node")]
    if owners:
        meta["ownerReferences"] = owners
    else:
        meta.pop("ownerReferences", None)
    return {**pod, "metadata": meta}, api_uid if isinstance(api_uid, str) and api_uid else None


@dataclass
class Collected:
    """The objects of the recorded dumps and what the user is told about them."""

    objects: list[dict[str, Any]]
    skipped: dict[str, int]
    #: the API UID of each mirror pod -> the UID its kubelet knows it by
    mirror_uids: dict[str, str] = field(default_factory=dict)
    static_pods: list[str] = field(default_factory=list)
    #: recorded Events, as the cluster had them (scenario/observed_events.py)
    events: list[dict[str, Any]] = field(default_factory=list)
    #: recorded Events that could not be read, and why
    unread_events: list[str] = field(default_factory=list)


def collect_objects(documents: Sequence[tuple[str, Any]]) -> Collected:
    """Objects from kubectl or kubelet documents (``List``s, typed lists or single
    objects), in dependency order (nodes and classes before the pods that use them);
    skipped kinds counted; mirror pods as their kubelet knows them."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    collected = Collected([], {})
    seen: set[tuple[str, str, str]] = set()
    for source, doc in documents:
        if not isinstance(doc, dict):
            raise InputError("expected a Kubernetes object or list (kubectl get ... -o yaml|json)", file=source)
        for where, obj in _items(doc, source):
            kind = obj.get("kind")
            if not isinstance(kind, str):
                raise InputError("not a Kubernetes object", file=source, field="kind")
            if is_event(obj):
                meta = obj.get("metadata") or {}
                try:
                    observed_event(obj, where or "Event")
                except InputError as exc:  # (never an input: one that cannot be read is left out, and said)
                    collected.skipped["Event"] = collected.skipped.get("Event", 0) + 1
                    collected.unread_events.append(f"{source}: Event {meta.get('name') or '?'} ({exc})")
                    continue
                key = ("Event", str(meta.get("namespace", "")), str(meta.get("name", "")))
                if key not in seen or not key[2]:
                    seen.add(key)
                    collected.events.append(clean_object(obj))
                continue
            if kind not in KINDS:
                collected.skipped[kind] = collected.skipped.get(kind, 0) + 1
                continue
            if kind == "Pod":
                obj, api_uid = kubelet_view(obj)
                if api_uid is not None:
                    collected.mirror_uids[api_uid] = obj["metadata"]["uid"]
            meta = obj.get("metadata") or {}
            key = (kind, meta.get("namespace", ""), meta.get("name", ""))
            if key in seen:
                continue  # the same object in two dumps: the first wins
            seen.add(key)
            if kind == "Pod" and (meta.get("annotations") or {}).get(CONFIG_SOURCE_ANNOTATION) in ("file", "http"):
                collected.static_pods.append(f"{key[1]}/{key[2]}")
            found.append((KINDS.index(kind), len(found), clean_object(obj)))
    found.sort(key=lambda x: (x[0], x[1]))
    collected.objects = [o for _, _, o in found]
    return collected


def as_kubelet_uids(summary: Mapping[str, Any], mirror_uids: Mapping[str, str]) -> dict[str, Any]:
    """The summary with any mirror pod's API UID replaced by its kubelet's UID, so stats
    recorded either way find their pod (the kubelet's own summary already uses it)."""
    if not mirror_uids:
        return dict(summary)
    pods = []
    for ps in summary.get("pods") or []:
        ref = ps.get("podRef") if isinstance(ps, dict) else None
        if isinstance(ref, dict) and ref.get("uid") in mirror_uids:
            ps = {**ps, "podRef": {**ref, "uid": mirror_uids[ref["uid"]]}}
        pods.append(ps)
    return {**summary, "pods": pods}


def offset_text(delta: timedelta) -> str:
    """An offset as exact seconds (microseconds at most, as the recordings' clocks give):
    ``f"{x:g}"`` printed 12 days as ``1.03968e+06s``."""
    micros = delta // timedelta(microseconds=1)
    whole, frac = divmod(micros, 1_000_000)
    return f"{whole}s" if not frac else f"{whole}.{frac:06d}".rstrip("0") + "s"


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
    all_gates = raw.get("featureGates") or {}
    gates = {k: v for k, v in all_gates.items() if k in FEATURE_GATE_DEFAULTS}
    if gates:
        kept["featureGates"] = gates
    dropped += [f"featureGates.{k}" for k in sorted(all_gates) if k not in FEATURE_GATE_DEFAULTS]
    return kept, dropped


def build_scenario(
    *,
    name: str,
    objects: Sequence[tuple[str, Any]],
    summaries: Sequence[tuple[str, Any]],
    kubelet_config: Mapping[str, Any] | None = None,
    housekeeping_seconds: int = 10,
    max_gap: timedelta | None = MAX_GAP,
) -> tuple[dict[str, Any], list[str]]:
    """The scenario document and notes for the user (what was skipped or assumed).
    Recordings more than ``max_gap`` apart are refused (recording_gaps.py; None: taken)."""
    notes: list[str] = []
    collected = collect_objects(objects)
    objs, skipped = collected.objects, collected.skipped
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
        timed.append((at, source, as_kubelet_uids(summary, collected.mirror_uids)))
    timed.sort(key=lambda x: (x[0], x[1]))
    check_gaps([(at, source) for at, source, _ in timed], max_gap)
    start = timed[0][0].replace(microsecond=0) if timed else None
    events = []
    for at, _, summary in timed:
        assert start is not None
        events.append({"at": offset_text(at - start), "stats": summary})
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
    if collected.unread_events:
        shown = "; ".join(collected.unread_events[:3]) + (" ..." if len(collected.unread_events) > 3 else "")
        notes.append(f"recorded events not kept ({len(collected.unread_events)}): {shown}")
    if collected.events:
        spec["observedEvents"] = collected.events
        notes.append(
            f"{len(collected.events)} recorded events kept as observed outcomes (spec.observedEvents; "
            "explain sets them beside the decisions)"
        )
    observed = {s["node"]["nodeName"] for _, _, s in timed}
    silent = sorted(nodes - observed)
    if collected.static_pods:
        notes.append(
            f"static pods, as their kubelets know them (mirror pods derived): {', '.join(collected.static_pods)}"
        )
    if silent:
        notes.append(f"nodes with no stats (never observed, no passes): {', '.join(silent)}")
    return {"apiVersion": "ledgerlet/v1", "kind": "Scenario", "metadata": {"name": name}, "spec": spec}, notes
