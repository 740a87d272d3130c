"""What every facade route depends on: the bearer token checked, then the run and the
instant its path names (``/{run}/{at}``), with the reader that shows the run there."""

from __future__ import annotations

import contextlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from starlette.requests import Request

from ledgerlet_services.audit.kube_api.clock import ShiftedReader, shift_to_now, shifted, split_clock
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant
from ledgerlet_services.audit.kube_api.mount import PREFIX
from ledgerlet_services.audit.kube_api.reader import KubeReader
from ledgerlet_services.audit.queries import Audit


@dataclass(frozen=True, slots=True)
class Facade:
    """The facade's settings (its app's ``state.facade``): the audit queries once the parent
    app has opened the store, and the bearer token, if any."""

    audit: Callable[[], Audit]
    token: str | None


def check_token(token: str | None, request: Request) -> None:
    """A request without the bearer ``token`` (when there is one) is a 401."""
    if not token:
        return
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
        raise ApiError(401, "Unauthorized", "Unauthorized")


async def authorised(request: Request) -> Facade:
    """The facade, once the request's bearer token is its own."""
    facade: Facade = request.app.state.facade
    check_token(facade.token, request)
    return facade


Authorised = Annotated[Facade, Depends(authorised)]


@dataclass(frozen=True, slots=True)
class AtInstant:
    """A run at an instant, as a request's path names it."""

    reader: KubeReader
    instant: Instant
    facade: Facade
    #: the path's prefix as the client wrote it (``/k8s/RUN/AT``)
    prefix: str

    async def headers(self) -> dict[str, str]:
        """A ``Warning`` header (kubectl prints it) when the run did not complete."""
        found = None
        with contextlib.suppress(Exception):
            found = await self.facade.audit().status(self.instant.run)
        if found in (None, "completed"):
            return {}
        run = self.instant.run
        return {"Warning": f'299 - "run {run} is {found}: it holds only what was stored before it stopped"'}


async def resolve(facade: Facade, run: str, at: str) -> tuple[KubeReader, Instant]:
    """The reader and the instant a path names (``...+now``: served as the moment of the request)."""
    reader = KubeReader(facade.audit())
    at_text, as_now = split_clock(at)
    instant = await reader.instant(run, at_text)
    if as_now:  # the instant served as the moment of the request (kube_api/clock.py)
        seconds = shift_to_now(instant, time.time())
        return ShiftedReader(facade.audit(), seconds), shifted(instant, seconds)
    return reader, instant


async def at_instant(request: Request, facade: Authorised) -> AtInstant:
    run, at = request.path_params["run"], request.path_params["at"]
    reader, instant = await resolve(facade, run, at)
    return AtInstant(reader, instant, facade, f"{PREFIX}/{run}/{at}")


At = Annotated[AtInstant, Depends(at_instant)]
