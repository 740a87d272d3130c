"""The run's instant served as *now*, so that kubectl's own clock arithmetic reads it.

kubectl measures some ages itself, from the timestamps it is given to the wall clock:
``describe``'s event ages, ``kubectl events``, ``Start Time``. Served as recorded, a run
from January read in November shows every such age as ``303d`` while ``get`` (whose AGE
the server computes, to the instant shown) shows ``20m``. So an instant segment ending in
``@now`` (``/k8s/RUN/5m@now/...``, what ``ledgerlet kubeconfig`` writes by default) serves
every timestamp moved by one whole number of seconds, the same for every object of the
answer: the instant shown becomes the moment of the request. Ages, durations and order
are then exact wherever kubectl computes them; the dates are not the recorded ones (the
segment without ``@now`` serves those: ``ledgerlet kubeconfig --clock recorded``).

Every RFC 3339 timestamp of an answer is moved, the ones the facade derives from virtual
time and the ones a recording carried (an imported pod's ``creationTimestamp``) alike.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final

from ledgerlet_services.audit.kube_api.meta import Instant, moment
from ledgerlet_services.audit.kube_api.reader import Change, Cursor, KubeReader, Query
from ledgerlet_services.audit.kube_api.resources import Resource
from ledgerlet_services.audit.queries import Audit

NOW_SUFFIX: Final = "@now"
_TIMESTAMP: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z")


def split_clock(segment: str) -> tuple[str, bool]:
    """The instant's text and whether it is served as now."""
    if segment.endswith(NOW_SUFFIX):
        return segment[: -len(NOW_SUFFIX)], True
    return segment, False


def shift_to_now(instant: Instant, now_unix: float) -> int:
    """Whole seconds that bring the instant shown to ``now_unix`` (or just before it: an
    age kubectl truncates to whole seconds then never reads one second short)."""
    return math.floor(now_unix - moment(instant.start, instant.t).timestamp())


def shifted(instant: Instant, seconds: int) -> Instant:
    return replace(instant, start=instant.start + timedelta(seconds=seconds))


def _moved(text: str, seconds: int) -> str:
    base = datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S") + timedelta(seconds=seconds)
    return base.strftime("%Y-%m-%dT%H:%M:%S") + text[19:]


def shift_times(value: Any, seconds: int) -> Any:
    """``value`` (an object as JSON) with every RFC 3339 UTC timestamp moved by ``seconds``."""
    if isinstance(value, dict):
        return {k: shift_times(v, seconds) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_times(v, seconds) for v in value]
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        return _moved(value, seconds)
    return value


class ShiftedReader(KubeReader):
    """A reader whose objects are built at the recorded instant and served moved by
    ``seconds``; the routes hand it the moved instant (:func:`shifted`)."""

    def __init__(self, audit: Audit, seconds: int) -> None:
        super().__init__(audit)
        self.seconds = seconds

    def _recorded(self, i: Instant) -> Instant:
        return shifted(i, -self.seconds)

    async def get(self, resource: Resource, i: Instant, namespace: str, name: str) -> dict[str, Any] | None:
        found = await super().get(resource, self._recorded(i), namespace, name)
        return None if found is None else shift_times(found, self.seconds)

    async def page(
        self, resource: Resource, i: Instant, q: Query, *, limit: int | None, token: str | None
    ) -> AsyncIterator[dict[str, Any] | str]:
        async for item in super().page(resource, self._recorded(i), q, limit=limit, token=token):
            yield shift_times(item, self.seconds) if isinstance(item, dict) else item

    async def changes(
        self, resource: Resource, i: Instant, after: Cursor
    ) -> AsyncIterator[tuple[Cursor, list[Change]]]:
        async for reached, found in super().changes(resource, self._recorded(i), after):
            yield (
                reached,
                [
                    replace(
                        ch,
                        obj=shift_times(ch.obj, self.seconds),
                        old=None if ch.old is None else shift_times(ch.old, self.seconds),
                    )
                    for ch in found
                ],
            )
