"""The facade's requests as route templates, for the audit API's request metrics.

The facade is one catch-all route (app.py), so its requests were all counted under
``route="/{path:path}"``. A template names what was asked (``/k8s/{run}/{at}/api/v1/
namespaces/{namespace}/pods/{name}``) without the run, the instant, namespaces or names,
which would make a series each: resource plurals and API groups the facade serves stay
literal, anything else a client sends becomes a placeholder, so the series stay bounded.
"""

from __future__ import annotations

from typing import Final

from ledgerlet_services.audit.kube_api import resources as res

BASE: Final = "/k8s/{run}/{at}"
#: first segments after the instant that are kept as written
_TOP: Final = frozenset({"api", "apis", "version", "openapi", ".well-known"})


def _plurals() -> frozenset[str]:
    return frozenset(r.name for r in res.RESOURCES)


def _groups() -> frozenset[str]:
    return frozenset(r.group for r in res.RESOURCES if r.group)


def _resource_part(rest: list[str]) -> str:
    """``[namespaces/NS/]RESOURCE[/NAME[/SUB]]`` as a template."""
    out = []
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        out += ["namespaces", "{namespace}"]
        rest = rest[2:]
    if not rest:
        return "/".join(out)
    out.append(rest[0] if rest[0] in _plurals() else "{resource}")
    if len(rest) > 1:
        out.append("{name}")
    if len(rest) > 2:
        sub = rest[2]
        out.append(sub if sub in ("status", "log", "exec", "proxy", "eviction", "binding") else "{subresource}")
    if len(rest) > 3:
        out.append("{path}")
    return "/".join(out)


def kube_route(path: str) -> str:
    """The template of a path under the facade's prefix (``/k8s/...``)."""
    parts = [p for p in path.split("/") if p][1:]  # (after "k8s")
    if len(parts) < 2:
        return "/k8s/{path}"
    rest = parts[2:]
    if not rest:
        return BASE
    if rest[0] not in _TOP:
        return f"{BASE}/{{path}}"
    if rest[0] == "api":
        if len(rest) == 1:
            return f"{BASE}/api"
        version = rest[1] if rest[1] == "v1" else "{version}"
        tail = _resource_part(rest[2:])
        return f"{BASE}/api/{version}" + (f"/{tail}" if tail else "")
    if rest[0] == "apis":
        if len(rest) == 1:
            return f"{BASE}/apis"
        known = rest[1] in _groups()
        group = rest[1] if known else "{group}"
        if len(rest) == 2:
            return f"{BASE}/apis/{group}"
        version = rest[2] if known and rest[2].startswith("v") and rest[2][1:2].isdigit() else "{version}"
        tail = _resource_part(rest[3:])
        return f"{BASE}/apis/{group}/{version}" + (f"/{tail}" if tail else "")
    return f"{BASE}/{rest[0]}" + ("/{path}" if len(rest) > 1 else "")
