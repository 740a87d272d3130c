"""One resource request once its run and instant are known, and the verbs it may be:
get (``getting``), list (``listing``) and watch (``watching``); every write is refused,
a review is answered (``reviews``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant
from ledgerlet_services.audit.kube_api.reader import KubeReader
from ledgerlet_services.audit.kube_api.target import Target
from ledgerlet_services.audit.queries import Audit


@dataclass(frozen=True, slots=True)
class Asked:
    """A resource request: what it names, at which instant, read through which reader."""

    request: Request
    reader: KubeReader
    instant: Instant
    target: Target
    #: headers every answer carries (a run that did not complete says so)
    headers: dict[str, str]
    audit: Callable[[], Audit]


def not_served(target: Target) -> ApiError:
    """A subresource other than ``status``: 403, as the API server answers one it will not serve."""
    name, resource = target.name, target.resource
    return ApiError(
        403,
        "Forbidden",
        f'{resource.name} "{name}" is forbidden: {resource.name}/{target.subresource} is not served: '
        "this API replays a stored run (no logs, exec, proxy or evictions; get, list and watch only)",
        details={"name": name, "kind": resource.name},
    )


def review_only(resource: res.Resource) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"{resource.name} are created (POST) and answered, never stored or read back",
        headers={"Allow": "POST"},
    )
