"""Scenario loading (spec §1-3): good input parsed, bad input refused with file/object/field."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.usage import parse_series
from ledgerlet_core.scenario.load import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BASE = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: t}
spec:
  duration: 1m
  kubeletConfig: %(kubelet)s
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {memory: 8Gi}}}
    %(objects)s
  usage: %(usage)s
  events: %(events)s
"""


def scenario(kubelet: str = "{}", objects: str = "", usage: str = "{}", events: str = "[]") -> str:
    return BASE % {"kubelet": kubelet, "objects": objects, "usage": usage, "events": events}


def refused(text: str) -> InputError:
    with pytest.raises(InputError) as err:
        load_scenario(text, "bad.yaml")
    assert err.value.file == "bad.yaml"
    return err.value


def test_examples_load() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        s = load_scenario(path.read_text(), str(path))
        assert s.node_order and s.duration > 0


def test_minimal_scenario_defaults() -> None:
    s = load_scenario(scenario(), "ok.yaml")
    assert s.start.year == 1970 and s.duration == 60 * 10**9
    assert s.node_order == ["n1"]
    assert s.kubelet_config.housekeeping_interval == 10 * 10**9


def test_bad_quantity() -> None:
    err = refused(
        scenario(
            objects="- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: n1, "
            "containers: [{name: a, resources: {requests: {memory: 1Gx}}}]}}"
        )
    )
    assert err.obj == "objects[1] Pod p"
    assert err.field == "spec.containers[0].resources.requests.memory"
    assert "bad.yaml: objects[1] Pod p: spec.containers[0].resources.requests.memory: invalid quantity" in str(err)


def test_unknown_signal() -> None:
    err = refused(scenario(kubelet="{evictionHard: {memory.avail: 1Gi}}"))
    assert (err.obj, err.field) == ("spec.kubeletConfig", "evictionHard.memory.avail")
    assert err.message == "unsupported eviction signal memory.avail"


def test_soft_threshold_without_grace_period() -> None:
    err = refused(scenario(kubelet="{evictionSoft: {memory.available: 1Gi}}"))
    assert err.field == "evictionSoft.memory.available"
    assert "grace period must be specified" in err.message


def test_object_the_api_server_refuses() -> None:
    err = refused(scenario(objects="- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: []}}"))
    assert (err.obj, err.field, err.message) == ("objects[1] Pod p", "spec.containers", "Required value")


def test_duplicate_object() -> None:
    err = refused(scenario(objects="- {apiVersion: v1, kind: Node, metadata: {name: n1}}"))
    assert err.obj == "objects[1] Node n1" and "duplicate object: already defined at objects[0]" in err.message


def test_reference_to_unknown_node() -> None:
    err = refused(
        scenario(
            objects="- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: n9, containers: [{name: a}]}}"
        )
    )
    assert (err.field, err.message) == ("spec.nodeName", "unknown node 'n9'")
    err = refused(scenario(usage="{node/n9: {system: {memory: 1Gi}}}"))
    assert err.field == "usage.node/n9"
    err = refused(scenario(events="[{at: 10s, shutdown: {node: n9}}]"))
    assert (err.obj, err.field) == ("events[0]", "shutdown.node")


def test_unknown_priority_class() -> None:
    err = refused(
        scenario(
            objects="- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: n1, "
            "priorityClassName: gold, containers: [{name: a}]}}"
        )
    )
    assert err.field == "spec.priorityClassName"
    assert 'pods "p" is forbidden: no PriorityClass with name gold was found' in err.message


def test_bad_usage_series() -> None:
    err = refused(scenario(usage="{default/p: {memory: [[10, 1Gi], [5, 2Gi]]}}"))
    assert err.field == "usage.default/p.memory[1][0]" and "time order" in err.message
    err = refused(scenario(usage="{node/n1: {system: {memory: lots}}}"))
    assert err.field == "usage.node/n1.system.memory"


def test_bad_event() -> None:
    err = refused(scenario(events="[{at: soon, shutdown: {node: n1}}]"))
    assert (err.obj, err.field) == ("events[0]", "at")
    err = refused(scenario(events="[{at: 5s, reboot: {node: n1}}]"))
    assert err.obj == "events[0]" and "expected exactly one of" in err.message


