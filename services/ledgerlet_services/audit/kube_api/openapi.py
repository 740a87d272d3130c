"""The OpenAPI documents the API server publishes, for ``kubectl explain``: v3 per group
version (``/openapi/v3``, what ``explain`` reads by default) and v2 (``/openapi/v2``, JSON
or gnostic's protobuf, what ``explain --output plaintext-openapiv2`` reads).

The schemas are Kubernetes v1.34's own, for the kinds served and what they refer to
(``openapi_definitions.json``, made by ``openapi_gen``), and metrics-server's for
``metrics.k8s.io`` (from ``k8s.io/metrics/pkg/apis/metrics/v1beta1/types.go``). Paths are
the read paths of every resource served, each with its kind
(``x-kubernetes-group-version-kind``: how explain's templates find a resource's schema).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from ledgerlet_services.audit.kube_api import protobuf as pb
from ledgerlet_services.audit.kube_api.resources import CREATE_ONLY, KUBERNETES_VERSION, RESOURCES, Resource

DEFINITIONS: Final = Path(__file__).with_name("openapi_definitions.json")
#: the media type of the protobuf answer: kube-openapi writes the "@" of the one clients ask for as
#: a "." (Go's mime parser refuses an "@" in a subtype)
V2_PROTOBUF: Final = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
GVK: Final = "x-kubernetes-group-version-kind"
_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
_METRICS: Final = "io.k8s.metrics.pkg.apis.metrics.v1beta1"


def _metrics_definitions(type_meta: Mapping[str, Any]) -> dict[str, Any]:
    """metrics-server's kinds (``k8s.io/metrics/pkg/apis/metrics/v1beta1``); ``type_meta``:
    the ``apiVersion`` and ``kind`` properties every kind has."""
    window = (
        "The following fields define time interval from which metrics were collected from the interval "
        "[Timestamp-Window, Timestamp]."
    )
    usage = {
        "description": "The memory usage is the memory working set.",
        "type": "object",
        "additionalProperties": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
    }

    def kind(name: str, doc: str, body: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {
            "description": doc,
            "type": "object",
            "required": required,
            "properties": {
                "apiVersion": type_meta["apiVersion"],
                "kind": type_meta["kind"],
                "metadata": {"$ref": f"#/definitions/{_META}.ObjectMeta", "description": "Standard object's metadata."},
                "timestamp": {"$ref": f"#/definitions/{_META}.Time", "description": window},
                "window": {"type": "string", "description": window},
                **body,
            },
            GVK: [{"group": "metrics.k8s.io", "kind": name, "version": "v1beta1"}],
        }

    return {
        f"{_METRICS}.ContainerMetrics": {
            "description": "ContainerMetrics sets resource usage metrics of a container.",
            "type": "object",
            "required": ["name", "usage"],
            "properties": {
                "name": {
                    "description": "Container name corresponding to the one from pod.spec.containers.",
                    "type": "string",
                },
                "usage": usage,
            },
        },
        f"{_METRICS}.NodeMetrics": kind(
            "NodeMetrics",
            "NodeMetrics sets resource usage metrics of a node.",
            {"usage": usage},
            ["timestamp", "window", "usage"],
        ),
        f"{_METRICS}.PodMetrics": kind(
            "PodMetrics",
            "PodMetrics sets resource usage metrics of a pod.",
            {
                "containers": {
                    "description": "Metrics for all containers are collected within the same time window.",
                    "type": "array",
                    "items": {"$ref": f"#/definitions/{_METRICS}.ContainerMetrics"},
                }
            },
            ["timestamp", "window", "containers"],
        ),
    }


@functools.cache
def definitions() -> dict[str, Any]:
    """Every definition (OpenAPI v2), by name."""
    found: dict[str, Any] = json.loads(DEFINITIONS.read_text(encoding="utf-8"))
    return {**found, **_metrics_definitions(found["io.k8s.api.core.v1.Pod"]["properties"])}


def definition_of(r: Resource) -> str:
    """The name of the definition of a resource's kind."""
    want = {"group": r.group, "version": r.version, "kind": r.kind}
    for name, d in definitions().items():
        if want in d.get(GVK, []):
            return name
    raise KeyError(f"no definition for {r.group_version} {r.kind}")


def _paths(resources: Iterable[Resource], ref_prefix: str, *, v3: bool) -> dict[str, Any]:
    """The read paths of ``resources`` (create for the reviews), each naming its kind."""
    out: dict[str, Any] = {}
    for r in resources:
        base = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
        gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        schema = {"$ref": f"{ref_prefix}{definition_of(r)}"}
        answer = (
            {"description": "OK", "content": {"application/json": {"schema": schema}}}
            if v3
            else {"description": "OK", "schema": schema}
        )
        verb = "post" if r.verbs == CREATE_ONLY else "get"
        operation = {
            "description": f"{verb} {r.kind}",
            "operationId": f"{verb}{r.kind}",
            "responses": {"200": answer},
            "x-kubernetes-action": "create" if verb == "post" else "get",
            GVK: gvk,
        }
        scoped = f"{base}/namespaces/{{namespace}}/{r.name}" if r.namespaced else f"{base}/{r.name}"
        out[scoped if verb == "post" else f"{scoped}/{{name}}"] = {verb: operation}
        if verb == "get":
            out[scoped] = {"get": {**operation, "operationId": f"list{r.kind}", "x-kubernetes-action": "list"}}
    return out


def _info() -> dict[str, Any]:
    return {"title": "Kubernetes", "version": KUBERNETES_VERSION["gitVersion"]}


