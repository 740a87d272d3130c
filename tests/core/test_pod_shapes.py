"""Pods checked once per shape (scenario/pod_shapes.py) are the pods the one-at-a-time
path builds, object for object, on every golden case (as YAML and as JSON), random fleets
and the bench's fleets; and an error in one pod of a shape is still that pod's."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from ledgerlet_core.model.codec import object_json
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario import load
from ledgerlet_core.scenario.pod_shapes import PodShapes
from tests.golden.cases import ROOT, cases
from tests.support.random_fleet import random_fleet


@contextmanager
def _one_at_a_time() -> Iterator[None]:
    original = PodShapes.pod
    PodShapes.pod = lambda self, raw, reference, uid: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        PodShapes.pod = original  # type: ignore[method-assign]


def _same_both_ways(text: str, source: str) -> None:
    shaped = load.load_scenario(text, source)
    with _one_at_a_time():
        alone = load.load_scenario(text, source)
    assert shaped.objects == alone.objects
    assert [object_json(o) for o in shaped.objects] == [object_json(o) for o in alone.objects]


@pytest.mark.parametrize("name", sorted(cases()))
def test_golden_cases_load_the_same_pods(name: str) -> None:
    text, source = cases()[name]()
    _same_both_ways(json.dumps(yaml.safe_load(text)), f"{source}.json")


def _bench_fleet() -> Any:
    spec = importlib.util.spec_from_file_location("bench_fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", range(4))
def test_random_and_bench_fleets_load_the_same_pods(seed: int) -> None:
    _same_both_ways(json.dumps(random_fleet(seed)), "random.json")
    shape = ("steady", "changing")[seed % 2]
    _same_both_ways(json.dumps(_bench_fleet().fleet(20, 15, duration="5m", shape=shape)), "fleet.json")


def test_a_bad_pod_of_a_shape_is_named_itself() -> None:
    doc = _bench_fleet().fleet(3, 4, duration="1m")
    pods = [o for o in doc["spec"]["objects"] if o["kind"] == "Pod"]
    pods[5]["metadata"]["name"] = "Not_A_Name"
    with pytest.raises(InputError) as err:
        load.load_scenario(json.dumps(doc), "fleet.json")
    assert "objects[9] Pod team-1/Not_A_Name: metadata.name" in str(err.value)
    pods[5]["metadata"]["name"] = pods[4]["metadata"]["name"]
    pods[5]["metadata"]["namespace"] = pods[4]["metadata"]["namespace"]
    with pytest.raises(InputError, match="duplicate object"):
        load.load_scenario(json.dumps(doc), "fleet.json")
