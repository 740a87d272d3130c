"""The example scenarios, run embedded end to end: decisions asserted, logs validated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from tests.conftest import EXAMPLES, ROOT
from tests.golden.cases import cases, golden_path

from .run_helpers import normalized, run_file

CONTRACTS = ROOT / "contracts"


def validator() -> jsonschema.Draft202012Validator:
    resources = []
    for path in CONTRACTS.rglob("*.schema.json"):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    schema = json.loads((CONTRACTS / "decision-log.v1.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema, registry=Registry().with_resources(resources))


def brief(records: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    return [(r["t"], r["type"], r.get("pod", r.get("node", ""))) for r in records]


@pytest.mark.parametrize("name", sorted(cases()))
def test_every_golden_log_validates_against_the_spec_schema(name: str) -> None:
    """Every example's log (and every other frozen one): the golden test proves a run
    writes exactly these bytes, so validating the files validates the runs."""
    records = [json.loads(line) for line in golden_path(name).read_bytes().splitlines()]
    assert records
    v = validator()
    for r in records:
        v.validate(r)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))


async def test_memory_pressure_example(tmp_path: Path) -> None:
    records, result = await run_file(EXAMPLES / "memory-pressure.yaml", f"sqlite:///{tmp_path / 'm.db'}")
    assert brief(records) == [
        (240.0, "NodeConditionChanged", "worker-1"),
        (240.0, "PodEvicted", "default/cache"),
        (240.0, "PodTerminated", "default/cache"),
        (240.0, "NodeTaintAdded", "worker-1"),  # at the kubelet's next node status update
        (540.0, "NodeConditionChanged", "worker-1"),
        (540.0, "NodeTaintRemoved", "worker-1"),
        (580.0, "NodeConditionChanged", "worker-1"),
        (580.0, "PodEvicted", "default/api"),
        (580.0, "PodTerminated", "default/api"),
        (580.0, "NodeTaintAdded", "worker-1"),
    ]
    first, second = records[1]["data"], records[7]["data"]
    # the cache exceeds its request (0) and has the lowest priority; the static kube-proxy is critical
    assert first["signal"] == "memory.available" and first["threshold"] == "memory.available<500Mi"
    assert first["ranking"] == ["default/cache", "kube-system/kube-proxy-worker-1", "default/api", "default/db"]
    assert first["gracePeriodSeconds"] == 1 and first["observed"] < 500 * 2**20
    assert first["message"].startswith("The node was low on resource: memory. Threshold quantity: 500Mi, available: ")
    # then the api leaks past its request; the Guaranteed db stays under its request, ranked last
    assert second["ranking"] == ["kube-system/kube-proxy-worker-1", "default/api", "default/db"]
    assert second["skippedCritical"] == ["kube-system/kube-proxy-worker-1"]
    assert "Container api was using" in second["message"] and "request is 1Gi" in second["message"]
    cond = [(r["t"], r["data"]["status"]) for r in records if r["type"] == "NodeConditionChanged"]
    assert cond == [(240.0, "True"), (540.0, "False"), (580.0, "True")]  # 5m transition period
    terminated = records[2]["data"]
    assert terminated == {"reason": "Evicted", "gracePeriodSeconds": 1, "killedAt": 240.0}
    assert records[2]["causes"] == [records[1]["id"]]
    assert records[3]["data"] == {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
    assert result.events_stored > 100  # inputs, ticks, observations and decisions are all in the store


async def test_disk_pressure_fluentd_example_reproduces_the_post_mortem(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "disk-pressure-fluentd.yaml", f"sqlite:///{tmp_path / 'd.db'}")
    kinds = [(r["type"], r.get("pod", "")) for r in records]
    assert kinds[:4] == [
        ("NodeConditionChanged", ""),
        ("NodeReclaimed", ""),
        ("NodeReclaimed", ""),
        ("NodeTaintAdded", ""),
    ]
    evicted = [r for r in records if r["type"] == "PodEvicted"]
    assert [r["pod"] for r in evicted] == ["kube-system/fluentd-elasticsearch-wk8xc"]
    ev = evicted[0]["data"]
    # one root disk: the runtime's imagefs is the root disk, and imagefs.available<15% fires first
    assert ev["signal"] == "imagefs.available" and ev["threshold"] == "imagefs.available<15%"
    assert ev["resource"] == "ephemeral-storage" and ev["gracePeriodSeconds"] == 1
    assert ev["thresholdQuantity"] == 6120328640  # float32 15% of 40802189312
    assert ev["ranking"][0] == "kube-system/fluentd-elasticsearch-wk8xc"
    assert [a["action"] for a in ev["nodeReclaim"]] == ["GarbageCollectContainers", "DeleteUnusedImages"]
    # the DaemonSet replaces its pod; the kubelet, under DiskPressure, refuses every replacement,
    # and the controller backs off 1s, 2s, 4s, ... (failedPodsBackoff)
    replaced = [r for r in records if r["type"] == "PodReplaced"]
    assert replaced[0]["pod"] == "kube-system/fluentd-elasticsearch-wk8xc" and replaced[0]["t"] == 301.0
    assert replaced[0]["data"]["owner"] == "DaemonSet/fluentd-elasticsearch"
    rejected = [r for r in records if r["type"] == "PodRejected"]
    assert [r["pod"] for r in rejected] == [r["data"]["replacement"] for r in replaced]
    assert {(r["data"]["reason"], r["data"]["message"]) for r in rejected} == {
        ("Evicted", "The node had condition: [DiskPressure]. ")
    }
    assert [r["t"] for r in rejected][:8] == [301.0, 303.0, 307.0, 315.0, 331.0, 363.0, 427.0, 555.0]
    # the evicted pod's containers (and their logs) are removed as soon as it exits; its image,
    # no longer in use, goes at the next node-level reclaim
    after = [r for r in records if r["type"] == "NodeReclaimed" and r["t"] > evicted[0]["t"]]
    assert [(a["data"]["action"], a["data"].get("images")) for a in after] == [
        ("DeleteUnusedImages", ["quay.io/fluentd_elasticsearch/fluentd:v2.5.2"])
    ]
    conditions = [(r["t"], r["data"]["status"]) for r in records if r["type"] == "NodeConditionChanged"]
    assert conditions[0][1] == "True" and conditions[-1][1] == "True" and len(conditions) == 3
    # the periodic image GC, every 5m: at 25m the disk is at 97%, as the seed's kubelet log says
    gc = [r for r in records if r["type"] == "ImageGarbageCollected"]
    assert [r["t"] for r in gc] == [300.0, 900.0, 1200.0, 1500.0]
    assert gc[-1]["data"]["message"] == (
        "Disk usage on image filesystem is at 97% which is over the high threshold (85%). "
        "Trying to free 6582996172 bytes down to the low threshold (80%)."
    )
    assert gc[-1]["data"]["bytesFreed"] == 0 and "only found 0 bytes eligible" in gc[-1]["data"]["error"]


@pytest.mark.parametrize("name", ["memory-pressure.yaml", "disk-pressure-fluentd.yaml"])
async def test_same_scenario_twice_gives_the_same_decision_log(name: str, tmp_path: Path) -> None:
    a, _ = await run_file(EXAMPLES / name, f"sqlite:///{tmp_path / 'a.db'}")
    b, _ = await run_file(EXAMPLES / name, f"sqlite:///{tmp_path / 'b.db'}")
    assert normalized(a) == normalized(b)
    # with the same run id the logs are identical, ids included
    c, _ = await run_file(EXAMPLES / name, f"sqlite:///{tmp_path / 'c.db'}", run="fixed")
    d, _ = await run_file(EXAMPLES / name, f"sqlite:///{tmp_path / 'd.db'}", run="fixed")
    assert c == d


async def test_run_on_postgresql_matches_sqlite(tmp_path: Path, pg_database: str) -> None:
    a, _ = await run_file(EXAMPLES / "memory-pressure.yaml", f"sqlite:///{tmp_path / 'a.db'}", run="r")
    b, _ = await run_file(EXAMPLES / "memory-pressure.yaml", pg_database, run="r")
    assert a == b


async def test_derived_observations_are_stored_compact_unless_asked(tmp_path: Path) -> None:
    from ledgerlet_core.contracts.registry import decode_data
    from ledgerlet_core.scenario.load import load_scenario
    from ledgerlet_services.runtime.embedded import run_embedded
    from ledgerlet_store.store import open_store

    scenario = load_scenario((EXAMPLES / "memory-pressure.yaml").read_text(), "m")
    sizes = {}
    for full in (False, True):
        store = await open_store(f"sqlite:///{tmp_path / f'{full}.db'}")
        try:
            result = await run_embedded(scenario, store, full_observations=full)
            stored = await store.read_by_type(["NodeObserved"], run=result.run)
        finally:
            await store.close()
        obs = [decode_data(s.envelope) for s in stored]
        assert len(obs) == 73  # every 10 s from 0 to 12m
        assert all(o.pods_omitted is not full for o in obs)
        assert all(o.summary.node.memory.available_bytes is not None for o in obs)
        if full:  # every observation tells every pod's stats
            assert all(o.summary.pods and not o.pods_delta for o in obs)
            assert all(p.memory is not None for o in obs for p in o.summary.pods)
        else:
            assert not any(o.summary.pods or o.pods_delta or o.pods_changed or o.pods_gone for o in obs)
        sizes[full] = sum(len(bytes(s.envelope.data)) for s in stored)
        # the decisions do not depend on how observations are stored
        assert [d.envelope.type for d in result.decisions][:3] == [
            "NodeConditionChanged",
            "PodEvicted",
            "PodTerminated",
        ]
    assert sizes[False] < sizes[True]
