"""The scenario JSON Schema (contracts/scenario.v1.schema.json) accepts every scenario
the project ships and refuses the shapes the loader refuses: the two cannot drift apart
unnoticed (the schema is also regenerated and compared by `ledgerlet contracts --check`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.documents import read_document
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.schema import scenario_schema

ROOT = Path(__file__).parents[2]
SHIPPED = sorted(
    [
        *ROOT.glob("examples/*.yaml"),
        *ROOT.glob("tests/golden/scenarios/*.yaml"),
        *ROOT.glob("tests/data/scenarios/*.yaml"),
    ]
)
VALIDATOR = jsonschema.Draft202012Validator(scenario_schema())


def test_the_schema_is_valid_and_committed() -> None:
    jsonschema.Draft202012Validator.check_schema(scenario_schema())
    committed = json.loads((ROOT / "contracts" / "scenario.v1.schema.json").read_text())
    assert committed == scenario_schema()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_scenario_is_valid(path: Path) -> None:
    doc = read_document(path.read_text(), str(path))
    assert [e.message for e in VALIDATOR.iter_errors(doc)] == []


def _base() -> dict[str, Any]:
    path = ROOT / "examples" / "memory-pressure.yaml"
    return dict(read_document(path.read_text(), str(path)))


def _broken(change: str) -> dict[str, Any]:
    doc = copy.deepcopy(_base())
    spec = doc["spec"]
    if change == "no duration":
        del spec["duration"]
    elif change == "no name":
        doc["metadata"] = {}
    elif change == "two actions":
        spec["events"] = [{"at": "10s", "powerOff": {"node": "worker-1"}, "powerOn": {"node": "worker-1"}}]
    elif change == "unknown action":
        spec["events"] = [{"at": "10s", "reboot": {"node": "worker-1"}}]
    elif change == "afterReclaim without stats":
        spec["events"] = [{"at": "10s", "powerOn": {"node": "worker-1"}, "afterReclaim": {}}]
    elif change == "unknown pod usage field":
        spec["usage"]["default/cache"]["cpu"] = "1"
    elif change == "unknown node usage field":
        spec["usage"]["node/worker-1"]["swap"] = "1Gi"
    elif change == "usage key without a slash":
        spec["usage"]["cache"] = {"memory": "1Gi"}
    elif change == "series point of three":
        spec["usage"]["default/cache"]["memory"] = [[0, "1Gi", 5]]
    elif change == "object without kind":
        del spec["objects"][0]["kind"]
    elif change == "image without size":
        spec["usage"]["node/worker-1"]["images"] = [{"name": "x"}]
    elif change == "wrong apiVersion":
        doc["apiVersion"] = "ledgerlet/v2"
    return doc


@pytest.mark.parametrize(
    "change",
    [
        "no duration",
        "no name",
        "two actions",
        "unknown action",
        "afterReclaim without stats",
        "unknown pod usage field",
        "unknown node usage field",
        "usage key without a slash",
        "series point of three",
        "object without kind",
        "image without size",
        "wrong apiVersion",
    ],
)
def test_what_the_loader_refuses_the_schema_refuses(change: str) -> None:
    doc = _broken(change)
    assert list(VALIDATOR.iter_errors(doc)), f"the schema accepts: {change}"
    with pytest.raises(InputError):
        load_scenario(json.dumps(doc), change)


def test_the_base_of_those_changes_is_valid_to_both() -> None:
    assert not list(VALIDATOR.iter_errors(_base()))
    load_scenario(json.dumps(_base()), "base")
