"""The seeds' worked examples (examples/*.yaml), each with the decisions it must produce."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES

from .run_helpers import run_file


async def run(name: str, tmp_path: Path) -> list[dict[str, Any]]:
    records, _ = await run_file(EXAMPLES / name, f"sqlite:///{tmp_path / 'x.db'}")
    return records


def of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == kind]


async def test_minimum_reclaim_keeps_evicting_until_threshold_plus_minimum(tmp_path: Path) -> None:
    records = await run("minimum-reclaim.yaml", tmp_path)
    evicted = of(records, "PodEvicted")
    assert [(r["t"], r["pod"]) for r in evicted] == [(110.0, "web/chatty"), (120.0, "batch/scratch")]
    first, second = evicted[0]["data"], evicted[1]["data"]
    assert first["observed"] == 1015 * 2**20  # under 1Gi
    assert second["observed"] == 1375 * 2**20  # over 1Gi, under 1Gi + 500Mi: still met
    seen = second["thresholdsMet"][0]
    assert (seen["threshold"], seen["quantity"], seen["minReclaim"]) == ("nodefs.available<1Gi", 2**30, 500 * 2**20)
    # with a dedicated imagefs, nodefs pressure has no node-level reclaim
    assert of(records, "NodeReclaimed") == [] and first.get("nodeReclaim", []) == []
    # ranking by logs + local volumes only (writable layers are on the imagefs)
    assert first["ranking"] == ["web/chatty", "batch/scratch", "web/quiet"]
    assert [(r["t"], r["data"]["status"]) for r in of(records, "NodeConditionChanged")] == [
        (110.0, "True"),
        (420.0, "False"),
    ]


async def test_system_reserved_node(tmp_path: Path) -> None:
    from ledgerlet_core.contracts.registry import decode_data
    from ledgerlet_core.scenario.load import load_scenario
    from ledgerlet_services.runtime.embedded import run_embedded
    from ledgerlet_store.store import open_store

    records = await run("system-reserved.yaml", tmp_path)
    [evicted] = of(records, "PodEvicted")
    # nobody exceeds a request, so priority alone decides: the lowest-priority Guaranteed pod
    assert evicted["pod"] == "prod/reports"
    assert evicted["data"]["ranking"] == ["prod/reports", "prod/api", "prod/ledger-db"]
    assert not any(e.get("exceedsRequest", False) for e in evicted["data"]["rankingDetails"])
    scenario = load_scenario((EXAMPLES / "system-reserved.yaml").read_text(), "s")
    store = await open_store(f"sqlite:///{tmp_path / 'y.db'}")
    try:
        result = await run_embedded(scenario, store)
        [status, *_] = await store.read_by_type(["NodeStatusUpdated"], run=result.run)
    finally:
        await store.close()
    # 10Gi - 1.5Gi system-reserved - 500Mi hard eviction = 8204Mi, for the scheduler
    assert decode_data(status.envelope).allocatable["memory"] == "8204Mi"


async def test_soft_eviction(tmp_path: Path) -> None:
    records = await run("soft-eviction.yaml", tmp_path)
    assert [(r["t"], r["data"]["status"]) for r in of(records, "NodeConditionChanged")] == [
        (60.0, "True"),
        (500.0, "False"),
    ]  # reported at once, held by the transition period
    [evicted] = of(records, "PodEvicted")  # one pod: the kubelet waits for it before acting again
    d = evicted["data"]
    assert (evicted["t"], evicted["pod"], d["threshold"], d["hard"]) == (
        200.0,
        "default/cache",
        "memory.available<1.5Gi",
        False,
    )
    assert d["thresholdsMet"][0]["firstObservedAt"] == 110.0  # the clock restarted after 1m40s
    assert d["thresholdsMet"][0]["gracePeriodSeconds"] == 90.0
    assert d["gracePeriodSeconds"] == 60  # min(evictionMaxPodGracePeriod 60, the pod's own 120)
    [terminated] = of(records, "PodTerminated")
    assert (terminated["t"], terminated["data"]["killedAt"]) == (220.0, 200.0)  # it took 20s to exit


async def test_oom_killer_and_memcg_notification(tmp_path: Path) -> None:
    records = await run("oom-killer.yaml", tmp_path)
    [evicted] = of(records, "PodEvicted")
    assert evicted["pod"] == "jobs/batch-memcg" and 26.9 < evicted["t"] < 27.0  # at the crossing, off the grid
    ooms = of(records, "OOMKilled")
    plain = [r for r in ooms if r["pod"] == "jobs/batch-plain"]
    assert plain[0]["data"]["scope"] == "node" and evicted["t"] < plain[0]["t"] < 28  # the kernel got there first
    assert plain[0]["data"]["oomScoreAdj"] == 1000
    assert not any(r["pod"] == "jobs/batch-memcg" for r in ooms)
    api = [r for r in ooms if r["pod"] == "web/api-plain"]
    assert api[0]["data"]["scope"] == "limit" and 150 < api[0]["t"] < 150.001
    assert api[0]["data"]["oomScoreAdj"] == 875  # Burstable: 1000 - 1000 * 1Gi / 8Gi
    gaps = [round(b["t"] - a["t"]) for a, b in itertools.pairwise(api)]
    assert gaps[:4] == [1, 10, 20, 40]  # restarted after 1s, then the kubelet's back-off
