"""Which runs of a store hold a pod: what to say when the run a command chose does not.

A store holds many runs and a read command picks the newest completed one by default, so
a pod typed from the README (or from an incident) is often in another run than the one
chosen. Instead of a bare "no pod", the answer names the runs that do hold it, and how to
pick one (``--run``, ``ledgerlet runs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ledgerlet_services.audit.queries import Audit

#: the newest runs searched for the pod (a store of thousands of runs is not scanned whole)
MAX_RUNS_SEARCHED: Final = 50
#: the runs named in the hint
MAX_NAMED: Final = 5


@dataclass(frozen=True, slots=True)
class Holder:
    run: str
    name: str
    status: str
    #: the pod's full key in that run (``namespace/name``)
    pod: str


async def runs_holding(audit: Audit, pod: str, *, besides: str | None = None) -> list[Holder]:
    """The runs (newest first, at most :data:`MAX_RUNS_SEARCHED` searched) other than
    ``besides`` that hold ``pod``: ``namespace/name``, or a bare name in any namespace."""
    namespace, _, name = pod.rpartition("/")
    found = []
    for info in (await audit.runs())[:MAX_RUNS_SEARCHED]:
        if info.run == besides:
            continue
        keys = await audit.store.pods_named(info.run, name)
        key = next((k for k in keys if not namespace or k == pod), None)
        if key is not None:
            found.append(Holder(info.run, info.name, info.status, key))
    return found


def hint(pod: str, holders: list[Holder], command: str) -> str:
    """What follows "no pod ... in run R": the runs that hold it and how to choose one."""
    if not holders:
        return f"; no other run of the newest {MAX_RUNS_SEARCHED} holds it either (ledgerlet runs lists the runs)"
    named = ", ".join(f"{h.run} ({h.name}, {h.status})" for h in holders[:MAX_NAMED])
    more = f" and {len(holders) - MAX_NAMED} more" if len(holders) > MAX_NAMED else ""
    first = holders[0]
    return (
        f"; it is in run{'s' if len(holders) > 1 else ''} {named}{more}: "
        f"ledgerlet {command} {first.pod} --run {first.run[:12]} (ledgerlet runs lists the runs)"
    )
