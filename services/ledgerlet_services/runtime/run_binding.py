"""A run id names one run of one scenario under one set of run options.

``--run-id`` of a run already in the store completes that run: what is stored is skipped
by id and the rest is stored. Given another scenario, the run went on to mix both (it
was shown ``completed``; ``replay --verify`` then found thousands of mismatches, and its
decision log held both scenarios' decisions). So before anything is fed, the stored
run's ``ScenarioStarted`` is compared with this one: the scenario's digest (its text,
byte for byte), how its events are numbered (``--order-by-node``) and, once the run has
stored an observation, how observations are stored (``--store-observations``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, decode_observed
from ledgerlet_core.contracts.registry import INTERNAL, decode_data
from ledgerlet_core.scenario.load import Scenario
from ledgerlet_store.sql_store import SqlEventStore


class RunMismatch(Exception):
    """The run id names a stored run of another scenario, or with other options."""


@dataclass(frozen=True, slots=True)
class StoredStart:
    """What a stored run was started with."""

    started: ev.ScenarioStarted
    #: whether its derived observations were stored whole (None: none stored yet)
    full_observations: bool | None


#: how many of a run's first internal events are looked through for an observation
_LOOKED_FOR: int = 5000


async def observations_stored_whole(store: SqlEventStore, run: str) -> bool | None:
    """Whether ``run`` stored its derived observations whole (``--store-observations
    full``), from the first closed-loop one it stored; None if it stored none."""
    looked = 0
    async for stored in store.iter_run(run, batch=1000, kinds=(INTERNAL,), members=False):
        data = bytes(stored.envelope.data)
        if stored.envelope.type == OBSERVED_BATCH:  # (a tick's observations together say it)
            return decode_observed(data).whole
        if stored.envelope.type == "NodeObserved" and b'"source":"usage"' in data:
            return b'"podsOmitted"' not in data
        looked += 1
        if looked >= _LOOKED_FOR:  # (the first pass of a closed-loop node comes at once: there are none)
            return None
    return None


async def stored_start(store: SqlEventStore, run: str) -> StoredStart | None:
    """How ``run`` was started, if the store holds it."""
    found = await store.read_by_type(["ScenarioStarted"], run=run, limit=1)
    if not found:
        return None
    started = decode_data(found[0].envelope)
    assert isinstance(started, ev.ScenarioStarted)
    return StoredStart(started, await observations_stored_whole(store, run))


def _named(source: str, digest: str) -> str:
    return f"{source} (sha256 {digest[:12]})"


async def check_run_binding(
    store: SqlEventStore, run: str, scenario: Scenario, *, full_observations: bool | None = None
) -> None:
    """Refuse (:class:`RunMismatch`) to complete ``run`` with another scenario or other
    options than it was started with; a run the store does not hold is a new one.
    ``full_observations`` None: not this process's choice (the stack's recorder makes it)."""
    stored = await stored_start(store, run)
    if stored is None:
        return
    was = stored.started
    where = f"run {run} in {store.describe()}"
    if was.digest != scenario.digest:
        raise RunMismatch(
            f"{where} was started from {_named(was.source, was.digest)}, not "
            f"{_named(scenario.source, scenario.digest)}: a run id names one run of one scenario. "
            f"Give another --run-id, or {was.source} as it was to complete run {run}."
        )
    if was.order_scheme != scenario.order_scheme:
        option = "with --order-by-node" if was.order_scheme else "without --order-by-node"
        raise RunMismatch(f"{where} was started {option}: complete it the same way, or give another --run-id")
    if None not in (stored.full_observations, full_observations) and stored.full_observations != full_observations:
        option = "full" if stored.full_observations else "node"
        raise RunMismatch(
            f"{where} was started with --store-observations {option}: complete it the same way, "
            "or give another --run-id"
        )
