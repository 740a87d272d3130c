"""PriorityClasses: a class without ``value``, and deletes taking effect
(``plugin/pkg/admission/priority/admission_test.go``, ``validation_test.go``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.services.run_helpers import run_file

NODE = '{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "8", memory: 16Gi, pods: "110"}}}'


def scenario(objects: list[str], events: list[str]) -> str:
    lines = ["apiVersion: ledgerlet/v1", "kind: Scenario", "metadata: {name: classes}", "spec:", "  duration: 1m"]
    lines += ["  objects:", *(f"    - {o}" for o in [NODE, *objects])]
    lines += ["  events:", *(f"    - {e}" for e in events)]
    return "\n".join(lines) + "\n"


def pc(name: str, extra: str = "") -> str:
    return f"{{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {{name: {name}}}{extra}}}"


def pod(name: str, extra: str = "") -> str:
    return f"{{apiVersion: v1, kind: Pod, metadata: {{name: {name}}}, spec: {{containers: [{{name: c}}]{extra}}}}}"


async def run(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    records, _ = await run_file(path, f"sqlite:///{tmp_path / 's.db'}")
    return records


async def test_a_class_without_value_is_zero_and_an_update_leaving_it_out_is_refused(tmp_path: Path) -> None:
    text = scenario(
        [pc("zero"), pc("high", ", value: 1000")],
        [
            f"{{at: 5s, apply: {pod('p', ', priorityClassName: zero')}}}",
            f"{{at: 6s, apply: {pc('high')}}}",  # value left out: 0, a change of an immutable field
            f"{{at: 7s, apply: {pod('q', ', priorityClassName: high')}}}",
        ],
    )
    records = await run(tmp_path, text)
    admitted = {r["pod"]: r["data"]["priority"] for r in records if r["type"] == "PodAdmitted"}
    assert admitted == {"default/p": 0, "default/q": 1000}  # the update was refused: high keeps 1000
    (refused,) = [r["data"] for r in records if r["type"] == "ObjectRejected"]
    assert refused["message"] == (
        'PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be changed in an update.'
    )


async def test_deleting_the_default_class_leaves_the_lowest_remaining_default_then_none(tmp_path: Path) -> None:
    text = scenario(
        [pc("low", ", value: 10, globalDefault: true"), pc("mid", ", value: 50")],
        [
            f"{{at: 1s, apply: {pod('a')}}}",
            "{at: 2s, delete: {kind: PriorityClass, name: low}}",
            f"{{at: 3s, apply: {pod('b')}}}",  # no default left: priority 0, no class name
            f"{{at: 4s, apply: {pod('c', ', priorityClassName: low')}}}",  # names the deleted class
            "{at: 5s, delete: {kind: PriorityClass, name: system-node-critical}}",
            "{at: 6s, delete: {kind: PriorityClass, name: nope}}",
        ],
    )
    records = await run(tmp_path, text)
    admitted = {r["pod"]: r["data"] for r in records if r["type"] == "PodAdmitted"}
    assert (admitted["default/a"]["priority"], admitted["default/a"].get("priorityClassName")) == (10, "low")
    assert admitted["default/b"]["priority"] == 0 and not admitted["default/b"].get("priorityClassName")
    (refused_pod,) = [r["data"]["message"] for r in records if r["type"] == "PodRejected"]
    assert refused_pod == 'pods "c" is forbidden: no PriorityClass with name low was found'
    refused = [(r["data"]["reason"], r["data"]["message"]) for r in records if r["type"] == "ObjectRejected"]
    assert refused == [
        (
            "Forbidden",
            'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: '
            "this is a system priority class and cannot be deleted",
        ),
        ("NotFound", 'priorityclasses.scheduling.k8s.io "nope" not found'),
    ]


async def test_deleted_runtime_classes_and_quotas_no_longer_admit_or_limit(tmp_path: Path) -> None:
    rc = "{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: kata}, handler: kata}"
    quota = "{apiVersion: v1, kind: ResourceQuota, metadata: {name: q, namespace: default}, spec: {hard: {pods: '1'}}}"
    text = scenario(
        [rc, quota],
        [
            f"{{at: 1s, apply: {pod('a', ', runtimeClassName: kata')}}}",
            f"{{at: 2s, apply: {pod('b')}}}",  # over the quota
            "{at: 3s, delete: {kind: ResourceQuota, namespace: default, name: q}}",
            "{at: 3s, delete: {kind: RuntimeClass, name: kata}}",
            f"{{at: 4s, apply: {pod('c')}}}",  # no quota now
            f"{{at: 5s, apply: {pod('d', ', runtimeClassName: kata')}}}",  # the class is gone
        ],
    )
    records = await run(tmp_path, text)
    outcome = {r["pod"]: r["type"] for r in records if r["type"] in ("PodAdmitted", "PodRejected")}
    assert outcome == {
        "default/a": "PodAdmitted",
        "default/b": "PodRejected",
        "default/c": "PodAdmitted",
        "default/d": "PodRejected",
    }
    messages = [r["data"]["message"] for r in records if r["type"] == "PodRejected"]
    assert messages[1] == 'pods "d" is forbidden: pod rejected: RuntimeClass "kata" not found'


def test_a_delete_of_a_kind_that_is_not_modelled_is_an_input_error() -> None:
    import pytest

    from ledgerlet_core.model.errors import InputError
    from ledgerlet_core.scenario.load import load_scenario

    text = scenario([], ["{at: 1s, delete: {kind: PersistentVolume, name: pv-1}}"])
    with pytest.raises(InputError, match=r"events\[0\]: delete\.kind: deleting a PersistentVolume is not modelled"):
        load_scenario(text, "s.yaml")
