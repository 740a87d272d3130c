"""``ledgerlet import``: recorded kubelet /stats/summary documents and kubectl JSON
become a scenario that runs (open loop) and decides from the recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.recording import build_scenario, clean_object
from ledgerlet_services.app.cli import main

GI = 1 << 30
MI = 1 << 20


def _kubectl_dump() -> dict[str, Any]:
    """What ``kubectl get nodes,pods -A -o json`` prints (trimmed), managed fields and all."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "worker-1",
            "resourceVersion": "991",
            "managedFields": [{"manager": "kubelet"}],
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "40Gi"},
            "allocatable": {"cpu": "4", "memory": "7Gi", "pods": "110", "ephemeral-storage": "36Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["nginx"], "sizeBytes": 1}],
        },
    }

    def pod(name: str, memory_request: str | None) -> dict[str, Any]:
        resources = {"requests": {"memory": memory_request}} if memory_request else {}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            },
            "spec": {"nodeName": "worker-1", "containers": [{"name": "app", "image": "app:1", "resources": resources}]},
            "status": {"phase": "Running", "startTime": "2026-03-01T10:00:00Z", "qosClass": "Burstable",
                       "containerStatuses": [{"name": "app", "ready": True}]},
        }  # fmt: skip

    events = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x"}}
    return {"apiVersion": "v1", "kind": "List", "items": [node, pod("hog", None), pod("web", "1Gi"), events]}


def _summary(at: str, hog_ws: int, web_ws: int) -> dict[str, Any]:
    """A kubelet /stats/summary document (the fields the eviction manager reads)."""
    capacity = 8 * GI
    used = 1 * GI + hog_ws + web_ws

    def pod(name: str, ws: int) -> dict[str, Any]:
        return {
            "podRef": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "startTime": "2026-03-01T10:00:00Z",
            "containers": [{"name": "app", "startTime": "2026-03-01T10:00:00Z",
                            "memory": {"time": at, "workingSetBytes": ws}}],
            "memory": {"time": at, "workingSetBytes": ws},
        }  # fmt: skip

    return {
        "node": {
            "nodeName": "worker-1",
            "memory": {"time": at, "availableBytes": capacity - used, "workingSetBytes": used},
            "fs": {"time": at, "availableBytes": 20 * GI, "capacityBytes": 40 * GI, "usedBytes": 20 * GI,
                   "inodesFree": 2_000_000, "inodes": 2_621_440},
            "runtime": {"imageFs": {"time": at, "availableBytes": 20 * GI, "capacityBytes": 40 * GI,
                                    "usedBytes": 20 * GI, "inodesFree": 2_000_000, "inodes": 2_621_440}},
            "rlimit": {"time": at, "maxpid": 32768, "curproc": 400},
        },
        "pods": [pod("hog", hog_ws), pod("web", web_ws)],
    }  # fmt: skip


def test_clean_object_drops_what_the_api_server_added() -> None:
    node = clean_object(_kubectl_dump()["items"][0])
    assert "managedFields" not in node["metadata"] and "resourceVersion" not in node["metadata"]
    assert node["status"] == {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "40Gi"},
        "allocatable": {"cpu": "4", "memory": "7Gi", "pods": "110", "ephemeral-storage": "36Gi"},
        "images": [{"names": ["nginx"], "sizeBytes": 1}],  # ImageLocality scores by them
    }
    pod = clean_object(_kubectl_dump()["items"][1])
    assert "annotations" not in pod["metadata"]
    assert pod["status"] == {"phase": "Running", "startTime": "2026-03-01T10:00:00Z", "qosClass": "Burstable"}


def test_unknown_node_in_stats_names_the_file_and_field() -> None:
    summary = _summary("2026-03-01T10:05:00Z", 100 * MI, 100 * MI)
    summary["node"]["nodeName"] = "ghost"
    with pytest.raises(InputError) as err:
        build_scenario(name="x", objects=[("dump.json", _kubectl_dump())], summaries=[("ghost.json", summary)])
    assert err.value.file == "ghost.json" and err.value.field == "node.nodeName"


def test_imported_recording_runs_and_evicts_the_hog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "objects.json").write_text(json.dumps(_kubectl_dump()))
    stats = []
    for i, (at, hog) in enumerate(
        [("2026-03-01T10:05:00Z", 1 * GI), ("2026-03-01T10:05:10Z", 5 * GI), ("2026-03-01T10:05:20Z", int(5.9 * GI))]
    ):
        path = tmp_path / f"summary-{i}.json"
        path.write_text(json.dumps(_summary(at, hog, 900 * MI)))
        stats.append(path)
    (tmp_path / "configz.json").write_text(
        json.dumps({"kubeletconfig": {"evictionHard": {"memory.available": "500Mi"}, "syncFrequency": "1m"}})
    )
    out = tmp_path / "incident.yaml"
    args = ["import", "--objects", str(tmp_path / "objects.json"), "--kubelet-config", str(tmp_path / "configz.json")]
    for p in stats:
        args += ["--stats", str(p)]
    assert main([*args, "--name", "recorded-oom", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "Event x1" in said and "syncFrequency" in said
    decisions = tmp_path / "decisions.jsonl"
    store = f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["run", str(out), "--decisions", str(decisions), "--store", store, "--quiet"]) == 0
    records = [json.loads(line) for line in decisions.read_text().splitlines()]
    evicted = [r for r in records if r["type"] == "PodEvicted"]
    # at 10:05:20 memory.available = 8Gi - (1Gi + 5.9Gi + 900Mi) < 500Mi: the hog (no request) goes first
    assert [(r["pod"], r["t"], r["data"]["signal"]) for r in evicted] == [("default/hog", 20.0, "memory.available")]
    assert evicted[0]["data"]["ranking"] == ["default/hog", "default/web"]


def test_bad_json_is_refused_with_the_file_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "objects.json").write_text("{not json")
    out = tmp_path / "s.yaml"
    assert main(["import", "--objects", str(tmp_path / "objects.json"), "--out", str(out)]) == 2
    assert "objects.json" in capsys.readouterr().err
    assert not out.exists()