def test_node_kubelet_config_override() -> None:
    text = scenario(
        objects="- {apiVersion: v1, kind: Node, metadata: {name: n2, annotations: "
        '{ledgerlet/kubelet-config: \'{"evictionHard": {"memory.available": "1Gi"}}\'}}}'
    )
    s = load_scenario(text, "ok.yaml")
    assert [t.written for t in s.kubelet_config_for("n2").thresholds if t.signal == "memory.available"] == [
        "memory.available<1Gi"
    ]
    bad = scenario(
        objects="- {apiVersion: v1, kind: Node, metadata: {name: n2, annotations: "
        '{ledgerlet/kubelet-config: \'{"evictionHard": {"memory.availble": "1Gi"}}\'}}}'
    )
    err = refused(bad)
    assert err.obj == "objects[1] Node n2"
    assert err.field == "metadata.annotations.ledgerlet/kubelet-config.evictionHard.memory.availble"


def test_yaml_errors_name_the_line() -> None:
    err = refused("apiVersion: ledgerlet/v1\nkind: Scenario\nspec: [unclosed\n")
    assert err.obj == "YAML" and err.field.startswith("line ")


def test_events_sorted_stably_by_time() -> None:
    text = scenario(
        events=textwrap.dedent("""\
        [{at: 20s, powerOn: {node: n1}}, {at: 10s, shutdown: {node: n1}}, {at: 20s, powerOff: {node: n1}}]""")
    )
    s = load_scenario(text, "ok.yaml")
    assert [(e.index, e.action) for e in s.events] == [(1, "shutdown"), (0, "powerOn"), (2, "powerOff")]


def test_series_interpolation() -> None:
    s = parse_series([[0, "100Mi"], [60, "200Mi"]], "x")
    mi = 1 << 20
    assert s.at(-5) == 100 * mi and s.at(0) == 100 * mi and s.at(30 * 10**9) == 150 * mi
    assert s.at(60 * 10**9) == 200 * mi and s.at(10**12) == 200 * mi
    step = parse_series([[0, 1], [60, 1], [60, 5]], "x")
    assert step.at(59 * 10**9) == 1 and step.at(60 * 10**9) == 5
    assert parse_series("1Gi", "x").at(123) == 1 << 30


def test_json_scenarios_load_like_yaml() -> None:
    import json

    import yaml

    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    for as_json in (json.dumps(yaml.safe_load(text)), json.dumps(yaml.safe_load(text), indent=4)):
        a, b = load_scenario(text, "a.yaml"), load_scenario(as_json, "a.json")
        assert a.objects == b.objects and a.events == b.events and a.duration == b.duration
        assert a.usage == b.usage  # (the usage entries travel as they are: compact, whatever the file's layout)
    err = refused("{not json")
    assert err.obj == "JSON"


def test_flow_style_yaml_opening_with_a_brace_is_read_as_yaml() -> None:
    """``yaml.dump(..., default_flow_style=True)`` writes ``{apiVersion: ledgerlet/v1, ...}``:
    not JSON, but YAML, and read as such."""
    import yaml

    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    flow = yaml.safe_dump(yaml.safe_load(text), default_flow_style=True)
    assert flow.startswith("{")
    a, b = load_scenario(text, "a.yaml"), load_scenario(flow, "flow.yaml")
    assert a.objects == b.objects and a.events == b.events and a.duration == b.duration


def test_priority_class_the_api_server_refuses() -> None:
    err = refused(
        scenario(
            objects="- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, "
            "metadata: {name: gold}, value: 2000000000}"
        )
    )
    assert err.obj == "objects[1] PriorityClass gold" and err.field == "value"
    assert "maximum allowed value of a user defined priority is 1000000000" in err.message
    err = refused(
        scenario(
            objects="- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: system-gold}, value: 5}"
        )
    )
    assert err.field == "metadata.name" and "system-gold is not a known system priority class" in err.message


def test_pod_with_unknown_runtime_class() -> None:
    err = refused(
        scenario(
            objects="- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: n1, "
            "runtimeClassName: kata-fc, containers: [{name: a}]}}"
        )
    )
    assert err.obj == "objects[1] Pod default/p" and err.field == "spec.runtimeClassName"
    assert 'RuntimeClass "kata-fc" not found' in err.message


def test_reading_leaves_the_cyclic_collector_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader is pure: pausing the collector around a large file is the command
    line's (app/collector.py)."""
    import gc

    from ledgerlet_core.scenario import load as load_module

    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    during: list[bool] = []
    real_load = load_module._load

    def watched(data: bytes, source: str, text: str | None = None) -> Any:
        during.append(gc.isenabled())
        return real_load(data, source, text)

    monkeypatch.setattr(load_module, "_load", watched)
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        load_scenario(text, "m.yaml")
        gc.disable()
        load_scenario(text, "m.yaml")
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
    assert during == [True, False]
