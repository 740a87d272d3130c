"""The scheduler's examples end to end (embedded): admission, placement, preemption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES, ROOT
from tests.services.run_helpers import run_file


def of(records: list[dict[str, Any]], pod: str) -> list[tuple[float, str]]:
    return [(r["t"], r["type"]) for r in records if r.get("pod") == pod]


async def test_kata_fc_pod_overhead_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "pod-overhead-kata-fc.yaml", f"sqlite:///{tmp_path / 'k.db'}")
    by = {(r["type"], r["pod"]): r["data"] for r in records if "pod" in r}
    assert by[("PodAdmitted", "default/test-pod")]["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert by[("PodScheduled", "default/test-pod")]["requests"] == {"cpu": "2250m", "memory": "320Mi"}
    assert ("PodAdmitted", "default/preset-same") in by  # an equal pre-set overhead is accepted
    assert "doesn't match RuntimeClass's defined Overhead" in by[("PodRejected", "default/preset-other")]["message"]
    assert 'RuntimeClass "gvisor" not found' in by[("PodRejected", "default/no-such-runtime")]["message"]
    # 1 CPU + 250m overhead twice is over the 2-CPU quota: the overhead is charged
    assert ("PodScheduled", "sandbox/sandboxed-1") in by
    assert by[("PodRejected", "sandbox/sandboxed-2")]["message"].endswith(
        "exceeded quota: compute, requested: requests.cpu=1250m, used: requests.cpu=1250m, limited: requests.cpu=2"
    )


async def test_preemption_with_pdb_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "preemption-with-pdb.yaml", f"sqlite:///{tmp_path / 'p.db'}")
    nominated = [r for r in records if r["type"] == "PodNominated"]
    first, second = nominated
    assert first["pod"] == "default/web-1" and first["node"] == "n2"
    assert first["data"]["victims"] == ["default/batch-1", "default/batch-2", "default/batch-3"]
    assert first["data"]["decidedBy"] == "fewest PDB violations"
    assert {c["node"]: c.get("pdbViolations", 0) for c in first["data"]["candidates"]} == {"n1": 3, "n2": 0}
    preempted = [r for r in records if r["type"] == "PodPreempted" and r["data"]["preemptor"] == "default/web-1"]
    assert [(r["pod"], r["data"]["gracePeriodSeconds"]) for r in preempted] == [
        (f"default/batch-{i}", 30) for i in (1, 2, 3)
    ]
    # the victims exit after 10 s (their own reaction to SIGTERM, inside the 30 s grace), then it binds
    assert of(records, "default/batch-1")[-1] == (20.0, "PodTerminated")
    assert (20.0, "PodScheduled") in of(records, "default/web-1")
    scheduled = next(r for r in records if r["type"] == "PodScheduled" and r["pod"] == "default/web-1")
    assert scheduled["node"] == "n2" and scheduled["data"]["why"] == "its nominated node fits"
    # PDBs are best effort: when only n1 can help, its protected pods are preempted
    assert second["node"] == "n1" and second["data"]["pdbViolations"] == 3
    assert all(r["data"]["violatesPdb"] for r in records if r["type"] == "PodPreempted" and r["node"] == "n1")
    assert "default/batch-0" not in {r.get("pod") for r in records}  # reprieved


async def test_non_preempting_job_example(tmp_path: Path) -> None:
    records, _ = await run_file(EXAMPLES / "non-preempting-job.yaml", f"sqlite:///{tmp_path / 'n.db'}")
    job = next(r["pod"] for r in records if r.get("pod", "").startswith("default/training-"))
    first = next(r for r in records if r["pod"] == job and r["type"] == "PodUnschedulable")
    assert first["data"]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    assert not any(r["type"] == "PodPreempted" for r in records)
    # the room freed at 30 s goes to the job (priority 1000000), queued after the report pod (100)
    assert (30.0, "PodScheduled") in of(records, job)
    assert of(records, "default/report")[-1] == (30.0, "PodUnschedulable")
    rejected = {r["data"]["name"]: r["data"] for r in records if r["type"] == "ObjectRejected"}
    assert rejected["another-default"]["reason"] == "Forbidden"
    assert rejected["default-low"]["message"].endswith("value: Forbidden: may not be changed in an update.")
    # the spec's required PodAdmitted fields, overhead even when there is none
    report = next(r["data"] for r in records if r.get("pod") == "default/report" and r["type"] == "PodAdmitted")
    assert report["priority"] == 100 and report["qosClass"] == "Burstable" and report["overhead"] == {}
    typo = next(r for r in records if r["pod"] == "default/typo")
    assert typo["type"] == "PodRejected" and "no PriorityClass with name high-prio was found" in typo["data"]["message"]


async def test_a_controller_created_pod_is_admitted_by_the_api_server_alone(tmp_path: Path) -> None:
    """Regression: the controller manager kept its own PriorityClasses, the refused ones
    included, and named the refused second global default on the pods it created; the
    API server then refused every replica. Upstream admits it with the one default that
    exists (``plugin/pkg/admission/priority/admission.go: getDefaultPriorityClass``)."""
    path = ROOT / "tests/golden/scenarios/refused-priority-classes-then-a-replicaset.yaml"
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 'r.db'}")
    late = [r for r in records if r.get("pod", "").startswith("default/late-")]
    assert [r["type"] for r in late] == ["PodAdmitted", "PodUnschedulable", "PodUnschedulable"]  # waits for room
    assert late[0]["data"]["priorityClassName"] == "default-low" and late[0]["data"]["priority"] == 100
    rejected = [r["data"]["message"] for r in records if r["type"] == "ObjectRejected"]
    assert any("another-default" in m for m in rejected)  # the class itself is still refused
