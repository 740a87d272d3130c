"""The JSON Schema of a scenario file (docs/scenario-format.md), for editors and
generators: written to ``contracts/scenario.v1.schema.json`` by ``ledgerlet contracts``.

The loader stays the authority (it checks what a schema cannot: quantities, references,
what the API server would refuse); the schema catches the shape early. Sections read
into msgspec structs take their schema from those structs, so the two cannot drift.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.controllers.config import ControllerConfig
from ledgerlet_core.kubelet.config import KubeletConfigSpec
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.scenario.load import ACTIONS, API_VERSION, KIND
from ledgerlet_core.scheduling.config import SchedulerConfig

SCHEMA_ID = "https://ledgerlet.dev/contracts/scenario.v1.schema.json"

#: the event bodies read into structs (apply takes any Kubernetes object)
_EVENT_BODIES: dict[str, type] = {
    "delete": ev.ObjectDeleted,
    "stats": Summary,
    "shutdown": ev.NodeShutdownRequested,
    "powerOff": ev.NodePoweredOff,
    "powerOn": ev.NodePoweredOn,
    "taint": ev.NodeTainted,
    "untaint": ev.NodeUntainted,
}
_STRUCTS: dict[str, type] = {
    "KubeletConfig": KubeletConfigSpec,
    "SchedulerConfig": SchedulerConfig,
    "ControllerConfig": ControllerConfig,
    **{f"{action[0].upper()}{action[1:]}Event": body for action, body in _EVENT_BODIES.items()},
}

_QUANTITY = {
    "description": "a Kubernetes quantity (100Mi, 1.5Gi, 500m) or a plain number",
    "type": ["string", "number"],
}
_DURATION = {
    "description": "a Go duration (90s, 5m, 1h30m) or a number of seconds",
    "type": ["string", "number"],
}
_SERIES = {
    "description": "a constant quantity, or [seconds, quantity] points (piecewise linear)",
    "oneOf": [
        {"$ref": "#/$defs/Quantity"},
        {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "array",
                "prefixItems": [{"type": "number", "minimum": 0}, {"$ref": "#/$defs/Quantity"}],
                "minItems": 2,
                "maxItems": 2,
            },
        },
    ],
}


def _hook(tp: type) -> dict[str, Any]:
    if tp is Quantity:
        return {"$ref": "#/$defs/Quantity"}
    raise NotImplementedError


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


def _series_map(*names: str) -> dict[str, Any]:
    return _closed({n: {"$ref": "#/$defs/Series"} for n in names})


def _usage() -> dict[str, Any]:
    """Section 2 (model/usage.py reads it)."""
    node = _closed(
        {
            "capacity": _closed(
                {n: {"$ref": "#/$defs/Quantity"} for n in ("memory", "nodefs", "nodefsInodes", "pids")}
            ),
            "imageFs": _closed(
                {"capacity": {"$ref": "#/$defs/Quantity"}, "inodes": {"$ref": "#/$defs/Quantity"}}, ("capacity",)
            ),
            "system": _series_map("memory", "nodefs", "nodefsInodes", "pids"),
            "inactiveFile": {"$ref": "#/$defs/Series"},
            "images": {
                "type": "array",
                "items": _closed(
                    {
                        "name": {"type": "string", "minLength": 1},
                        "size": {"$ref": "#/$defs/Quantity"},
                        "inUse": {"type": "boolean"},
                        "pinned": {"type": "boolean"},
                    },
                    ("name", "size"),
                ),
            },
            "deadContainers": _closed({"count": {"$ref": "#/$defs/Quantity"}, "bytes": {"$ref": "#/$defs/Quantity"}}),
        }
    )
    pod = _closed(
        {
            **{n: {"$ref": "#/$defs/Series"} for n in ("memory", "rootfs", "logs", "inodes", "pids")},
            "volumes": {
                "description": "all local ephemeral volumes, or by volume name",
                "oneOf": [
                    {"$ref": "#/$defs/Series"},
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/Series"}},
                ],
            },
            "containers": {"type": "object", "additionalProperties": _series_map("memory", "rootfs", "logs")},
        }
    )
    return {
        "type": "object",
        "description": "node/NAME, NAMESPACE/POD or NAMESPACE/KIND/NAME (every pod of a workload)",
        "patternProperties": {"^node/[^/]+$": node, "^(?!node/)[^/]+/[^/]+(/[^/]+)?$": pod},
        "additionalProperties": False,
    }


def _event() -> dict[str, Any]:
    """Section 3: ``at`` and exactly one action."""
    bodies = {"apply": {"$ref": "#/$defs/KubernetesObject"}}
    bodies |= {action: {"$ref": f"#/$defs/{action[0].upper()}{action[1:]}Event"} for action in _EVENT_BODIES}
    assert tuple(bodies) == ("apply", *_EVENT_BODIES) and set(bodies) == set(ACTIONS)
    return {
        "oneOf": [
            {
                **_closed(
                    {"at": {"$ref": "#/$defs/Duration"}, action: body}
                    | ({"afterReclaim": {"$ref": "#/$defs/StatsEvent"}} if action == "stats" else {}),
                    ("at", action),
                )
            }
            for action, body in bodies.items()
        ]
    }


def scenario_schema() -> dict[str, Any]:
    """The schema document (draft 2020-12)."""
    roots, defs = msgspec.json.schema_components(
        list(_STRUCTS.values()), schema_hook=_hook, ref_template="#/$defs/{name}"
    )
    for name, root in zip(_STRUCTS, roots, strict=True):  # the structs under names of the format's
        struct_name = root["$ref"].rsplit("/", 1)[-1]
        defs[name] = defs.pop(struct_name) if struct_name != name else defs[name]
    defs |= {
        "RecordedEvent": {
            "type": "object",
            "description": "a core v1 Event (involvedObject, message, source, count, lastTimestamp) or an "
            "events.k8s.io/v1 Event (regarding, note, reportingController, series), as kubectl prints it",
            "required": ["apiVersion", "kind", "reason"],
            "properties": {
                "apiVersion": {"enum": ["v1", "events.k8s.io/v1", "events.k8s.io/v1beta1"]},
                "kind": {"const": "Event"},
                "reason": {"type": "string", "minLength": 1},
                "involvedObject": {"$ref": "#/$defs/EventObject"},
                "regarding": {"$ref": "#/$defs/EventObject"},
                "count": {"type": "integer", "minimum": 1},
            },
            "anyOf": [{"required": ["involvedObject"]}, {"required": ["regarding"]}],
        },
        "EventObject": {
            "type": "object",
            "required": ["kind", "name"],
            "properties": {
                "kind": {"type": "string", "minLength": 1},
                "namespace": {"type": "string"},
                "name": {"type": "string", "minLength": 1},
            },
        },
        "Quantity": _QUANTITY,
        "Duration": _DURATION,
        "Series": _SERIES,
        "KubernetesObject": {
            "type": "object",
            "description": "as kubectl get -o yaml prints it; unknown fields are ignored, as the API server does",
            "required": ["apiVersion", "kind", "metadata"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            },
        },
    }
    spec = {
        "type": "object",
        "required": ["duration"],
        "properties": {
            "start": {"type": "string", "description": "RFC 3339 wall-clock time of t=0"},
            "duration": {"$ref": "#/$defs/Duration"},
            "kubeletConfig": {"$ref": "#/$defs/KubeletConfig"},
            "schedulerConfig": {"$ref": "#/$defs/SchedulerConfig"},
            "controllerConfig": {"$ref": "#/$defs/ControllerConfig"},
            "objects": {"type": "array", "items": {"$ref": "#/$defs/KubernetesObject"}},
            "usage": _usage(),
            "events": {"type": "array", "items": _event()},
            "observedEvents": {
                "type": "array",
                "description": "recorded Events (kubectl get events -o yaml): what the cluster was seen to do, "
                "kept beside the decisions (explain shows them); never an input",
                "items": {"$ref": "#/$defs/RecordedEvent"},
            },
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"Scenario ({API_VERSION})",
        "description": "A ledgerlet scenario file (docs/scenario-format.md).",
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": KIND},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1}},
            },
            "spec": spec,
        },
        "$defs": dict(sorted(defs.items())),
    }
