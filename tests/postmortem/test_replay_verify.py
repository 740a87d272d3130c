"""``ledgerlet replay --verify``: every stored decision re-derived from the stored inputs;
a tampered decision and a tampered input are both caught."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from ledgerlet_core.postmortem.compare import Mismatch
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import replay_run
from ledgerlet_store.schema import events
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.postmortem.conftest import EVICTED, RUN

pytestmark = pytest.mark.slow


async def verify_run(store: SqlEventStore, run: str) -> list[Mismatch]:
    return (await replay_run(store, run)).mismatches()


async def _update(dsn: str, where: sa.ColumnElement[bool], **values: object) -> int:
    async with await open_store(dsn) as store, store.engine.begin() as conn:
        result = await conn.execute(sa.update(events).where(where).values(**values))
        return int(result.rowcount)


async def test_untouched_run_verifies(recorded: str) -> None:
    async with await open_store(recorded) as store:
        replay = await replay_run(store, RUN)
        total = len(await store.read_run(RUN))  # (as readers see them: a batch's members each)
    assert replay.mismatches() == [], [m.describe() for m in replay.mismatches()[:5]]
    assert replay.stored_events == total > 800
    assert replay.compared == total - replay.recorded.input_events - 1  # all but the inputs and RunEnded


async def test_tampered_decision_is_caught(recorded: str) -> None:
    async with await open_store(recorded) as store:
        evicted = (await store.read_by_type(["PodEvicted"], run=RUN))[0].envelope
    data = json.loads(bytes(evicted.data))
    data["gracePeriodSeconds"] = 30  # someone "fixes" the record after the fact
    assert await _update(recorded, events.c.event_id == evicted.id, data=json.dumps(data)) == 1
    async with await open_store(recorded) as store:
        mismatches = await verify_run(store, RUN)
    assert [(m.kind, m.id, m.fields) for m in mismatches] == [("changed", evicted.id, ("data",))]
    assert "gracePeriodSeconds" in mismatches[0].describe()


async def test_tampered_input_is_caught(recorded: str) -> None:
    """fluentd's declared log storm removed from the stored inputs: the eviction no longer follows."""
    async with await open_store(recorded) as store:
        usage = [
            e.envelope
            for e in await store.read_by_type(["UsageDeclared"], run=RUN)
            if json.loads(bytes(e.envelope.data))["key"] == "kube-system/DaemonSet/fluentd-elasticsearch"
        ]
    assert usage
    target = usage[0]
    data = json.loads(bytes(target.data))
    data["usage"] = {k: v for k, v in data["usage"].items() if k not in ("logs", "rootfs", "volumes")}
    assert await _update(recorded, events.c.event_id == target.id, data=json.dumps(data)) == 1
    async with await open_store(recorded) as store:
        mismatches = await verify_run(store, RUN)
    assert mismatches
    gone = {(m.kind, m.type, m.pod) for m in mismatches}
    assert ("missing", "PodEvicted", EVICTED) in gone or ("changed", "PodEvicted", EVICTED) in gone


async def test_deleted_and_invented_decisions_are_caught(recorded: str) -> None:
    async with await open_store(recorded) as store, store.engine.begin() as conn:
        victim = (await store.read_by_type(["NodeReclaimed"], run=RUN))[0].envelope
        await conn.execute(sa.delete(events).where(events.c.event_id == victim.id))
        await conn.execute(
            sa.update(events)
            .where(events.c.event_id == (await store.read_by_type(["NodeTaintAdded"], run=RUN))[0].envelope.id)
            .values(event_id="00000000-0000-0000-0000-000000000000")
        )
    async with await open_store(recorded) as store:
        mismatches = await verify_run(store, RUN)
    kinds = sorted((m.kind, m.type) for m in mismatches)
    assert kinds == [("missing", "NodeTaintAdded"), ("unexpected", "NodeReclaimed"), ("unexpected", "NodeTaintAdded")]


def test_cli_exit_codes(recorded: str, capsys: object) -> None:
    assert main(["replay", "--store", recorded, "--verify"]) == 0
    import asyncio

    async def tamper() -> None:
        async with await open_store(recorded) as store:
            evicted = (await store.read_by_type(["PodEvicted"], run=RUN))[0].envelope
        data = json.loads(bytes(evicted.data))
        data["ranking"] = list(reversed(data["ranking"]))
        await _update(recorded, events.c.event_id == evicted.id, data=json.dumps(data))

    asyncio.run(tamper())
    assert main(["replay", "--store", recorded, "--run", RUN, "--verify"]) == 1
    assert main(["replay", "--store", recorded, "--run", "no-such-run", "--verify"]) == 2


async def test_stored_rows_are_compared_field_by_field(recorded: str) -> None:
    """A full verification compares each stored row as it is (ledgerlet_store.rows.StoredRow);
    a row that differs in any compared column is told by field, one that only spells the
    same event otherwise (JSON spaced out) is not a mismatch."""
    async with await open_store(recorded) as store:
        evicted = (await store.read_by_type(["PodEvicted"], run=RUN))[0].envelope
        taint = (await store.read_by_type(["NodeTaintAdded"], run=RUN))[0].envelope
        status = (await store.read_by_type(["NodeStatusUpdated"], run=RUN))[0].envelope
    assert await _update(recorded, events.c.event_id == evicted.id, causes="[]", pod="kube-system/other") == 1
    order = ".".join(f"{i:010d}" for i in [*taint.order[:-1], taint.order[-1] + 1])
    assert await _update(recorded, events.c.event_id == taint.id, order_key=order) == 1
    spaced = json.dumps(json.loads(bytes(status.data)), indent=1)
    assert await _update(recorded, events.c.event_id == status.id, data=spaced, causes=json.dumps(status.causes)) == 1
    async with await open_store(recorded) as store:
        mismatches = await verify_run(store, RUN)
    assert [(m.kind, m.id, m.fields) for m in mismatches] == sorted(
        [("changed", evicted.id, ("pod", "causes")), ("changed", taint.id, ("order",))],
        key=lambda m: next(e.t for e in (evicted, taint) if e.id == m[1]),
    )


async def test_a_tampered_observation_in_a_stored_batch_is_told_by_its_own_id(recorded: str) -> None:
    """A tick's observations are stored as one row: a value changed in it is the one
    observation that differs, by its own id, not the whole tick."""
    from ledgerlet_core.contracts.observed import OBSERVED_BATCH, observation_members

    async with await open_store(recorded) as store:
        rows = [s async for s in store.iter_run(RUN, members=False, kinds=["internal"])]
    batch = next(s.envelope for s in rows if s.envelope.type == OBSERVED_BATCH and s.envelope.t > 0)
    data = json.loads(bytes(batch.data))
    data["memAvailable"][-1] -= 1
    assert await _update(recorded, events.c.event_id == batch.id, data=json.dumps(data)) == 1
    async with await open_store(recorded) as store:
        mismatches = await verify_run(store, RUN)
    last = observation_members(batch)[-1]
    assert [(m.kind, m.type, m.id, m.fields) for m in mismatches] == [("changed", "NodeObserved", last.id, ("data",))]