@functools.cache
def v2_document() -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": _info(),
        "paths": _paths(RESOURCES, "#/definitions/", v3=False),
        "definitions": definitions(),
    }


def _refs(schema: Any) -> Iterable[str]:
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[-1]
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for s in schema:
            yield from _refs(s)


def _closure(roots: Iterable[str]) -> list[str]:
    found: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(_refs(definitions()[name]))
    return sorted(found)


def to_v3(schema: Any) -> Any:
    """A v2 schema as upstream's v3 documents have it: references under
    ``#/components/schemas/``, a reference with a description of its own wrapped in
    ``allOf``, ``Quantity`` a string or a number."""
    if isinstance(schema, list):
        return [to_v3(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    if "$ref" in schema:
        ref = {"$ref": str(schema["$ref"]).replace("#/definitions/", "#/components/schemas/")}
        rest = {k: to_v3(v) for k, v in schema.items() if k != "$ref"}
        return {"allOf": [ref], **rest} if rest else ref
    return {k: to_v3(v) for k, v in schema.items()}


def group_versions() -> dict[str, list[Resource]]:
    """The v3 documents by their path (``api/v1``, ``apis/apps/v1``)."""
    out: dict[str, list[Resource]] = {}
    for r in RESOURCES:
        key = f"api/{r.version}" if not r.group else f"apis/{r.group}/{r.version}"
        out.setdefault(key, []).append(r)
    return out


@functools.cache
def v3_document(path: str) -> dict[str, Any] | None:
    """The v3 document of one group version, or None if none is served there."""
    resources = group_versions().get(path)
    if resources is None:
        return None
    names = _closure(definition_of(r) for r in resources)
    schemas = {n: to_v3(copy.deepcopy(definitions()[n])) for n in names}
    quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"
    if quantity in schemas:  # (upstream's v3 form of it)
        schemas[quantity] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    return {
        "openapi": "3.0.0",
        "info": _info(),
        "paths": _paths(resources, "#/components/schemas/", v3=True),
        "components": {"schemas": schemas},
    }


@functools.cache
def v3_hash(path: str) -> str:
    body = json.dumps(v3_document(path), sort_keys=True).encode()
    return hashlib.sha512(body).hexdigest().upper()


def v3_index(prefix: str) -> dict[str, Any]:
    """``/openapi/v3``: each group version's document, by a URL relative to the server's
    root (client-go replaces the path with it, so a facade's prefix is part of it)."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"{prefix}/openapi/v3/{path}?hash={v3_hash(path)}"} for path in group_versions()
        }
    }


# -- v2 as gnostic's protobuf (openapiv2/OpenAPIv2.proto) --------------------------------------
def _any(value: Any) -> bytes:
    """``Any`` with its ``yaml`` (field 2)."""
    return pb.field_string(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=False))


def _schema(schema: Mapping[str, Any]) -> bytes:
    """``Schema``: $ref 1, format 2, description 4, required 19, enum 20, additionalProperties
    21, type 22, items 23, allOf 24, properties 25, vendor extensions 31."""
    parts: list[bytes] = []
    if "$ref" in schema:
        parts.append(pb.field_string(1, str(schema["$ref"])))
    for number, key in ((2, "format"), (3, "title"), (4, "description")):
        if isinstance(schema.get(key), str):
            parts.append(pb.field_string(number, schema[key]))
    parts += [pb.field_string(19, str(r)) for r in schema.get("required", [])]
    parts += [pb.field_bytes(20, _any(e)) for e in schema.get("enum", [])]
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        parts.append(pb.field_bytes(21, pb.field_bytes(1, _schema(extra))))
    elif isinstance(extra, bool):
        parts.append(pb.field_bytes(21, pb.field_bool(2, extra)))
    kind = schema.get("type")
    if kind:
        kinds = kind if isinstance(kind, list) else [kind]
        parts.append(pb.field_bytes(22, pb.join(pb.field_string(1, str(k)) for k in kinds)))
    if isinstance(schema.get("items"), Mapping):
        parts.append(pb.field_bytes(23, pb.field_bytes(1, _schema(schema["items"]))))
    parts += [pb.field_bytes(24, _schema(s)) for s in schema.get("allOf", [])]
    if isinstance(schema.get("properties"), Mapping):
        named = (_named(n, _schema(s)) for n, s in schema["properties"].items())
        parts.append(pb.field_bytes(25, pb.join(pb.field_bytes(1, n) for n in named)))
    for key, value in schema.items():
        if key.startswith("x-"):
            parts.append(pb.field_bytes(31, _named(key, _any(value))))
    return pb.join(parts)


def _named(name: str, value: bytes) -> bytes:
    return pb.field_string(1, name) + pb.field_bytes(2, value)


@functools.cache
def v2_protobuf() -> bytes:
    """``Document``: swagger 1, info 2 (title 1, version 2), definitions 9."""
    doc = v2_document()
    info = pb.field_string(1, doc["info"]["title"]) + pb.field_string(2, doc["info"]["version"])
    named = (pb.field_bytes(1, _named(n, _schema(s))) for n, s in doc["definitions"].items())
    return pb.join([pb.field_string(1, "2.0"), pb.field_bytes(2, info), pb.field_bytes(9, pb.join(named))])


def v2_answer(accept: str) -> tuple[bytes, str]:
    """The v2 document as the client asks for it: protobuf, or JSON."""
    if "protobuf" in accept:
        return v2_protobuf(), V2_PROTOBUF
    return json.dumps(v2_document()).encode(), "application/json"
