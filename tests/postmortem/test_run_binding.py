"""A run id names one run of one scenario: completing a stored run with ``--run-id``
checks that it is the scenario (and the options) the run was started with. Another one
was taken, and the run mixed both (shown ``completed``; ``replay --verify`` found
thousands of mismatches). Run ids are ones the store can keep on every backend."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledgerlet_store.schema import events, observation_members
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support.cli import Command, Result

MEMORY = EXAMPLES / "memory-pressure.yaml"
SOFT = EXAMPLES / "soft-eviction.yaml"


def run(ledgerlet: Command, scenario: Path, dsn: str, tmp_path: Path, *extra: str, log: str = "d.jsonl") -> Result:
    return ledgerlet(
        "run", str(scenario), "--decisions", str(tmp_path / log), "--store", dsn, "--quiet", *extra, cwd=tmp_path
    )


async def _count(dsn: str) -> int:
    async with await open_store(dsn, migrate=False) as store:
        return await store.count()


async def _cut_off(dsn: str, run: str) -> None:
    """Make ``run`` look killed: its end, and everything after its first minute, gone
    (with the index rows of the batches gone, as a store that never took them holds none)."""
    async with await open_store(dsn, migrate=False) as store, store.engine.begin() as conn:
        late = sa.select(events.c.position).where(events.c.run == run, events.c.t > 60_000_000_000)
        await conn.execute(sa.delete(observation_members).where(observation_members.c.position.in_(late)))
        await conn.execute(sa.delete(events).where(events.c.run == run, events.c.t > 60_000_000_000))
        await conn.execute(sa.delete(events).where(events.c.run == run, events.c.type == "RunEnded"))


def single(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("ended", ["completed", "killed"])
def test_another_scenario_under_a_stored_run_id_is_refused_naming_both(
    ended: str, ledgerlet: Command, store_dsn: str, tmp_path: Path
) -> None:
    assert run(ledgerlet, MEMORY, store_dsn, tmp_path, "--run-id", "r1").returncode == 0
    if ended == "killed":
        asyncio.run(_cut_off(store_dsn, "r1"))
    stored = asyncio.run(_count(store_dsn))
    res = run(ledgerlet, SOFT, store_dsn, tmp_path, "--run-id", "r1", log="other.jsonl")
    assert res.returncode == 2, res.stdout + res.stderr
    said = single(res.stderr)
    assert f"was started from {MEMORY} (sha256 " in said and f"not {SOFT} (sha256 " in said, said
    assert "Give another --run-id" in said and "Traceback" not in said
    assert asyncio.run(_count(store_dsn)) == stored  # nothing of the other scenario stored
    assert not (tmp_path / "other.jsonl").exists()
    if ended == "killed":  # the right scenario still completes it
        assert run(ledgerlet, MEMORY, store_dsn, tmp_path, "--run-id", "r1", log="resumed.jsonl").returncode == 0
    verify = ledgerlet("replay", "--verify", "--run", "r1", "--store", store_dsn, cwd=tmp_path)
    assert verify.returncode == 0 and "verified" in verify.stdout, verify.stdout + verify.stderr


def test_the_same_scenario_with_other_options_is_refused(ledgerlet: Command, tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    assert run(ledgerlet, MEMORY, dsn, tmp_path, "--run-id", "r1").returncode == 0
    by_node = run(ledgerlet, MEMORY, dsn, tmp_path, "--run-id", "r1", "--order-by-node")
    assert by_node.returncode == 2 and "was started without --order-by-node" in single(by_node.stderr)
    full = run(ledgerlet, MEMORY, dsn, tmp_path, "--run-id", "r1", "--store-observations", "full")
    assert full.returncode == 2 and "was started with --store-observations node" in single(full.stderr)
    same = run(ledgerlet, MEMORY, dsn, tmp_path, "--run-id", "r1", log="again.jsonl")  # a copy of the file is the same
    assert same.returncode == 0, same.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "d.jsonl").read_bytes()


SLOW = pytest.mark.slow
RUN_IDS = [
    ("x" * 65, "65 characters; a run id has at most 64"),
    ("a/b", "a run id is letters, digits"),
    ("-rf", "a run id is letters, digits"),
    ("caf\u00e9", "a run id is letters, digits"),
    ("latest", "the newest completed run"),
]


@pytest.mark.parametrize(
    ("store_dsn", "run_id", "said"),
    [
        *[pytest.param("sqlite", run_id, said) for run_id, said in RUN_IDS],
        # on PostgreSQL the one it failed mid-run with in the quick tier, every one in make test
        *[pytest.param("postgresql", *case, marks=() if i == 0 else SLOW) for i, case in enumerate(RUN_IDS)],
    ],
    indirect=["store_dsn"],
)
def test_run_ids_the_store_cannot_keep_are_refused_before_the_run(
    run_id: str, said: str, ledgerlet: Command, store_dsn: str, tmp_path: Path
) -> None:
    """Over 64 characters it failed mid-run, on PostgreSQL only."""
    res = run(ledgerlet, MEMORY, store_dsn, tmp_path, f"--run-id={run_id}")
    assert res.returncode == 2 and said in single(res.stderr), res.stderr
    assert not (tmp_path / "d.jsonl").exists()
    if store_dsn.startswith("sqlite"):
        assert not (tmp_path / "events.db").exists()
    assert run(ledgerlet, MEMORY, store_dsn, tmp_path, "--run-id", "x" * 64).returncode == 0  # the longest it keeps


def test_whatif_save_as_is_a_run_id_too(ledgerlet: Command, tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    assert run(ledgerlet, MEMORY, dsn, tmp_path, "--run-id", "r1").returncode == 0
    res = ledgerlet(
        "whatif", "--store", dsn, "--set", "evictionHard.memory.available=1Gi", "--save-as", "y" * 65, cwd=tmp_path
    )
    assert res.returncode == 2 and "--save-as: 65 characters" in single(res.stderr), res.stderr
