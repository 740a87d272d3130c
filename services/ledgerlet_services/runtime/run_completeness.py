"""What a distributed run must have stored before its driver may call it completed.

The driver waits, at every step, until every service group has committed all it reads,
and, at the end, until the recorder has; but "committed" only says a group moved on,
not that what it read reached the store. A 5,000-node run was once seen to end with
exit 0 and no decisions at all. So before ``drive`` stores ``RunEnded(completed)`` it
checks that every input, tick and end it published is in the store, and that every pod
the scenario creates was admitted or refused (a scheduler service that read the run but
served none of it would leave them unanswered); a run short of any is stored as failed,
with what is missing named, and ``drive`` exits 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Protocol

from ledgerlet_core.contracts.inputs import ObjectApplied
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.scenario.load import Scenario


class RunShortfall(RuntimeError):
    """The run ended without storing everything its driver published."""


class KnowsIds(Protocol):
    async def known(self, ids: Sequence[str]) -> set[str]: ...


#: ids named in a shortfall's message (the rest are counted)
NAMED = 3


async def unstored(store: KnowsIds, published: Sequence[str]) -> list[str]:
    """The ids of ``published`` the store does not hold, in the order they were published."""
    held = await store.known(published)
    return [i for i in dict.fromkeys(published) if i not in held]


def shortfall_reason(run: str, missing: Sequence[str], published: int) -> str:
    """Say what a run is short of, for the run's RunEnded and for the operator."""
    shown = ", ".join(missing[:NAMED]) + (f" and {len(missing) - NAMED:,} more" if len(missing) > NAMED else "")
    return (
        f"run {run}: {len(missing):,} of the {published:,} inputs and clock ticks the driver published "
        f"were not stored ({shown}): is the recorder running and writing to this store?"
    )


def pods_to_admit(scenario: Scenario) -> list[str]:
    """The pods the scenario's ``events`` create (``apply`` of a Pod that is not among its
    starting ``objects``) within its duration, in the order they are applied: each one the
    API server must admit or refuse (``PodAdmitted``, ``PodRejected``) during the run. The
    starting pods were admitted when the scenario was loaded; an apply of a pod already
    applied is an update, which nothing admits again."""
    initial = {o.key for o in scenario.objects if isinstance(o, Pod)}
    wanted: dict[str, None] = {}
    for e in scenario.events:
        data = e.data
        if e.at > scenario.duration or not isinstance(data, ObjectApplied) or data.object.get("kind") != "Pod":
            continue
        meta = data.object.get("metadata", {})
        key = object_key(meta.get("namespace"), meta.get("name", ""))
        if key not in initial:
            wanted[key] = None
    return list(wanted)


#: the decisions that answer a pod's creation (a kubelet's refusal comes after an admission)
ANSWERS: Final = frozenset({"PodAdmitted", "PodRejected"})


def unadmitted(decisions: Iterable[tuple[str, str | None]], pods: Sequence[str]) -> list[str]:
    """Those of ``pods`` that none of ``decisions`` (type, pod) admits or refuses."""
    answered = {pod for kind, pod in decisions if kind in ANSWERS}
    return [p for p in pods if p not in answered]


def unadmitted_reason(run: str, missing: Sequence[str], wanted: int) -> str:
    """Say which pods a run never admitted, for the run's RunEnded and for the operator."""
    shown = ", ".join(missing[:NAMED]) + (f" and {len(missing) - NAMED:,} more" if len(missing) > NAMED else "")
    return (
        f"run {run}: {len(missing):,} of the {wanted:,} pods the scenario creates were never admitted or "
        f"refused ({shown}): is the scheduler service (it runs the API server's admission) running and "
        "serving this run?"
    )
