"""The committed schemas in contracts/ are exactly what the models generate."""

from __future__ import annotations

from ledgerlet_core.contracts.registry import EVENT_TYPES
from ledgerlet_services.app.contracts_gen import check_or_write, generate
from tests.conftest import ROOT


def test_committed_schemas_match_the_models() -> None:
    assert check_or_write(ROOT / "contracts", write=False) == []


def test_drift_is_detected(tmp_path: object) -> None:
    from pathlib import Path

    d = Path(str(tmp_path))
    assert check_or_write(d, write=True)  # everything missing at first
    assert check_or_write(d, write=False) == []
    victim = d / "events" / "decision" / "PodEvicted.v1.schema.json"
    victim.write_text(victim.read_text().replace('"ranking"', '"rankng"'))
    assert check_or_write(d, write=False) == ["events/decision/PodEvicted.v1.schema.json"]


def test_every_decision_type_in_the_spec_has_a_schema() -> None:
    spec_types = {
        "PodAdmitted",
        "PodRejected",
        "ObjectRejected",
        "PodScheduled",
        "PodUnschedulable",
        "PodNominated",
        "PodPreempted",
        "NodeConditionChanged",
        "NodeTaintAdded",
        "NodeTaintRemoved",
        "NodeReclaimed",
        "ImageGarbageCollected",
        "PodEvicted",
        "OOMKilled",
        "NodeShutdownStarted",
        "PodTerminated",
        "NodeShutdownCompleted",
        "PodForceDeleted",
        "VolumeDetached",
        "PodReplaced",
    }
    decisions = {n for n, et in EVENT_TYPES.items() if et.kind == "decision"}
    assert decisions == spec_types
    files = generate()
    for name in spec_types:
        assert f"events/decision/{name}.v1.schema.json" in files
    topics = (ROOT / "contracts" / "topics.md").read_text()
    from ledgerlet_services.runtime.topic_specs import ALL_TOPICS

    assert all(f"`{t}`" in topics for t in ALL_TOPICS)
