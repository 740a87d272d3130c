"""Scenario files (``ledgerlet/v1``, scenario spec §1-3): parsed, defaulted, validated.

Everything a run needs is checked here, before anything runs: a bad quantity, an
unknown signal, a soft threshold without a grace period, an object the API server
would refuse, a duplicate object or a reference to an unknown node is an
:class:`InputError` naming the file, the object and the field.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import msgspec

from ledgerlet_core.apiserver.admission import admit_pod, validate_priority_class
from ledgerlet_core.apiserver.priority_admission import AdmissionError, known_classes
from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.controllers.config import CONTROLLER_FIELDS, CONTROLLER_GATES, ControllerConfig
from ledgerlet_core.kubelet.config import (
    KUBELET_CONFIG_ANNOTATION,
    KubeletConfig,
    check_kubelet_settings,
    config_for_node,
    node_override,
    resolve_kubelet_config,
)
from ledgerlet_core.model.annotations import FILESYSTEMS_ANNOTATION, MANIFEST_PRIORITY_ANNOTATION
from ledgerlet_core.model.codec import convert, object_builtins, to_builtins
from ledgerlet_core.model.duration import DurationError, parse_duration, seconds
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.ids import uuid5_text
from ledgerlet_core.model.k8s.decode import UnsupportedKind, decode_object, object_label
from ledgerlet_core.model.k8s.intern import Interner
from ledgerlet_core.model.k8s.objects import AnyObject, Node, Pod, PriorityClass, RuntimeClass, Workload
from ledgerlet_core.model.k8s.priority import is_static_pod
from ledgerlet_core.model.settings import check_gates, check_settings, suggestion
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.model.timefmt import EPOCH, parse_rfc3339
from ledgerlet_core.model.usage import LAYOUTS, NodeUsage, parse_node_usage, parse_pod_usage
from ledgerlet_core.scenario.bounds import decode_text
from ledgerlet_core.scenario.documents import read_document
from ledgerlet_core.scenario.json_scenario import plain, read_json_scenario
from ledgerlet_core.scenario.observed_events import observed_events
from ledgerlet_core.scenario.pod_shapes import PodShapes
from ledgerlet_core.scenario.unmodelled import scan as scan_unmodelled
from ledgerlet_core.scenario.usage_targets import check_usage_targets
from ledgerlet_core.scheduling.config import SCHEDULER_FIELDS, SCHEDULER_GATES, SchedulerConfig, config_errors

API_VERSION: Final = "ledgerlet/v1"
KIND: Final = "Scenario"
UID_NAMESPACE: Final = uuid.UUID("5b0c1c8e-8a57-5b8e-9d3b-6c6564676c74")

_SPEC_FIELDS: Final = frozenset(
    {
        "start",
        "duration",
        "kubeletConfig",
        "schedulerConfig",
        "controllerConfig",
        "objects",
        "usage",
        "events",
        "observedEvents",
    }
)
ACTIONS: Final = ("apply", "delete", "stats", "shutdown", "powerOff", "powerOn", "taint", "untaint")


@dataclass(frozen=True, slots=True)
class ScenarioEvent:
    """One entry of ``events``: its position in the file, time and input payload."""

    index: int
    at: int
    action: str
    data: msgspec.Struct


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    source: str
    digest: str
    start: datetime
    duration: int
    kubelet_config_raw: dict[str, Any]
    kubelet_config: KubeletConfig
    scheduler_config: SchedulerConfig
    controller_config: ControllerConfig
    objects: list[AnyObject]
    #: each ``usage`` entry as the JSON the input carries (a fleet's hundreds of thousands of
    #: entries are not kept as dicts once checked, and entries written alike share one text);
    #: the loops parse what the inputs carry, so the entries parsed to check them are not kept
    usage: dict[str, msgspec.Raw]
    events: list[ScenarioEvent]
    node_order: list[str]
    node_configs: dict[str, KubeletConfig] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: what upstream decides by that ledgerlet does not model (scenario/unmodelled.py)
    unmodelled: list[ev.UnmodelledField] = field(default_factory=list)
    #: how node-scoped loops number their events (contracts/order.py): a run option, not
    #: the file's (``ledgerlet run --order-by-node``; set by a split eviction manager)
    order_scheme: str = ""
    #: how derived observations are stored (``ScenarioStarted.observations``): a run option
    observations: str = ""
    #: recorded Events (``spec.observedEvents``): observed outcomes, never an input
    observed_events: list[dict[str, Any]] = field(default_factory=list)

    def kubelet_config_for(self, node: str) -> KubeletConfig:
        return self.node_configs.get(node, self.kubelet_config)

    def started_event(self) -> ev.ScenarioStarted:
        return ev.ScenarioStarted(
            name=self.name,
            start=self.start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            duration=self.duration,
            kubelet_config=self.kubelet_config_raw,
            scheduler_config=to_builtins(self.scheduler_config),
            controller_config=to_builtins(self.controller_config),
            node_order=list(self.node_order),
            source=self.source,
            digest=self.digest,
            order_scheme=self.order_scheme,
            observations=self.observations,
            observed_events=self.observed_events,
            unmodelled=list(self.unmodelled),
        )


_USAGE_JSON: Final = msgspec.json.Encoder()


def default_uid(kind: str, namespace: str, name: str, generation: int = 0) -> str:
    return uuid5_text(UID_NAMESPACE, f"{kind}/{namespace}/{name}/{generation}")


def _section(spec: Mapping[str, Any], name: str, kind: type[dict[str, Any]] | type[list[Any]]) -> Any:
    """``spec.NAME`` of the type it must have; absent or null is empty (``events: {}``,
    a mapping where a list belongs, was taken for an empty list)."""
    value = spec.get(name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InputError(f"expected a {'mapping' if kind is dict else 'list'}", obj="spec", field=name)
    return value


def _check_machine_memory(usage: NodeUsage, node: Node | None, where: str) -> None:
    """A closed-loop node's machine needs memory: the kernel's OOM scores and every memory
    signal are shares of it (upstream's nodes always report it)."""
    memory = usage.capacity.get("memory")
    if memory is None:
        declared = node.status.capacity.get("memory") if node is not None else None
        memory = declared.value() if declared is not None else 0
    if memory <= 0:
        raise InputError(
            "a node with usage needs a memory capacity (usage capacity.memory or the Node's status.capacity.memory)",
            obj="spec",
            field=where,
        )


def _duration(raw: Any, *, obj: str, field_name: str) -> int:
    if isinstance(raw, bool):
        raise InputError(f"expected a duration such as 15m, got {raw!r}", obj=obj, field=field_name)
    if isinstance(raw, (int, float)):
        if raw < 0:
            raise InputError(f"duration {raw} must not be negative", obj=obj, field=field_name)
        try:
            return seconds(raw)
        except DurationError as exc:
            raise InputError(str(exc), obj=obj, field=field_name) from None
    if not isinstance(raw, str):
        raise InputError(f"expected a duration such as 15m, got {raw!r}", obj=obj, field=field_name)
    try:
        value = parse_duration(raw)
    except DurationError as exc:
        raise InputError(str(exc), obj=obj, field=field_name) from None
    if value < 0:
        raise InputError(f"duration {raw} must not be negative", obj=obj, field=field_name)
    return value


def _usage_texts(usage_raw: dict[str, Any]) -> dict[str, msgspec.Raw]:
    """Each entry as JSON: a JSON file's as it stands, but compact (its layout would travel
    in every UsageDeclared and count against a batch's bytes); entries written alike (a
    fleet's pods stamped from one template) share one text."""
    texts: dict[bytes, msgspec.Raw] = {}
    out: dict[str, msgspec.Raw] = {}
    for key, raw in usage_raw.items():
        text = msgspec.json.format(bytes(raw), indent=-1) if isinstance(raw, msgspec.Raw) else _USAGE_JSON.encode(raw)
        out[key] = texts.setdefault(text, msgspec.Raw(text))
    return out


def load_scenario(content: str | bytes, source: str = "<scenario>") -> Scenario:
    """Parse a scenario file's text, or its bytes as read (checked here: within the size
    limit, UTF-8); :class:`InputError` carries ``source`` as the file. A JSON file given
    as bytes is read from them, never held as text beside them too (a fleet's file is a
    quarter of a gigabyte).

    Reading builds millions of objects and frees few: a caller that reads a large file
    pauses the cyclic collector around it (the command line does: app/collector.py)."""
    try:
        if isinstance(content, bytes):
            decode_text(content, source)  # (what is wrong with it said as the text reader says it)
            return _load(content, source)
        return _load(content.encode(), source, content)
    except InputError as exc:
        raise exc.located(file=source) from None


#: whitespace that may open a file, before its first character
_LEADING_SPACE: Final = re.compile(rb"\s*")


def _load(data: bytes, source: str, text: str | None = None) -> Scenario:
    """``data``: the file's UTF-8 bytes; ``text``: the same as text, when the caller has it."""
    # a JSON scenario's objects and usage entries are read one at a time (json_scenario)
    first = _LEADING_SPACE.match(data)
    opens = data[first.end() : first.end() + 1] if first is not None else b""
    doc = read_json_scenario(data) if opens == b"{" else None
    if doc is None:
        doc = read_document(text if text is not None else data.decode("utf-8"), source)
    if not isinstance(doc, dict):
        raise InputError(f"expected a Scenario mapping, got {type(doc).__name__}")
    if doc.get("apiVersion") != API_VERSION:
        raise InputError(f'expected "{API_VERSION}", got {doc.get("apiVersion")!r}', field="apiVersion")
    if doc.get("kind") != KIND:
        raise InputError(f'expected "{KIND}", got {doc.get("kind")!r}', field="kind")
    meta = doc.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise InputError("required field is missing", field="metadata.name")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise InputError("required field is missing", field="spec")
    warnings = [
        f"spec.{k}: unknown field, ignored{suggestion(str(k), _SPEC_FIELDS)}" for k in spec if k not in _SPEC_FIELDS
    ]

    start = EPOCH
    if "start" in spec:
        raw_start = spec["start"]
        try:
            start = parse_rfc3339(raw_start if isinstance(raw_start, str) else raw_start.isoformat())
        except (ValueError, AttributeError) as exc:
            raise InputError(str(exc), obj="spec", field="start") from None
        start = start.replace(microsecond=0)
    if "duration" not in spec:
        raise InputError("required field is missing", obj="spec", field="duration")
    duration = _duration(spec["duration"], obj="spec", field_name="duration")

    kubelet_raw = _section(spec, "kubeletConfig", dict)
    warnings += check_kubelet_settings(kubelet_raw, obj="spec", prefix="kubeletConfig")
    kubelet = resolve_kubelet_config(kubelet_raw, obj="spec.kubeletConfig")
    scheduler_raw = _section(spec, "schedulerConfig", dict)
    check_settings(scheduler_raw, SCHEDULER_FIELDS, what="schedulerConfig field", obj="spec", prefix="schedulerConfig")
    warnings += check_gates(scheduler_raw.get("featureGates"), SCHEDULER_GATES, obj="spec", prefix="schedulerConfig")
    scheduler = convert(scheduler_raw, SchedulerConfig, obj="spec.schedulerConfig")
    refused = config_errors(scheduler)
    if len(refused) == 1:
        raise InputError(refused[0][1], obj="spec", field=f"schedulerConfig.{refused[0][0]}")
    if refused:  # as upstream prints an aggregate of field errors
        message = "[" + ", ".join(f"schedulerConfig.{f}: {m}" for f, m in refused) + "]"
        raise InputError(message, obj="spec")
    controller_raw = _section(spec, "controllerConfig", dict)
    what = "controllerConfig field"
    check_settings(controller_raw, CONTROLLER_FIELDS, what=what, obj="spec", prefix="controllerConfig")
    warnings += check_gates(controller_raw.get("featureGates"), CONTROLLER_GATES, obj="spec", prefix="controllerConfig")
    controller = convert(controller_raw, ControllerConfig, obj="spec.controllerConfig")
    _duration(controller.node_monitor_grace_period, obj="spec.controllerConfig", field_name="nodeMonitorGracePeriod")

    shapes = PodShapes()
    objects, obj_warnings, declared = _objects(_section(spec, "objects", list), shapes)
    warnings += obj_warnings
    raw_events = _section(spec, "events", list)
    events = [_event(i, raw) for i, raw in enumerate(raw_events)]
    events.sort(key=lambda e: e.at)  # stable: same instant keeps file order

    node_order: list[str] = []
    for obj in objects:
        if isinstance(obj, Node) and obj.metadata.name not in node_order:
            node_order.append(obj.metadata.name)
    for e in events:
        if isinstance(e.data, ev.ObjectApplied) and e.data.object.get("kind") == "Node":
            node_name = e.data.object["metadata"]["name"]
            if node_name not in node_order:
                node_order.append(node_name)
    known_nodes = set(node_order)

    node_configs = _node_configs(objects, events, kubelet_raw, warnings)
    _check_references(objects, events, known_nodes)
    objects = _resolve_initial_pods(objects, controller, shapes)

    usage_raw = _section(spec, "usage", dict)
    node_objects = {o.metadata.name: o for o in objects if isinstance(o, Node)}
    for key, raw in usage_raw.items():
        where = f"usage.{key}"
        if not isinstance(key, str) or key.count("/") not in (1, 2):
            raise InputError("keys are node/NAME, NAMESPACE/POD or NAMESPACE/KIND/NAME", obj="spec", field=where)
        if key.startswith("node/"):
            node = key[len("node/") :]
            if node not in known_nodes:
                raise InputError(f"usage for unknown node {node!r}", obj="spec", field=where)
            machine = _located(lambda raw=raw, where=where: parse_node_usage(plain(raw), where))
            _check_machine_memory(machine, node_objects.get(node), where)
        else:
            _located(lambda raw=raw, where=where: parse_pod_usage(raw, where))
            if key.count("/") == 2 and key.split("/")[1] not in Workload.KINDS:
                raise InputError(f"unknown workload kind {key.split('/')[1]!r}", obj="spec", field=where)

    applied = (e.data.object for e in events if isinstance(e.data, ev.ObjectApplied))
    warnings += check_usage_targets(usage_raw.keys(), declared, applied)
    for e in events:
        if e.at > duration:
            warnings.append(f"events[{e.index}]: at {e.at / 1e9:g}s is after the duration; it will not run")
    unmodelled, notes = scan_unmodelled(objects, events, kubelet, node_configs, node_order, warnings)
    warnings += notes

    return Scenario(
        name=name,
        source=source,
        digest=hashlib.sha256(data).hexdigest(),
        start=start,
        duration=duration,
        kubelet_config_raw=dict(kubelet_raw),
        kubelet_config=kubelet,
        scheduler_config=scheduler,
        controller_config=controller,
        objects=objects,
        usage=_usage_texts(usage_raw),
        events=events,
        node_order=node_order,
        node_configs=node_configs,
        warnings=warnings,
        observed_events=observed_events(_section(spec, "observedEvents", list)),
        unmodelled=unmodelled,
    )


def _located(fn: Any) -> Any:
    try:
        return fn()
    except InputError as exc:
        raise exc.located(obj="spec") from None


def _objects(raw_objects: Any, shapes: PodShapes) -> tuple[list[AnyObject], list[str], dict[tuple[str, str, str], int]]:
    """The objects, warnings, and each object's place by ``(kind, namespace, name)``."""
    if not isinstance(raw_objects, list):
        raise InputError("expected a list", obj="spec", field="objects")
    out: list[AnyObject] = []
    warnings: list[str] = []
    seen: dict[tuple[str, str, str], int] = {}
    for i, entry in enumerate(raw_objects):
        obj: AnyObject | None = None
        if isinstance(entry, msgspec.Raw):  # (a JSON file's pod: checked once per shape)
            obj = shapes.pod(entry, functools.partial(_decoded, entry, i), _pod_uid)
        if obj is None:
            try:
                obj = _decoded(entry, i)
            except UnsupportedKind as exc:
                warnings.append(f"{exc.obj}: {exc.message}; ignored")
                continue
        key = (obj.kind, obj.metadata.namespace, obj.metadata.name)
        if key in seen:
            label = f"objects[{i}] {object_label(plain(entry))}"
            raise InputError(
                f"duplicate object: already defined at objects[{seen[key]}]", obj=label, field="metadata.name"
            )
        seen[key] = i
        if not obj.metadata.uid:
            obj = msgspec.structs.replace(
                obj,
                metadata=msgspec.structs.replace(
                    obj.metadata, uid=default_uid(obj.kind, obj.metadata.namespace, obj.metadata.name)
                ),
            )
        out.append(obj)
    return out, warnings, seen


def _decoded(entry: Any, i: int) -> AnyObject:
    """``objects[i]`` typed, defaulted and checked, one object at a time."""
    raw = plain(entry)  # (one object's dict at a time: a fleet's would be gigabytes at once)
    return decode_object(raw, label=f"objects[{i}] {object_label(raw)}")


def _pod_uid(namespace: str, name: str) -> str:
    return default_uid("Pod", namespace, name)


#: what a ``delete`` event may remove (every other kind is an input error, never dropped)
DELETABLE_KINDS: Final = frozenset(
    {"Pod", "Node", "PriorityClass", "RuntimeClass", "PodDisruptionBudget", "ResourceQuota", *Workload.KINDS}
)


def _event(index: int, raw: Any) -> ScenarioEvent:
    label = f"events[{index}]"
    if not isinstance(raw, dict):
        raise InputError("expected a mapping with `at` and one action", obj=label)
    if "at" not in raw:
        raise InputError("required field is missing", obj=label, field="at")
    at = _duration(raw["at"], obj=label, field_name="at")
    actions = [a for a in ACTIONS if a in raw]
    extra = [k for k in raw if k not in (*ACTIONS, "at", "afterReclaim")]
    if len(actions) != 1 or extra:
        raise InputError(
            f"expected exactly one of {', '.join(ACTIONS)}; got {sorted(k for k in raw if k != 'at')}", obj=label
        )
    action = actions[0]
    body = raw[action]
    data: msgspec.Struct
    if action == "apply":
        obj_label = f"{label}.apply {object_label(body)}"
        obj = decode_object(body, label=obj_label)
        data = ev.ObjectApplied(object=object_builtins(obj))
    elif action == "delete":
        if not isinstance(body, dict):
            raise InputError("expected a mapping", obj=label, field="delete")
        data = convert(body, ev.ObjectDeleted, obj=label, prefix="delete")
        if data.kind not in DELETABLE_KINDS:
            supported = ", ".join(sorted(DELETABLE_KINDS))
            raise InputError(
                f"deleting a {data.kind} is not modelled; kinds that can be deleted: {supported}",
                obj=label,
                field="delete.kind",
            )
    elif action == "stats":
        summary = convert(body, Summary, obj=label, prefix="stats")
        after = raw.get("afterReclaim")
        after_summary = convert(after, Summary, obj=label, prefix="afterReclaim") if after is not None else None
        data = ev.StatsReported(
            node=summary.node.node_name,
            summary=to_builtins(summary),
            after_reclaim=to_builtins(after_summary) if after_summary else None,
        )
    elif action in ("shutdown", "powerOff", "powerOn"):
        model = {"shutdown": ev.NodeShutdownRequested, "powerOff": ev.NodePoweredOff, "powerOn": ev.NodePoweredOn}[
            action
        ]
        data = convert(body, model, obj=label, prefix=action)
    elif action == "taint":
        data = convert(body, ev.NodeTainted, obj=label, prefix="taint")
    else:
        data = convert(body, ev.NodeUntainted, obj=label, prefix="untaint")
    if action != "stats" and "afterReclaim" in raw:
        raise InputError("afterReclaim goes only with a stats event", obj=label, field="afterReclaim")
    return ScenarioEvent(index=index, at=at, action=action, data=data)


def _node_configs(
    objects: list[AnyObject], events: list[ScenarioEvent], base: Mapping[str, Any], warnings: list[str]
) -> dict[str, KubeletConfig]:
    """Resolve every node's ``ledgerlet/kubelet-config`` override and check its layout;
    what it sets that ledgerlet does not model is added to ``warnings``."""
    out: dict[str, KubeletConfig] = {}
    nodes: list[tuple[str, Node]] = [
        (f"objects[{i}] Node {o.metadata.name}", o) for i, o in enumerate(objects) if isinstance(o, Node)
    ]
    for e in events:
        if isinstance(e.data, ev.ObjectApplied) and e.data.object.get("kind") == "Node":
            nodes.append(
                (f"events[{e.index}].apply Node {e.data.object['metadata']['name']}", convert(e.data.object, Node))
            )
    for label, node in nodes:
        annotations = node.metadata.annotations
        layout = annotations.get(FILESYSTEMS_ANNOTATION)
        if layout is not None and layout not in LAYOUTS:
            raise InputError(
                f"expected one of {', '.join(LAYOUTS)}, got {layout!r}",
                obj=label,
                field=f"metadata.annotations.{FILESYSTEMS_ANNOTATION}",
            )
        if KUBELET_CONFIG_ANNOTATION in annotations:
            override: dict[str, Any] = {}
            with contextlib.suppress(ValueError):  # (not JSON: config_for_node says so)
                override = node_override(annotations) or {}
            field_name = f"metadata.annotations.{KUBELET_CONFIG_ANNOTATION}"
            warnings += [f"{label}: {w}" for w in check_kubelet_settings(override, obj=label, prefix=field_name)]
            out[node.metadata.name] = config_for_node(base, annotations, obj=label)
    return out


def _check_references(objects: list[AnyObject], events: list[ScenarioEvent], nodes: set[str]) -> None:
    for i, obj in enumerate(objects):
        if isinstance(obj, Pod) and obj.spec.node_name and obj.spec.node_name not in nodes:
            raise InputError(
                f"unknown node {obj.spec.node_name!r}", obj=f"objects[{i}] Pod {obj.key}", field="spec.nodeName"
            )
    for e in events:
        node = getattr(e.data, "node", None)
        if isinstance(node, str) and node not in nodes:
            field_name = "stats.node.nodeName" if e.action == "stats" else f"{e.action}.node"
            raise InputError(f"unknown node {node!r}", obj=f"events[{e.index}]", field=field_name)
        if isinstance(e.data, ev.ObjectApplied) and e.data.object.get("kind") == "Pod":
            node_name = e.data.object.get("spec", {}).get("nodeName")
            if node_name and node_name not in nodes:
                raise InputError(f"unknown node {node_name!r}", obj=f"events[{e.index}].apply", field="spec.nodeName")


def _resolve_initial_pods(objects: list[AnyObject], controller: ControllerConfig, shapes: PodShapes) -> list[AnyObject]:
    """Pods in ``objects`` were admitted long ago: resolve priority and QoS as admission did
    (once per shape for pods that have one: scenario/pod_shapes.py)."""
    classes = known_classes({o.metadata.name: o for o in objects if isinstance(o, PriorityClass)})
    runtime_classes = {o.metadata.name: o for o in objects if isinstance(o, RuntimeClass)}
    shared = Interner()  # a fleet's pods repeat the same parts: held once each
    out: list[AnyObject] = []
    for i, obj in enumerate(objects):
        if isinstance(obj, PriorityClass):
            error = validate_priority_class(obj)
            if error is not None:
                raise InputError(
                    error.message, obj=f"objects[{i}] PriorityClass {obj.metadata.name}", field=error.field
                )
        if isinstance(obj, Pod):

            def admitted(pod: Pod, i: int = i) -> Pod:
                if is_static_pod(pod):  # the kubelet keeps the manifest's priority (see kubelet_priority)
                    manifest = "" if pod.spec.priority is None else str(pod.spec.priority)
                    annotations = {**pod.metadata.annotations, MANIFEST_PRIORITY_ANNOTATION: manifest}
                    pod = msgspec.structs.replace(
                        pod, metadata=msgspec.structs.replace(pod.metadata, annotations=annotations)
                    )
                try:
                    pod = admit_pod(
                        pod,
                        classes,
                        runtime_classes,
                        not_ready_seconds=controller.default_not_ready_toleration_seconds,
                        unreachable_seconds=controller.default_unreachable_toleration_seconds,
                    )
                except AdmissionError as exc:
                    raise InputError(exc.message, obj=f"objects[{i}] Pod {pod.key}", field=exc.field) from None
                return shared.pod(pod)

            obj = shapes.admitted(obj, admitted, shared)
        out.append(obj)
    return out
