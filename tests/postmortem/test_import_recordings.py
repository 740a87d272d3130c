"""``ledgerlet import`` on what operators record, in the shapes clusters give it
(tests/data/recordings/kind-v1.31: a kind control-plane node, Kubernetes 1.31):
``kubectl get nodes,pods -A -o yaml``, the kubelet's ``/pods`` (a PodList whose items
carry no kind), its ``/stats/summary`` documents and ``/configz``; files sorted by what
they hold, standard input, static pods and recordings far apart in time."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from ledgerlet_core.kubelet.eviction.ranking import stats_lookup
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.k8s.priority import is_static_pod
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.recording import build_scenario, offset_text
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.recording_import import import_files, read_recording

RECORDED = Path(__file__).parents[1] / "data" / "recordings" / "kind-v1.31"
KUBECTL = RECORDED / "kubectl-get-nodes-pods.yaml"
SUMMARIES = sorted(RECORDED.glob("summary-*.json"))
STATIC = ["kube-system/etcd-kind-control-plane", "kube-system/kube-apiserver-kind-control-plane"]


def _run(scenario: Path, tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / f"{scenario.stem}.jsonl"
    store = f"sqlite:///{tmp_path / (scenario.stem + '.db')}"
    assert main(["run", str(scenario), "--decisions", str(log), "--store", store, "--quiet", "--run-id", "r"]) == 0
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_kubectl_yaml_summaries_and_configz_given_in_any_order_import_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "incident.yaml"
    files = [
        str(RECORDED / "configz.json"),
        *map(str, reversed(SUMMARIES)),
        str(RECORDED / "kubectl-get-nodes-pods.yaml"),
    ]
    assert main(["import", *files, "--name", "kind-oom", "--out", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "5 objects, 3 stats events over 30s from 2025-01-10T09:30:00Z" in said
    assert "featureGates.KubeletInUserNamespace" in said  # what was left out is said
    assert f"static pods, as their kubelets know them (mirror pods derived): {', '.join(STATIC)}" in said
    evicted = [r for r in _run(out, tmp_path) if r["type"] == "PodEvicted"]
    # memory.available at 09:30:20 is below 500Mi. rankMemoryPressure: pods over their
    # memory request first (all but web), then lower priority (the hog, priority 0), then
    # usage above the request (kube-apiserver 620Mi over none, etcd 310Mi over 100Mi).
    # Had the static pods lost their stats (the mirror pods' API UIDs are not the UIDs the
    # summary reports), they would rank first, as upstream ranks pods without stats.
    assert [(r["pod"], r["t"]) for r in evicted] == [("default/hog", 20.0)]
    assert evicted[0]["data"]["ranking"] == ["default/hog", *reversed(STATIC), "default/web-7d9c8f6b5-x2k4q"]


def test_static_pods_keep_their_stats_whichever_uid_the_recording_uses() -> None:
    rec = read_recording(inputs=[RECORDED / "kubectl-get-nodes-pods.yaml", *SUMMARIES])
    api_uids = {o["metadata"]["uid"] for _, doc in rec.objects for o in doc["items"] if o["kind"] == "Pod"}
    # the other way round too: a summary whose podRefs carry the mirror pods' API UIDs
    mirror_uid = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["uid"]
        for _, doc in rec.objects
        for o in doc["items"]
        if o["kind"] == "Pod"
    }
    source, summary = rec.summaries[-1]
    by_api_uid = json.loads(json.dumps(summary))
    for ps in by_api_uid["pods"]:
        ps["podRef"]["uid"] = mirror_uid[f"{ps['podRef']['namespace']}/{ps['podRef']['name']}"]
    for summaries in (rec.summaries, [(source, by_api_uid)]):
        doc, _ = build_scenario(name="x", objects=rec.objects, summaries=summaries)
        scenario = load_scenario(yaml.safe_dump(doc), "built")
        pods = {o.key: o for o in scenario.objects if isinstance(o, Pod)}
        assert [k for k in sorted(pods) if is_static_pod(pods[k])] == STATIC
        assert not {pods[k].metadata.uid for k in STATIC} & api_uids  # the kubelet's UIDs
        lookup = stats_lookup(msgspec.convert(doc["spec"]["events"][-1]["stats"], Summary))
        assert all(lookup(pods[k]) is not None for k in pods), "a pod lost its stats"


def test_the_kubelets_pod_list_imports_as_kubectls_objects_do(tmp_path: Path) -> None:
    """The kubelet's /pods omits kind and apiVersion on items and shows static pods, not
    mirror pods; with the Node from kubectl it makes the same run."""
    rest = [*map(str, SUMMARIES), "--kubelet-config", str(RECORDED / "configz.json")]
    kubectl, kubelet = tmp_path / "kubectl.yaml", tmp_path / "kubelet.yaml"
    assert main(["import", str(RECORDED / "kubectl-get-nodes-pods.yaml"), *rest, "--out", str(kubectl)]) == 0
    pods_and_node = [str(RECORDED / "kubectl-get-node.yaml"), str(RECORDED / "kubelet-pods.json")]
    assert main(["import", *pods_and_node, *rest, "--out", str(kubelet)]) == 0
    assert _run(kubelet, tmp_path) == _run(kubectl, tmp_path)


@pytest.mark.slow
def test_standard_input_is_read_as_dash(tmp_path: Path) -> None:
    out = tmp_path / "piped.yaml"
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "import", "-", *map(str, SUMMARIES), "--out", str(out)]
    dump = (RECORDED / "kubectl-get-nodes-pods.yaml").read_bytes()
    done = subprocess.run(cmd, input=dump, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = [RECORDED / "kubectl-get-nodes-pods.yaml", *SUMMARIES]
    assert out.read_text() == _imported(tmp_path / "files.yaml", files).read_text()
    twice = subprocess.run([*cmd[:5], "-", *cmd[5:]], input=dump, capture_output=True, timeout=120)
    assert twice.returncode == 2 and b"standard input (-) can be given once" in twice.stdout + twice.stderr


def _imported(out: Path, files: list[Path], *, allow_gaps: bool = False) -> Path:
    import_files(inputs=files, name="imported", out=out, allow_gaps=allow_gaps)
    return out


def test_documents_joined_with_dashes_and_unquoted_timestamps_are_read(tmp_path: Path) -> None:
    items = yaml.safe_load((RECORDED / "kubectl-get-nodes-pods.yaml").read_text())["items"]
    joined = tmp_path / "joined.yaml"
    joined.write_text(
        "\n---\n".join(yaml.safe_dump(o) for o in items).replace("'2025-01-10T08:58:12Z'", "2025-01-10T08:58:12Z")
    )
    rec = read_recording(inputs=[joined])
    assert len(rec.objects) == 5 and rec.objects[1][0] == f"{joined} (document 2)"
    assert (
        rec.objects[1][1]["metadata"]["creationTimestamp"] == "2025-01-10T08:58:12Z"
    )  # text, as the API server keeps it
    out = _imported(tmp_path / "joined-out.yaml", [joined, *SUMMARIES])
    assert load_scenario(out.read_text(), str(out)).objects


def test_recordings_days_apart_keep_exact_offsets(tmp_path: Path) -> None:
    """Offsets were printed with %g: 12 days became 1.03968e+06s and the import failed."""
    first = json.loads(SUMMARIES[0].read_text())
    later = json.loads(json.dumps(first).replace("2025-01-10T09:30:00Z", "2025-01-22T09:30:00.250Z"))
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(later))
    files = [RECORDED / "kubectl-get-nodes-pods.yaml", tmp_path / "a.json", tmp_path / "b.json"]
    # refused unless asked for (test_import_guards.py), then exact
    with pytest.raises(InputError, match="12 days apart"):
        _imported(tmp_path / "s.yaml", files)
    out = _imported(tmp_path / "s.yaml", files, allow_gaps=True)
    doc = yaml.safe_load(out.read_text())
    assert [e["at"] for e in doc["spec"]["events"]] == ["0s", "1036800.25s"]
    scenario = load_scenario(out.read_text(), str(out))
    assert scenario.events[-1].at == 1_036_800_250_000_000
    assert offset_text(timedelta(days=400, microseconds=7)) == "34560000.000007s"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"kind": "PodList", "apiVersion": "v1", "items": [["not", "an", "object"]]}', "items[0]"),
        ('{"kind": "List", "apiVersion": "v1", "items": [{"metadata": {"name": "x"}}]}', "items[0]"),
        ("kind: List\nitems: {a: 1}\n", "items"),
    ],
)
def test_a_list_item_that_is_no_object_is_named(tmp_path: Path, text: str, where: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(InputError) as err:
        _imported(tmp_path / "never.yaml", [bad])
    assert err.value.file == str(bad) and where in str(err.value)
    assert not (tmp_path / "never.yaml").exists()


def test_no_objects_and_two_configs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never.yaml"
    assert main(["import", *map(str, SUMMARIES), "--out", str(out)]) == 2
    assert "no cluster objects among the files" in capsys.readouterr().err
    configz = str(RECORDED / "configz.json")
    assert main(["import", str(RECORDED / "kubectl-get-nodes-pods.yaml"), configz, configz, "--out", str(out)]) == 2
    assert "one kubelet configuration per import" in capsys.readouterr().err
    assert not out.exists()
