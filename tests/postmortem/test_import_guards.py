"""``ledgerlet import``'s guards on what it is given: recordings far apart in time are
refused with the gap named (``--allow-gaps`` takes them); a directory is read by content,
not by extension, and what is skipped is said with why; recorded Events are kept as
observed outcomes and ``explain`` sets the real ``Evicted`` message beside ledgerlet's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.recording_gaps import gap_text
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.recording_import import import_files

RECORDED = Path(__file__).parents[1] / "data" / "recordings" / "kind-v1.31"
KUBECTL = RECORDED / "kubectl-get-nodes-pods.yaml"
SUMMARIES = sorted(RECORDED.glob("summary-*.json"))
SCHEMA = json.loads((Path(__file__).parents[2] / "contracts" / "scenario.v1.schema.json").read_text())


def _moved(summary: Path, to: str) -> dict[str, Any]:
    """The summary as if taken at ``to`` (every timestamp of its day moved)."""
    text = summary.read_text()
    return json.loads(text.replace("2025-01-10T09:30", to))


def test_recordings_years_apart_are_refused_with_the_gap_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "summary-2018.json"
    old.write_text(json.dumps(_moved(SUMMARIES[0], "2018-04-30T09:30")))
    out = tmp_path / "s.yaml"
    args = ["import", str(KUBECTL), str(old), *map(str, SUMMARIES[1:]), "--out", str(out)]
    assert main(args) == 2
    said = " ".join(capsys.readouterr().err.split())
    # 2018-04-30T09:30:00 to 2025-01-10T09:30:10: 2,447 days and 10 s
    assert "the recordings are 2,447 days apart" in said
    assert f"{old} was taken at 2018-04-30T09:30:00Z and the next, at 2025-01-10T09:30:10Z" in said
    assert "--allow-gaps" in said and not out.exists()

    assert main([*args, "--allow-gaps"]) == 0
    scenario = load_scenario(out.read_text(), str(out))
    assert scenario.events[-1].at == (2447 * 86400 + 20) * 10**9  # exact, as asked


def test_a_gap_within_the_limit_is_taken_and_gaps_read_as_people_write_them(tmp_path: Path) -> None:
    later = tmp_path / "later.json"
    later.write_text(json.dumps(_moved(SUMMARIES[-1], "2025-01-10T10:25")))  # 55 min after the first
    import_files(inputs=[KUBECTL, *SUMMARIES[:2], later], name="x", out=tmp_path / "s.yaml")
    too_late = tmp_path / "too-late.json"
    too_late.write_text(json.dumps(_moved(SUMMARIES[-1], "2025-01-10T10:31")))
    with pytest.raises(InputError) as err:
        import_files(inputs=[KUBECTL, *SUMMARIES[:2], too_late], name="x", out=tmp_path / "t.yaml")
    assert err.value.file == str(too_late) and "1 h 0 min" not in str(err.value)
    assert "the recordings are 1 h 1 min apart" in str(err.value)
    assert [gap_text(__import__("datetime").timedelta(seconds=s)) for s in (75, 3600, 90061)] == [
        "1 min 15 s",
        "1 h",
        "1 day 1 h",
    ]


def test_a_directory_is_read_by_content_and_what_is_skipped_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = tmp_path / "recording"
    (rec / "node-1").mkdir(parents=True)
    shutil.copy(KUBECTL, rec / "cluster-dump")  # no extension
    for i, summary in enumerate(SUMMARIES):
        shutil.copy(summary, rec / "node-1" / f"kubelet_stats_summary.{i}")  # nor these
    shutil.copy(RECORDED / "configz.json", rec / "configz.txt")
    (rec / "README.md").write_text("# Recorded on the night of the incident\n\nSee the ticket.\n")
    (rec / "notes.yaml").write_text("taken_by: alice\nwhy: disk pressure\n")
    (rec / "capture.pcap").write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + bytes(64))
    (rec / ".summary.json.tmp").write_text("{")
    (rec / "broken.json").write_text('{"kind": "PodList", "items": [')

    out = tmp_path / "s.yaml"
    assert main(["import", str(rec), "--out", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    skipped = sorted(Path(x.split(":")[0]).name for x in said.split("skipped ")[1:])
    assert skipped == [".summary.json.tmp", "README.md", "broken.json", "capture.pcap", "notes.yaml"]

    def why(name: str) -> str:
        return said.split(f"skipped {rec / name}: ")[1].split(" skipped ")[0]

    assert why("capture.pcap").startswith("binary, not YAML or JSON")
    assert why(".summary.json.tmp").startswith("a dot-file")
    assert why("notes.yaml").startswith("a mapping with no kind: not a Kubernetes object, /stats/summary or configz")
    assert why("README.md").startswith("a YAML str, not a Kubernetes object")
    assert why("broken.json").startswith("not valid")
    doc = yaml.safe_load(out.read_text())
    assert len(doc["spec"]["events"]) == len(SUMMARIES)  # the extension-less summaries were read
    assert doc["spec"]["kubeletConfig"]  # and the configz named .txt


def test_a_directory_with_no_recording_says_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "README").write_text("nothing here\n")
    with pytest.raises(InputError) as err:
        import_files(inputs=[tmp_path / "d"], name="x", out=tmp_path / "s.yaml")
    assert err.value.file == str(tmp_path / "d")
    assert "no recording in the directory (1 files;" in str(err.value) and "README" in str(err.value)


def _events_dump(message: str) -> dict[str, Any]:
    """``kubectl get events -A -o yaml`` of the incident, written as a kubelet writes its
    events (core v1 and events.k8s.io/v1 both)."""
    pod = {"kind": "Pod", "namespace": "default", "name": "hog", "apiVersion": "v1"}
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "hog.181a1", "namespace": "default", "resourceVersion": "901"},
                "involvedObject": pod,
                "reason": "Evicted",
                "message": message,
                "type": "Warning",
                "source": {"component": "kubelet", "host": "kind-control-plane"},
                "firstTimestamp": "2025-01-10T09:30:20Z",
                "lastTimestamp": "2025-01-10T09:30:20Z",
                "count": 1,
            },
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "hog.181a2", "namespace": "default"},
                "regarding": pod,
                "reason": "Killing",
                "note": "Stopping container hog",
                "type": "Normal",
                "reportingController": "kubelet",
                "reportingInstance": "kind-control-plane",
                "eventTime": "2025-01-10T09:30:20.512345Z",
            },
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "kind-control-plane.1"},
                "involvedObject": {"kind": "Node", "name": "kind-control-plane"},
                "reason": "EvictionThresholdMet",
                "message": "Attempting to reclaim memory",
                "type": "Warning",
                "lastTimestamp": "2025-01-10T09:30:20Z",
            },
            {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "half"}, "reason": "Pulled"},  # no object
        ],
    }


def _import_with_events(tmp_path: Path, message: str) -> tuple[Path, str]:
    events = tmp_path / "events.yaml"
    events.write_text(yaml.safe_dump(_events_dump(message)))
    out = tmp_path / "incident.yaml"
    import_files(inputs=[KUBECTL, events, *SUMMARIES], name="kind-oom", out=out)
    store = f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["run", str(out), "--decisions", str(tmp_path / "d.jsonl"), "--store", store, "--quiet"]) == 0
    return out, store


def _ledgerlets_message(tmp_path: Path) -> str:
    out = tmp_path / "plain.yaml"
    import_files(inputs=[KUBECTL, *SUMMARIES], name="kind-oom", out=out)
    log = tmp_path / "plain.jsonl"
    assert main(["run", str(out), "--decisions", str(log), "--store", f"sqlite:///{tmp_path / 'p.db'}", "--quiet"]) == 0
    evicted = [json.loads(x) for x in log.read_text().splitlines() if '"PodEvicted"' in x]
    return str(evicted[0]["data"]["message"])


def test_recorded_events_are_kept_and_explain_sets_them_beside_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = _ledgerlets_message(tmp_path)
    # what the kubelet wrote that night: the same numbers, rounded as it rounds them
    real = "The node was low on resource: memory. Threshold quantity: 500Mi, available: 401408Ki. "
    out, store = _import_with_events(tmp_path, real)
    doc = yaml.safe_load(out.read_text())
    kept = doc["spec"]["observedEvents"]
    assert [e["reason"] for e in kept] == ["Evicted", "Killing", "EvictionThresholdMet"]
    assert "resourceVersion" not in kept[0]["metadata"]  # cleaned as objects are
    jsonschema.validate(doc, SCHEMA)
    # a run decides exactly as without them: they are never an input
    decided = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [r["data"]["message"] for r in decided if r["type"] == "PodEvicted"] == [ours]

    capsys.readouterr()
    assert main(["explain", "default/hog", "--store", store]) == 0
    text = capsys.readouterr().out
    beside = text[text.index("Beside the recording") :].splitlines()
    assert beside[1] == (
        "  recorded   2025-01-10T09:30:20Z  Warning Evicted (kubelet on kind-control-plane): " + real.strip()
    )
    assert beside[2] == "  recorded   2025-01-10T09:30:20.512345Z  Normal Killing (kubelet on kind-control-plane): " + (
        "Stopping container hog"
    )
    assert beside[3] == f"  ledgerlet  2025-01-10T09:30:20Z  PodEvicted: {ours.strip()}"
    assert beside[4] == "  the messages differ: the recording's is what the kubelet said then"

    assert main(["explain", "default/hog", "--store", store, "-o", "json"]) == 0
    observed = json.loads(capsys.readouterr().out)["observed"]
    assert [(e["reason"], e["object"]["name"], e.get("source")) for e in observed] == [
        ("Evicted", "hog", {"component": "kubelet", "host": "kind-control-plane"}),
        ("Killing", "hog", {"component": "kubelet", "host": "kind-control-plane"}),
    ]


def test_the_same_message_is_said_to_be_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = _ledgerlets_message(tmp_path)
    _, store = _import_with_events(tmp_path, ours)
    capsys.readouterr()
    assert main(["explain", "default/hog", "--store", store]) == 0
    assert "  the same message as recorded" in capsys.readouterr().out.splitlines()


def test_an_unreadable_recorded_event_is_left_out_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "events.yaml"
    events.write_text(yaml.safe_dump(_events_dump("x")))
    assert main(["import", str(KUBECTL), str(events), *map(str, SUMMARIES), "--out", str(tmp_path / "s.yaml")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "3 recorded events kept as observed outcomes" in said
    assert f"recorded events not kept (1): {events}: Event half (items[3]: involvedObject:" in said


def test_a_bad_observed_event_in_a_scenario_is_named() -> None:
    scenario = {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": "x"},
        "spec": {
            "duration": "10s",
            "observedEvents": [
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "involvedObject": {"kind": "Pod", "name": "p"},
                    "reason": "Evicted",
                    "lastTimestamp": "yesterday",
                }
            ],
        },
    }
    with pytest.raises(InputError) as err:
        load_scenario(yaml.safe_dump(scenario), "s.yaml")
    assert (err.value.file, err.value.obj, err.value.field) == ("s.yaml", "spec.observedEvents[0]", "lastTimestamp")
