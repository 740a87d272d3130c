"""An OpenAPI description of the Kubernetes API facade's routes (``/k8s/{run}/{at}/...``),
for schemathesis to generate requests from, as the audit API's own document serves its
fuzz test: each route with the query parameters the facade reads, their types (so that
invalid ones are generated too), and the answers it may give, every error a ``Status``.

The facade answers whatever path kubectl builds, so the description is of its shapes:
a resource by name (``{resource}``, one of those served, or anything in invalid
requests), a group version, a namespace, an object, a subresource."""

from __future__ import annotations

from typing import Any

from ledgerlet_services.audit.kube_api.resources import RESOURCES

STATUS = {
    "type": "object",
    "required": ["kind", "apiVersion", "status", "message", "reason", "code"],
    "properties": {
        "kind": {"const": "Status"},
        "apiVersion": {"const": "v1"},
        "status": {"const": "Failure"},
        "message": {"type": "string"},
        "reason": {"type": "string"},
        "code": {"type": "integer"},
    },
}

_ERRORS = {
    "400": "BadRequest: a parameter that does not parse (limit, timeoutSeconds, a selector), a NUL byte",
    "403": "Forbidden: a subresource that is not served (log, exec, ...)",
    "404": "NotFound: no such run, instant, resource or object",
    "405": "MethodNotAllowed: every write, and a read of a create-only review",
    "410": "Expired: a resourceVersion that is not one of the run's",
}


def _responses(*codes: str) -> dict[str, Any]:
    out: dict[str, Any] = {"200": {"description": "the object, list, table or watch stream"}}
    for code in codes:
        out[code] = {
            "description": _ERRORS[code],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}},
        }
    return out


def _path_param(name: str, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1, **schema}}


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


#: what list, get and watch read (``app.py``)
READ_QUERY = [
    _query("limit", {"type": "integer", "minimum": 0, "maximum": 9223372036854775807}),
    _query("continue", {"type": "string"}),
    _query("labelSelector", {"type": "string"}),
    _query("fieldSelector", {"type": "string"}),
    _query("watch", {"type": "string", "enum": ["true", "false", "1", "0"]}),
    _query("resourceVersion", {"type": "string", "pattern": "^[0-9]{1,19}$"}),
    _query("timeoutSeconds", {"type": "integer", "minimum": 0, "maximum": 9223372036854775807}),
    _query("includeObject", {"type": "string", "enum": ["None", "Metadata", "Object"]}),
    _query("sendInitialEvents", {"type": "string", "enum": ["true", "false"]}),
]

_RUN = [_path_param("run"), _path_param("at")]
_CORE = sorted({r.name for r in RESOURCES if not r.group})
_GROUPS = sorted({r.group for r in RESOURCES if r.group})
_GROUPED = sorted({r.name for r in RESOURCES if r.group})


def _read(summary: str, params: list[dict[str, Any]], *codes: str) -> dict[str, Any]:
    return {"summary": summary, "parameters": params + READ_QUERY, "responses": _responses(*codes)}


def _write(summary: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    return {"summary": summary, "parameters": params, "responses": _responses("400", "404", "405")}


def document() -> dict[str, Any]:
    """The OpenAPI 3.0 document."""
    resource = _path_param("resource", enum=_CORE)
    grouped = _path_param("resource", enum=_GROUPED)
    group = _path_param("group", enum=_GROUPS)
    version = _path_param("version", enum=["v1"])
    namespace, name = _path_param("namespace"), _path_param("name")
    sub = _path_param("subresource", enum=["status", "log", "exec", "eviction", "binding"])
    paths: dict[str, Any] = {
        "/k8s/{run}/{at}": {"get": _read("the paths served", _RUN, "400", "404")},
        "/k8s/{run}/{at}/version": {"get": _read("the version", _RUN, "400", "404")},
        "/k8s/{run}/{at}/api": {"get": _read("legacy discovery", _RUN, "400", "404")},
        "/k8s/{run}/{at}/apis": {"get": _read("group discovery", _RUN, "400", "404")},
        "/k8s/{run}/{at}/apis/{group}/{version}": {
            "get": _read("a group version's resources", [*_RUN, group, version], "400", "404")
        },
    }
    # (405: a read of what can only be created, as the self-subject reviews are)
    reads = ("400", "403", "404", "405", "410")
    core = "/k8s/{run}/{at}/api/v1"
    for prefix, res, extra in (
        (core, resource, []),
        ("/k8s/{run}/{at}/apis/{group}/{version}", grouped, [group, version]),
    ):
        base = [*_RUN, *extra]
        paths[f"{prefix}/{{resource}}"] = {
            "get": _read("list or watch", [*base, res], *reads),
            "post": _write("create: refused", [*base, res]),
        }
        paths[f"{prefix}/{{resource}}/{{name}}"] = {
            "get": _read("a cluster-scoped object", [*base, res, name], *reads),
            "delete": _write("delete: refused", [*base, res, name]),
            "put": _write("replace: refused", [*base, res, name]),
            "patch": _write("patch: refused", [*base, res, name]),
        }
        paths[f"{prefix}/namespaces/{{namespace}}/{{resource}}"] = {
            "get": _read("list or watch in a namespace", [*base, namespace, res], *reads),
        }
        paths[f"{prefix}/namespaces/{{namespace}}/{{resource}}/{{name}}"] = {
            "get": _read("a namespaced object", [*base, namespace, res, name], *reads),
            "delete": _write("delete: refused", [*base, namespace, res, name]),
        }
        paths[f"{prefix}/namespaces/{{namespace}}/{{resource}}/{{name}}/{{subresource}}"] = {
            "get": _read("a subresource", [*base, namespace, res, name, sub], *reads),
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "ledgerlet's Kubernetes API facade (its routes)", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Status": STATUS}},
    }
