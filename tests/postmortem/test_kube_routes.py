"""The facade's route table (``kube_api/routers``): every served resource has its routes,
and no route is hidden behind one tried before it (a request names the route it was meant for)."""

from __future__ import annotations

import re

from starlette.routing import Match

from ledgerlet_services.audit.kube_api.resources import RESOURCES
from ledgerlet_services.audit.kube_api.routers import ROUTERS
from ledgerlet_services.audit.kube_api.routers.resource_routes import collections

ROUTES = [route for router in ROUTERS for route in router.routes]


def _template(route: object) -> str:
    path: str = getattr(route, "path")  # noqa: B009 (a BaseRoute names no path)
    return path


def _example(template: str) -> str:
    """A path the template matches: each placeholder a value no literal segment has."""
    return re.sub(r"\{[a-z_]+(:path)?\}", "x1", template)


def _first_match(path: str) -> str:
    scope = {"type": "http", "method": "GET", "path": path, "root_path": ""}
    return next(_template(r) for r in ROUTES if r.matches(scope)[0] is Match.FULL)


def test_every_served_resource_has_its_routes() -> None:
    templates = {_template(r) for r in ROUTES}
    for resource in RESOURCES:
        for path in collections(resource):
            assert {path, f"{path}/{{name}}", f"{path}/{{name}}/{{subresource}}"} <= templates or (
                {path, f"{path}/{{name}}", f"{path}/{{name}}/status"} <= templates and resource.name == "namespaces"
            ), path


def test_no_route_is_hidden_behind_another() -> None:
    templates = [_template(r) for r in ROUTES]
    assert len(templates) == len(set(templates))
    for template in templates:
        assert _first_match(_example(template)) == template


def test_what_no_route_names_is_answered_last_under_its_shape() -> None:
    assert _first_match("/x1") == "/{path:path}"
    assert _first_match("/r/end/nonsense/a/b") == "/{run}/{at}/{path:path}"
    assert _first_match("/r/end/apis/made.up/v9/things") == "/{run}/{at}/apis/{group}/{version}/{resource}"
    assert _first_match("/r/end/api/v1/namespaces/ns/pods/p/log") == (
        "/{run}/{at}/api/v1/namespaces/{namespace}/pods/{name}/log"
    )
