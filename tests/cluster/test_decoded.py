"""Objects decoded once per process: what the loops read is what the input carries.

The embedded run hands the loops the scenario loader's own nodes and pods
(``Decoded.seed``) instead of decoding them from the inputs again, and a loop in a
process of its own decodes them from the JSON the input carries. Both must be the same
value, or the embedded run and the distributed stack would decide differently.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import msgspec
import pytest
import yaml

from ledgerlet_core.cluster.decoded import Decoded
from ledgerlet_core.contracts.batch import expand_all
from ledgerlet_core.contracts.inputs import decode_lazy_applied
from ledgerlet_core.model.k8s.objects import AnyObject, Node, Pod
from ledgerlet_core.scenario.feed import scenario_feed
from ledgerlet_core.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted([*ROOT.glob("examples/*.yaml"), *ROOT.glob("tests/golden/scenarios/*.yaml")])


def _fleet() -> str:
    spec = importlib.util.spec_from_file_location("fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return yaml.safe_dump(module.fleet(3, 20, duration="1m"))


@pytest.mark.parametrize("source", [*SCENARIOS, "fleet"], ids=lambda p: getattr(p, "stem", str(p)))
def test_a_loaded_object_is_what_a_loop_decodes_from_its_input(source: Path | str) -> None:
    text = _fleet() if source == "fleet" else Path(source).read_text()
    scenario = load_scenario(text, str(source))
    built: dict[str, AnyObject] = {}
    feed = list(expand_all(scenario_feed(scenario, "r", built.__setitem__)))
    checked = 0
    for env in feed:
        obj = built.get(env.id)
        if not isinstance(obj, Node | Pod):
            continue
        raw = decode_lazy_applied(env.data).object
        decoded = Decoded().object(env.id, raw, type(obj))
        assert decoded == obj, f"{env.id}: {msgspec.json.encode(decoded)!r} != {msgspec.json.encode(obj)!r}"
        checked += 1
    assert checked == sum(isinstance(o, Node | Pod) for o in scenario.objects)


def test_a_seeded_object_is_served_as_it_is_and_others_are_decoded() -> None:
    pod = msgspec.convert({"metadata": {"name": "p1"}, "spec": {"containers": []}}, Pod)
    decoded = Decoded()
    decoded.seed("e1", pod)
    assert decoded.object("e1", msgspec.Raw(b"{}"), Pod) is pod
    node = decoded.object("e2", msgspec.Raw(b'{"metadata":{"name":"n1"}}'), Node)
    assert node.metadata.name == "n1"
    assert decoded.object("e2", msgspec.Raw(b"{}"), Node) is node  # once per event
