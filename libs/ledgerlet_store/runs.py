"""The run registry: which runs a store holds, where each is in its lifecycle, and which
one a reader means by a name it gives (``latest``, a full id, a prefix)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import sqlalchemy as sa

from ledgerlet_store.rows import aware
from ledgerlet_store.schema import events
from ledgerlet_store.sql_store import SqlEventStore

#: a run that has not ended and has stored nothing for this long was cut off, not slow
ABANDONED_AFTER: Final = timedelta(minutes=2)

COMPLETED: Final = "completed"
FAILED: Final = "failed"
RUNNING: Final = "running"
ABANDONED: Final = "abandoned"

#: how many runs an ambiguous prefix names in its error
_SHOWN: Final = 5


@dataclass(frozen=True, slots=True)
class RunState:
    """A run's place in its lifecycle: ``completed`` or ``failed`` (its ``RunEnded``
    says), else ``running`` or, with nothing stored for :data:`ABANDONED_AFTER`,
    ``abandoned`` (a killed run: what is stored is a prefix of it)."""

    run: str
    #: when its ScenarioStarted was recorded
    started_at: datetime
    status: str
    reason: str = ""

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED


class UnknownRun(LookupError):
    """No run, or more than one, answers to the name given."""


async def runs(store: SqlEventStore) -> list[tuple[str, datetime]]:
    """Runs in the store, newest first (by when their ScenarioStarted was recorded)."""
    q = (
        sa.select(events.c.run, events.c.recorded_at)
        .where(events.c.type == sa.literal("ScenarioStarted", literal_execute=True))
        .order_by(events.c.position.desc())
    )
    async with store.connect() as conn:
        return [(r.run, r.recorded_at) for r in await conn.execute(q)]


async def run_states(store: SqlEventStore, *, now: datetime | None = None) -> list[RunState]:
    """Every run with its lifecycle state, newest first (see :class:`RunState`)."""
    started = await runs(store)
    ended: dict[str, tuple[str, str]] = {}
    q = sa.select(events.c.run, events.c.data).where(events.c.type == sa.literal("RunEnded", literal_execute=True))
    async with store.connect() as conn:
        for row in await conn.execute(q):
            data = json.loads(row.data)
            if ended.get(row.run, ("", ""))[0] != COMPLETED:  # a resumed run's completion wins
                ended[row.run] = (data.get("outcome", FAILED), data.get("reason", ""))
        unended = [r for r, _ in started if r not in ended]
        newest: dict[str, datetime] = {}
        if unended:
            last = (
                sa.select(events.c.run, sa.func.max(events.c.recorded_at).label("at"))
                .where(events.c.run.in_(unended))
                .group_by(events.c.run)
            )
            newest = {row.run: aware(row.at) for row in await conn.execute(last)}
    now = now or datetime.now(UTC)
    out = []
    for run, started_at in started:
        if run in ended:
            status, reason = ended[run]
        elif now - newest.get(run, aware(started_at)) > ABANDONED_AFTER:
            status, reason = ABANDONED, "nothing stored since " + newest.get(run, aware(started_at)).isoformat()
        else:
            status, reason = RUNNING, ""
        out.append(RunState(run, aware(started_at), status, reason))
    return out


def pick_run(states: Sequence[RunState], run: str | None) -> RunState:
    """The run a reader means, from ``states`` (newest first): ``None`` or ``latest`` is
    the newest *completed* run; a full id is that run; otherwise a prefix that names one
    run only (as git and docker take ids: run ids are 32 hex digits)."""
    if not states:
        raise UnknownRun("the store holds no runs")
    if run in (None, "", "latest"):
        done = next((s for s in states if s.completed), None)
        if done is None:
            raise UnknownRun(f"the store holds no completed run (newest: {states[0].run}, {states[0].status})")
        return done
    assert run is not None
    exact = next((s for s in states if s.run == run), None)
    if exact is not None:
        return exact
    matches = [s for s in states if s.run.startswith(run)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(s.run for s in matches[:_SHOWN]) + (", ..." if len(matches) > _SHOWN else "")
        raise UnknownRun(f"{run!r} is the start of {len(matches)} runs ({shown}): give more of it")
    raise UnknownRun(f"no run {run!r} (newest: {states[0].run})")
