"""Scenario files built to hurt: each ends as an input error naming what is wrong, at
once, before any run starts (no segmentation fault, no traceback, no run that fails
later on a value the loader let through)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.bounds import ALIAS_BUDGET, check_aliases
from ledgerlet_core.scenario.load import load_scenario
from tests.conftest import EXAMPLES

HEAD = "apiVersion: ledgerlet/v1\nkind: Scenario\nmetadata: {name: hostile}\n"


def refused(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        load_scenario(text, "hostile.yaml")
    return info.value


def test_an_alias_bomb_is_refused_at_once() -> None:
    """The 345-byte kind: nine aliases of nine aliases ... eight levels (9^8 values)."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    text = HEAD + "spec:\n  " + "\n  ".join(lines) + "\n  duration: *a8\n"
    began = time.perf_counter()
    err = refused(text)
    assert time.perf_counter() - began < 2
    assert err.obj == "YAML" and "aliases would expand" in str(err)


def test_a_node_that_contains_itself_is_refused() -> None:
    err = refused(HEAD + "spec: &s\n  duration: 1m\n  loop: *s\n")
    assert "contains it" in str(err)


def test_anchors_that_reuse_a_little_are_read() -> None:
    """Anchors for a shared container spec are ordinary YAML and stay accepted."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    assert load_scenario("x: &unused {a: 1}\ny: *unused\n" + text, "anchors.yaml").objects
    shared = {"spec": [1, 2, 3]}
    check_aliases({"a": shared, "b": shared, "c": [shared] * 100}, "small.yaml")
    with pytest.raises(InputError):
        check_aliases({"c": [shared] * ALIAS_BUDGET}, "big.yaml")


@pytest.mark.slow
def test_block_nesting_deeper_than_libyaml_is_given_is_refused_before_parsing() -> None:
    """30,000 levels made libyaml overflow its stack (exit 139); now an input error."""
    text = HEAD + "spec:\n" + "".join(" " * i + "- \n" for i in range(1, 30_000))
    err = refused(text)
    assert err.obj == "YAML" and "nested deeper" in str(err) and err.field is not None


def test_deep_flow_nesting_and_deep_json_are_input_errors() -> None:
    assert refused(HEAD + "spec: {duration: " + "[" * 5000 + "]" * 5000 + "}\n").obj == "YAML"
    err = refused('{"apiVersion": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert err.obj == "JSON" and "nested too deeply" in str(err)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1.0e+30", "9223372037"])
def test_durations_that_are_no_durations_are_refused(value: str) -> None:
    err = refused(HEAD + f"spec:\n  duration: {value}\n")
    assert (err.obj, err.field) == ("spec", "duration")


@pytest.mark.parametrize("value", [".nan", ".inf", "1.0e+30"])
def test_series_times_that_are_no_times_are_refused(value: str) -> None:
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    usage = f'\n  usage:\n    "default/x": {{memory: [[0, 1Mi], [{value}, 2Mi]]}}\n'
    marker = "\n  usage:\n"
    assert marker in text
    err = refused(text.replace(marker, usage.rstrip("\n") + "\n", 1))
    assert "usage" in (err.field or "")


@pytest.mark.parametrize("value", ["inf", "NaN", "1e308", "-5", "soon"])
def test_exit_after_annotations_a_run_could_not_use_are_refused(value: str) -> None:
    text = (
        HEAD + "spec:\n  duration: 1m\n  objects:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: '4', memory: 8Gi}}}\n"
        "  - apiVersion: v1\n    kind: Pod\n"
        f"    metadata: {{name: p, annotations: {{ledgerlet/exit-after: '{value}'}}}}\n"
        "    spec: {nodeName: n1, containers: [{name: c}]}\n"
    )
    err = refused(text)
    assert err.field == "metadata.annotations[ledgerlet/exit-after]"


@pytest.mark.slow
def test_a_file_that_is_not_utf8_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes((EXAMPLES / "memory-pressure.yaml").read_bytes().replace(b"memory-pressure", b"m\xe9moire", 1))
    store = tmp_path / "s.db"
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(bad)]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{store}"]
    res = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "not UTF-8: byte 0xe9" in res.stderr and "Traceback" not in res.stderr
    assert not store.exists()


def test_a_closed_loop_node_without_memory_is_refused() -> None:
    """It was accepted, then the run died on a division by zero (OOM scores are shares
    of the machine's memory)."""
    text = (
        HEAD + "spec:\n  duration: 1m\n  objects:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: '4'}}}\n"
        "  usage:\n    node/n1: {system: {memory: 1Gi}}\n"
    )
    err = refused(text)
    assert err.field == "usage.node/n1" and "memory capacity" in str(err)
    ok = load_scenario(text.replace("{system:", "{capacity: {memory: 8Gi}, system:"), "ok.yaml")
    assert list(ok.usage) == ["node/n1"]


def test_quantities_beyond_an_int64_are_refused_where_they_enter() -> None:
    """1e9999 was accepted, then every loop that printed it failed mid-run."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text().replace("      memory: 1843Mi", "      memory: 1e9999")
    err = refused(text)
    assert err.field == "usage.default/db.memory" and "int64" in str(err)
    pod = (EXAMPLES / "memory-pressure.yaml").read_text().replace("limits: {memory: 6Gi}", "limits: {memory: 1e30}")
    assert "int64" in str(refused(pod))


@pytest.mark.parametrize("section", ["objects: {}", "events: {}", "usage: []", "kubeletConfig: []"])
def test_sections_of_the_wrong_type_are_refused_even_when_empty(section: str) -> None:
    err = refused(HEAD + f"spec:\n  duration: 1m\n  {section}\n")
    assert (err.obj, err.field) == ("spec", section.split(":")[0])


def test_a_repeated_key_is_refused_with_its_line() -> None:
    err = refused(HEAD + "spec:\n  duration: 1m\n  duration: 2h\n")
    assert "duplicate key 'duration'" in str(err) and err.field == "line 6, column 3"
    # merge keys are not repeats
    assert load_scenario(HEAD + "x: &d {duration: 1m}\nspec:\n  <<: *d\n", "merge.yaml").duration > 0


def test_a_negative_resource_quota_is_refused() -> None:
    text = (
        HEAD + "spec:\n  duration: 1m\n  objects:\n"
        "  - {apiVersion: v1, kind: ResourceQuota, metadata: {name: q, namespace: default},"
        " spec: {hard: {pods: '-1'}}}\n"
    )
    err = refused(text)
    assert err.field == "spec.hard.pods" and "greater than or equal to 0" in str(err)


def test_a_long_rule_of_dashes_in_a_text_is_not_deep_nesting() -> None:
    """Only indentation and compact indicators (``- ``) nest: a rule of 3,000 dashes in
    a literal block is text, and the file loads."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    meta = "      metadata: {name: db, namespace: default}\n"
    assert meta in text
    rule = "-" * 3000
    block = (
        "      metadata:\n        name: db\n        namespace: default\n"
        f"        annotations:\n          note: |\n            {rule}\n"
    )
    scenario = load_scenario(text.replace(meta, block), "rule.yaml")
    db = next(o for o in scenario.objects if o.metadata.name == "db")
    assert db.metadata.annotations["note"] == rule + "\n"


SOFT = (EXAMPLES / "soft-eviction.yaml").read_text()


@pytest.mark.parametrize(
    ("setting", "text"),
    [
        (
            "evictionSoft",
            SOFT.replace('evictionSoft: {memory.available: "1.5Gi"}', 'evictionSoft: {memory.available: "1e9999"}'),
        ),
        (
            "evictionHard",
            SOFT.replace('evictionHard: {memory.available: "500Mi"}', 'evictionHard: {memory.available: "1e9999"}'),
        ),
        (
            "evictionMinimumReclaim",
            SOFT.replace(
                "evictionMaxPodGracePeriod: 60",
                'evictionMaxPodGracePeriod: 60\n    evictionMinimumReclaim: {memory.available: "1e30"}',
            ),
        ),
    ],
)
def test_thresholds_and_reclaim_beyond_an_int64_are_refused(setting: str, text: str) -> None:
    """Accepted, they stopped the eviction manager mid-run (a ValueError printing 1e9999)."""
    err = refused(text)
    assert err.field == f"{setting}.memory.available" and "int64" in str(err), str(err)


def test_a_usage_time_of_401_digits_is_refused() -> None:
    """It ended in an OverflowError traceback (an int too large for a float)."""
    text = (
        (EXAMPLES / "memory-pressure.yaml")
        .read_text()
        .replace("[[0, 200Mi], [300, 4Gi]]", f"[[0, 200Mi], [{'9' * 401}, 4Gi]]")
    )
    err = refused(text)
    assert err.field == "usage.default/cache.memory[1][0]" and "not a duration" in str(err)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("memory: 1843Mi", "memory: " + "9" * 5000),  # a usage value
        ("[[0, 200Mi], [300, 4Gi]]", f"[[0, 200Mi], [{'9' * 5000}, 4Gi]]"),  # a usage time
        ('pods: "110"', "pods: " + "9" * 5000),  # an object's quantity
        ("duration: 12m", "duration: " + "9" * 5000),
        ("value: 1000", "value: " + "9" * 5000),  # a priority
    ],
)
def test_integers_too_long_to_convert_are_refused_with_their_line(old: str, new: str) -> None:
    """PyYAML's int() raised a bare ValueError past Python's 4,300 digits."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    assert old in text
    err = refused(text.replace(old, new))
    assert err.obj == "YAML" and "an integer of 5,000 characters is too long to read" in str(err)
    assert err.field is not None and err.field.startswith("line ")


def test_integers_too_long_to_convert_are_refused_in_json_entries() -> None:
    """A JSON scenario's objects and usage entries are decoded one at a time (msgspec's
    "Integer value out of range" escaped as a traceback)."""
    import json

    import yaml

    doc = yaml.safe_load((EXAMPLES / "memory-pressure.yaml").read_text())
    doc["spec"]["usage"]["default/db"]["memory"] = "@BIG@"
    usage = json.dumps(doc).replace('"@BIG@"', "9" * 5000)
    err = refused(usage)
    assert err.field == "usage.default/db" and "too long" in str(err)
    doc["spec"]["usage"]["default/db"]["memory"] = "1Gi"
    doc["spec"]["objects"][0]["status"]["capacity"]["pods"] = "@BIG@"
    obj = json.dumps(doc).replace('"@BIG@"', "9" * 5000)
    err = refused(obj)
    assert err.obj == "JSON" and "an integer of 5,000 digits is too long to read" in str(err)
    assert '"pods": ' in str(err)


def test_a_run_longer_than_a_year_is_refused_unless_asked_for(tmp_path: Path) -> None:
    """Go's longest duration (292 years) was accepted; the run never ended and the store
    grew 230 MB a minute."""
    from rich.console import Console

    from ledgerlet_services.app.cli import load_or_report

    long = tmp_path / "292y.yaml"
    long.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", "duration: 2562047h"))
    store = tmp_path / "s.db"
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(long)]
    cmd += ["--decisions", str(tmp_path / "d.jsonl"), "--store", f"sqlite:///{store}"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    said = " ".join(res.stderr.split())
    assert "spec: duration: 2562047h0m0s (106,752 days) is longer than --max-duration 8760h0m0s" in said, said
    assert not store.exists() and not (tmp_path / "d.jsonl").exists()
    # a year exactly runs; longer only when asked for
    year = tmp_path / "year.yaml"
    year.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", "duration: 8760h"))
    assert load_or_report(year, Console()) is not None
    asked = load_or_report(long, Console(), max_duration=2562048 * 3600 * 10**9)
    assert asked is not None and asked.duration == 2562047 * 3600 * 10**9


def _with_usage(entries: dict[str, str]) -> str:
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    extra = "".join(f"    {key}: {{memory: {value}}}\n" for key, value in entries.items())
    return text + extra


def test_usage_for_pods_nothing_declares_is_one_warning_with_a_count() -> None:
    """1e6 entries for pods that do not exist were accepted silently."""
    entries = {f"default/ghost-{i}": "1Mi" for i in range(10_000)}
    scenario = load_scenario(_with_usage({"default/dbb": "1Gi", **entries}), "ghosts.yaml")
    said = [w for w in scenario.warnings if w.startswith("usage:")]
    assert len(said) == 1, scenario.warnings
    assert "10,001 entries name pods or workloads that no object or event declares" in said[0]
    assert "default/dbb (did you mean default/db?)" in said[0] and "and 9,996 more" in said[0]


def test_usage_for_a_workload_or_pod_an_event_applies_is_not_warned_about() -> None:
    text = _with_usage({"default/Deployment/web": "1Gi", "default/late": "1Gi"}).replace(
        "  usage:\n",
        "  events:\n"
        "    - at: 60\n      apply: {apiVersion: v1, kind: Pod, metadata: {name: late, namespace: default},"
        " spec: {nodeName: worker-1, containers: [{name: c}]}}\n"
        "    - at: 60\n      apply: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default},"
        " spec: {replicas: 1, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}},"
        " spec: {containers: [{name: c}]}}}}\n"
        "  usage:\n",
    )
    scenario = load_scenario(text, "applied.yaml")
    assert not [w for w in scenario.warnings if w.startswith("usage:")], scenario.warnings


def test_usage_in_a_namespace_that_holds_nothing_is_surely_a_typo() -> None:
    err = refused(_with_usage({"defualt/db": "1Gi"}))
    assert err.field == "usage.defualt/db" and "did you mean 'default'?" in str(err), str(err)


def test_an_integer_too_long_to_convert_in_a_large_file_is_refused_with_its_line() -> None:
    """Past a megabyte YAML is read by rapidyaml where it can be (fast_yaml): it leaves
    such a file to PyYAML, which names the line."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    bulk = "".join(
        f"    - {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}, namespace: bulk}}, "
        "spec: {containers: [{name: c}]}}\n"
        for i in range(12_000)
    )
    at = text.index("  usage:")
    big = text[:at] + bulk + text[at:].replace("memory: 1843Mi", "memory: " + "9" * 5000)
    assert len(big) > 1 << 20
    err = refused(big)
    assert err.obj == "YAML" and err.field is not None and err.field.startswith("line 12")
