"""kubectl itself, unmodified, against ``ledgerlet serve`` holding the fluentd incident
(seed 003), on both stores: what an operator would type, and what kubectl prints.

Expectations come from the run's decisions (read through the audit API), never from a
copy of kubectl's output."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import itertools
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.kube_context import Unreachable, kubeconfig
from ledgerlet_services.app.recording_import import import_files
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES, fresh_pg_database
from tests.postmortem.conftest import EVICTED, RUN, record
from tests.support.audit_server import ledgerlet, serving

pytestmark = pytest.mark.slow

NAMESPACE, POD = EVICTED.split("/")
NODE = "k8s-m1"


@dataclass(frozen=True)
class Served:
    url: str
    home: Path
    configs: dict[str, Path] = field(default_factory=dict)

    def decisions(self, kind: str) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/v1/runs/{RUN}/decisions", params={"type": kind, "limit": 1000})
        return list(answer.json()["items"])

    def kubeconfig(self, at: str = "end", run: str | None = None) -> Path:
        """What ``ledgerlet kubeconfig [--run RUN] --at AT`` prints (made once per instant)."""
        key = f"{run or 'latest'}-{at}"
        if key not in self.configs:
            self.configs[key] = self.home / f"kubeconfig-{key.replace(':', '.')}"  # (KUBECONFIG splits at ':')
            self.configs[key].write_text(kubeconfig(self.url, run=run, at=at))
        return self.configs[key]

    def env(self, config: Path) -> dict[str, str]:
        # kubectl's discovery cache lives under HOME: one of the test's own
        return {**os.environ, "HOME": str(self.home), "KUBECONFIG": str(config)}

    def kubectl(
        self, *args: str, at: str = "end", ok: bool = True, run: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["kubectl", *args], capture_output=True, text=True, timeout=60, env=self.env(self.kubeconfig(at, run))
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done


def _kubectl_or_fail() -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is needed on PATH (Debian: apt-get install kubernetes-client)")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _kubectl_or_fail()
    home = tmp_path_factory.mktemp("kubectl-home")
    if request.param == "sqlite":
        dsn = f"sqlite:///{home / 'events.db'}"
        asyncio.run(_record_all(dsn))
        with serving(dsn) as url:
            yield Served(url, home)
        return
    request.getfixturevalue("pg_server")
    with fresh_pg_database() as dsn:
        asyncio.run(_record_all(dsn))
        with serving(dsn) as url:
            yield Served(url, home)


#: a run of every workload kind, and the incident again with every observation stored whole
WORKLOADS, FULL = "workloads", "incident-stored-whole"
WORKLOADS_SCENARIO = """
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: workloads}
spec:
  duration: 2m
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {pool: a}}, status: {capacity: {cpu: "8"}}}
    - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {pool: b}}, status: {capacity: {cpu: "8"}}}
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec:
        replicas: 2
        selector: {matchLabels: {app: web}}
        template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: "nginx:1.27"}]}}
    - apiVersion: apps/v1
      kind: DaemonSet
      metadata: {name: agent, namespace: kube-system}
      spec: {template: {metadata: {labels: {app: agent}}, spec: {nodeSelector: {pool: a}, containers: [{name: agent}]}}}
    - apiVersion: apps/v1
      kind: StatefulSet
      metadata: {name: db}
      spec: {replicas: 2, serviceName: db, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db}]}}}
  events:
    - at: 10s
      apply:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: once}
        spec: {template: {spec: {restartPolicy: Never, containers: [{name: task}]}}}
"""


async def _record_all(dsn: str) -> None:
    """The workloads and the incident stored whole first; the incident (RUN) last, the newest."""
    scenario = load_scenario(WORKLOADS_SCENARIO, "workloads.yaml")
    incident = load_scenario((EXAMPLES / "disk-pressure-fluentd.yaml").read_text(), "disk-pressure-fluentd.yaml")
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=WORKLOADS)
        await run_embedded(incident, store, run=FULL, full_observations=True)
    await record(dsn)


def table(text: str) -> list[list[str]]:
    """kubectl's columns (cells hold no runs of two spaces in these tables)."""
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in text.splitlines() if line.strip()]


def test_get_pods_shows_the_evicted_pod_with_kubectls_columns(served: Served) -> None:
    out = served.kubectl("get", "pods", "-A").stdout
    rows = table(out)
    assert rows[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    (evicted,) = [r for r in rows if r[1] == POD]
    assert evicted == [NAMESPACE, POD, "0/1", "Evicted", "0", "25m"]  # AGE at the instant shown: the run's end
    replaced = {d["data"]["replacement"].split("/")[1] for d in served.decisions("PodReplaced")}
    assert replaced <= {r[1] for r in rows}
    # at five minutes less a second, it was running, and the replacements did not exist
    early = table(served.kubectl("get", "pods", "-A", at="4m59s").stdout)
    assert [r for r in early if r[1] == POD] == [[NAMESPACE, POD, "1/1", "Running", "0", "4m59s"]]
    assert not replaced & {r[1] for r in early}
    chunked = served.kubectl("get", "pods", "-A", "--chunk-size=2").stdout
    assert chunked == out


def test_get_pod_yaml_is_the_object_the_api_server_held(served: Served) -> None:
    (evicted,) = served.decisions("PodEvicted")
    pod = yaml.safe_load(served.kubectl("-n", NAMESPACE, "get", "pod", POD, "-o", "yaml").stdout)
    status = pod["status"]
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "Evicted", evicted["data"]["message"])
    (target,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "TerminationByKubelet")
    assert pod["spec"]["nodeName"] == NODE and pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"


def test_describe_pod_tells_the_eviction(served: Served) -> None:
    (evicted,) = served.decisions("PodEvicted")
    out = served.kubectl("-n", NAMESPACE, "describe", "pod", POD).stdout
    fields = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out.splitlines() if ":" in line}
    assert (fields["Status"], fields["Reason"]) == ("Failed", "Evicted")
    assert fields["Message"] == evicted["data"]["message"].strip()
    assert fields["Controlled By"] == "DaemonSet/fluentd-elasticsearch"
    events = out.split("\nEvents:\n", 1)[1]
    evicted_line = next(line for line in events.splitlines() if " Evicted " in line)
    assert evicted_line.split()[:2] == ["Warning", "Evicted"] and "kubelet" in evicted_line
    assert evicted["data"]["message"].strip() in evicted_line
    assert "Stopping container fluentd-elasticsearch" in events


def test_get_events_by_reason_and_every_event_of_the_run(served: Served) -> None:
    refused = [d for d in served.decisions("PodRejected") if d["data"]["reason"] == "Evicted"]
    (evicted,) = served.decisions("PodEvicted")
    rows = table(served.kubectl("get", "events", "-A", "--field-selector", "reason=Evicted").stdout)
    assert rows[0] == ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert {r[4] for r in rows[1:]} == {f"pod/{d['pod'].split('/')[1]}" for d in [evicted, *refused]}
    assert {(r[2], r[3]) for r in rows[1:]} == {("Warning", "Evicted")}
    # every event of the run: one per decision upstream records one for, identical ones counted
    listed = yaml.safe_load(served.kubectl("get", "events", "-A", "-o", "yaml").stdout)["items"]
    seen = {(e["reason"], e["involvedObject"]["name"], e["message"]) for e in listed}
    expected = {("Evicted", POD, evicted["data"]["message"])}
    expected |= {("Evicted", d["pod"].split("/")[1], d["data"]["message"]) for d in refused}
    expected |= {
        ("SuccessfulCreate", d["data"]["owner"].split("/")[1], f"Created pod: {d['data']['replacement'].split('/')[1]}")
        for d in served.decisions("PodReplaced")
    }
    expected |= {("Killing", POD, "Stopping container fluentd-elasticsearch")}
    failures = [d for d in served.decisions("ImageGarbageCollected") if d["data"].get("error")]
    expected |= {("FreeDiskSpaceFailed", NODE, d["data"]["error"]) for d in failures}
    # the kubelet adds ImageGCFailed when the image GC failed the period before too (5m)
    expected |= {
        ("ImageGCFailed", NODE, d["data"]["error"])
        for before, d in itertools.pairwise(failures)
        if d["t"] - before["t"] == 300
    }
    words = {("DiskPressure", "True"): "NodeHasDiskPressure", ("DiskPressure", "False"): "NodeHasNoDiskPressure"}
    changes = served.decisions("NodeConditionChanged")
    conditions = {words[d["data"]["condition"], d["data"]["status"]] for d in changes}
    expected |= {(r, NODE, f"Node {NODE} status is now: {r}") for r in conditions}
    assert seen == expected and len(listed) == len(expected)
    (pressure,) = [e for e in listed if e["reason"] == "NodeHasDiskPressure"]
    assert pressure["count"] == sum(1 for d in changes if d["data"]["status"] == "True")


def _age_seconds(age: str) -> int:
    """kubectl's short age (``30s``, ``4m50s``, ``5m``) in seconds."""
    minutes, _, seconds = age.rpartition("m")
    return int(minutes or 0) * 60 + int(seconds.rstrip("s") or 0)


def test_kubectls_own_ages_agree_with_gets_at_a_clock_time(served: Served) -> None:
    """describe and ``kubectl events`` age by the wall clock; served as now (the
    kubeconfig's default) they read what ``get`` reads, at an instant given as a time of day."""
    (evicted,) = served.decisions("PodEvicted")
    at = (dt.datetime.fromisoformat(evicted["time"]) + dt.timedelta(seconds=30)).strftime("%H:%M:%S")
    rows = table(served.kubectl("-n", NAMESPACE, "get", "events", "--field-selector", "reason=Evicted", at=at).stdout)
    (listed,) = [r for r in rows[1:] if r[3] == f"pod/{POD}"]
    assert listed[0] == "30s"  # LAST SEEN, computed by the server to the instant shown
    described = served.kubectl("-n", NAMESPACE, "describe", "pod", POD, at=at).stdout.split("\nEvents:\n", 1)[1]
    age = next(line.split()[2] for line in described.splitlines() if " Evicted " in line)
    assert 30 <= _age_seconds(age) <= 32, described  # kubectl's own: now minus the timestamp served
    events = served.kubectl("-n", NAMESPACE, "events", "--for", f"pod/{POD}", at=at).stdout
    seen = next(line.split()[0] for line in events.splitlines() if " Evicted " in line)
    assert 30 <= _age_seconds(seen) <= 32, events
    # the recorded timestamps, as --clock recorded serves them: describe then ages from January
    recorded = served.home / "kubeconfig-recorded"
    recorded.write_text(kubeconfig(served.url, at=at, clock="recorded"))
    done = subprocess.run(
        ["kubectl", "-n", NAMESPACE, "get", "pod", POD, "-o", "jsonpath={.metadata.creationTimestamp}"],
        capture_output=True,
        text=True,
        env=served.env(recorded),
    )
    assert done.stdout == "2026-01-29T09:00:00Z"


def test_get_nodes_shows_the_pressure_condition_at_each_instant(served: Served) -> None:
    rows = table(served.kubectl("get", "nodes").stdout)
    assert rows[0][:4] == ["NAME", "STATUS", "ROLES", "AGE"] and rows[1][:4] == [NODE, "Ready", "control-plane", "25m"]
    columns = 'NAME:.metadata.name,DISK:.status.conditions[?(@.type=="DiskPressure")].status,TAINTS:.spec.taints[*].key'
    first = served.decisions("NodeConditionChanged")[0]
    assert first["data"]["condition"] == "DiskPressure" and first["data"]["status"] == "True"
    at_first = f"{int(first['t'])}s"
    for at, disk, taint in (("4m", "False", "<none>"), (at_first, "True", "node.kubernetes.io/disk-pressure")):
        out = served.kubectl("get", "nodes", "-o", f"custom-columns={columns}", at=at).stdout
        assert table(out)[1] == [NODE, disk, taint], at


def test_describe_node_reads_naturally(served: Served) -> None:
    out = served.kubectl("describe", "node", NODE).stdout
    assert "Taints:             node.kubernetes.io/disk-pressure:NoSchedule" in out
    (disk,) = [line.split() for line in out.splitlines() if line.strip().startswith("DiskPressure ")]
    assert disk[1] == "True" and "KubeletHasDiskPressure" in disk
    assert "HolderIdentity:  k8s-m1" in out
    pods = out.split("Non-terminated Pods:", 1)[1].split("Allocated resources:", 1)[0]
    running = [
        r[1] for r in table(served.kubectl("get", "pods", "-A", "--field-selector=status.phase=Running").stdout)[1:]
    ]
    assert f"({len(running)} in total)" in pods and all(name in pods for name in running)
    events = out.split("\nEvents:\n", 1)[1]
    pressure = next(line for line in events.splitlines() if "NodeHasDiskPressure" in line)
    assert "(x2 over" in pressure and "kubelet" in pressure
    assert "FreeDiskSpaceFailed" in events


def test_get_pods_watch_streams_what_happened_next(served: Served) -> None:
    config = served.kubeconfig("4m50s")
    proc = subprocess.Popen(
        ["kubectl", "-n", NAMESPACE, "get", "pods", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=served.env(config),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    replacements = [d["data"]["replacement"].split("/")[1] for d in served.decisions("PodReplaced")][:3]
    got: list[list[str]] = []
    try:
        deadline = time.monotonic() + 30
        while not all(any(r[0] == name for r in got) for name in replacements):
            assert time.monotonic() < deadline, f"the watch did not show the replacements: {got}"
            with contextlib.suppress(queue.Empty):
                got.append(table(lines.get(timeout=1))[0])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert got[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    mine = [r for r in got if r[0] == POD]
    assert mine == [[POD, "1/1", "Running", "0", "4m50s"], [POD, "0/1", "Evicted", "0", "5m"]]
    order = [r[0] for r in got[1:] if r[0] in replacements]
    assert order == replacements  # in decision order, after the eviction
    assert got.index(mine[1]) < got.index(next(r for r in got if r[0] == replacements[0]))


def test_a_delete_is_refused_with_a_status(served: Served) -> None:
    done = served.kubectl("-n", NAMESPACE, "delete", "pod", POD, ok=False)
    assert done.returncode == 1
    assert done.stderr.startswith("Error from server (MethodNotAllowed):"), done.stderr
    assert served.kubectl("-n", NAMESPACE, "get", "pod", POD, "-o", "name").stdout.strip() == f"pod/{POD}"
    logs = served.kubectl("-n", NAMESPACE, "logs", POD, ok=False)
    assert logs.returncode == 1 and "Error from server (Forbidden)" in logs.stderr


def test_kubectl_json_imports_back_into_a_scenario_that_loads(served: Served, tmp_path: Path) -> None:
    dump = tmp_path / "cluster.json"
    dump.write_text(served.kubectl("get", "nodes,pods", "-A", "-o", "json").stdout)
    out = tmp_path / "scenario.yaml"
    import_files(inputs=[dump], name="round-trip", out=out)  # what ledgerlet import does
    scenario = load_scenario(out.read_text(), str(out))
    pods = {f"{o.metadata.namespace}/{o.metadata.name}": o for o in scenario.objects if o.kind == "Pod"}
    assert pods[EVICTED].status.phase == "Failed"
    assert {o.metadata.name for o in scenario.objects if o.kind == "Node"} == {NODE}


def _cert(name: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None) -> tuple[Any, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer[0] if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        ip = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        builder = builder.add_extension(x509.SubjectAlternativeName([ip]), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256()), key


def test_a_token_reaches_the_server_over_tls_only(tmp_path: Path) -> None:
    _kubectl_or_fail()
    ca_cert, ca_key = _cert("ledgerlet-test-ca", None)
    cert, key = _cert("127.0.0.1", (ca_cert.subject, ca_key))
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    files["ca"].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    asyncio.run(record(dsn))
    tls = ["--tls-cert-file", str(files["cert"]), "--tls-private-key-file", str(files["key"])]
    with serving(dsn, "--token-file", str(token), *tls, ca=files["ca"]) as url:
        with pytest.raises(InputError, match="kubectl sends a bearer token only over TLS"):
            kubeconfig(url.replace("https", "http"), token_file=token)
        with pytest.raises(Unreachable, match="wants a bearer token"):
            kubeconfig(url, certificate_authority=files["ca"])
        made = kubeconfig(url, certificate_authority=files["ca"], token_file=token, at="5m")
        config = yaml.safe_load(made)
        assert "s3cret" not in made and config["users"][0]["user"] == {"tokenFile": str(token.resolve())}
        assert config["clusters"][0]["cluster"]["certificate-authority"] == str(files["ca"].resolve())
        path = tmp_path / "kubeconfig"
        path.write_text(made)
        env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(path)}
        got = subprocess.run(["kubectl", "-n", NAMESPACE, "get", "pod", POD], capture_output=True, text=True, env=env)
        assert got.returncode == 0, got.stderr
        assert table(got.stdout)[1][:3] == [POD, "0/1", "Evicted"]
        token.write_text("wrong\n")
        denied = subprocess.run(["kubectl", "get", "pods"], capture_output=True, text=True, env=env)
        assert denied.returncode == 1 and "Unauthorized" in denied.stderr


def test_kubeconfig_names_what_is_wrong(served: Served) -> None:
    unknown = ledgerlet("kubeconfig", "--server", served.url, "--run", "nope")  # the command, as typed
    assert unknown.returncode == 2 and "--run: no run 'nope'" in unknown.stderr
    with pytest.raises(
        InputError, match=r"outside the run \(2026-01-29T09:00:00Z to 2026-01-29T09:25:00Z, 0s to 25m0s"
    ):
        kubeconfig(served.url, at="2h")
    with pytest.raises(InputError, match="is none of end, an offset such as 5m or 90, a time of day"):
        kubeconfig(served.url, at="soon")
    with pytest.raises(InputError, match="outside the run"):
        kubeconfig(served.url, at="08:59")
    with pytest.raises(Unreachable, match="cannot reach the audit API"):
        kubeconfig("http://127.0.0.1:9")
    pinned = yaml.safe_load(kubeconfig(served.url, run=RUN[:8], at="90s"))
    assert pinned["clusters"][0]["cluster"]["server"] == f"{served.url}/k8s/{RUN}/1m30s@now"
    assert pinned["current-context"] == pinned["contexts"][0]["name"]
    # clock time names the same instant; --clock recorded serves the recorded timestamps
    for at in ("09:01:30", "9:01:30", "2026-01-29T09:01:30Z", "2026-01-29T10:01:30+01:00"):
        clocked = yaml.safe_load(kubeconfig(served.url, at=at, clock="recorded"))
        assert clocked["clusters"][0]["cluster"]["server"] == f"{served.url}/k8s/{RUN}/1m30s", at
    said = ledgerlet("kubeconfig", "--server", served.url, "--at", "09:05")
    assert said.returncode == 0 and yaml.safe_load(said.stdout)["clusters"][0]["cluster"]["server"].endswith("5m0s@now")
    assert f"run {RUN} (disk-pressure-fluentd) at 5m0s, 2026-01-29T09:05:00Z; timestamps moved" in said.stderr


def test_get_raw_version_and_discovery_at_the_root(served: Served) -> None:
    """``get --raw`` drops the kubeconfig's path: the root answers what does not depend on a run."""
    version = json.loads(served.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == "v1.34.0"
    groups = json.loads(served.kubectl("get", "--raw", "/apis").stdout)
    names = {g["name"] for g in groups["groups"]}
    assert {"apps", "batch", "metrics.k8s.io", "authorization.k8s.io", "policy"} <= names
    elsewhere = served.kubectl("get", "--raw", "/api/v1/pods", ok=False)
    assert elsewhere.returncode == 1 and "/k8s/RUN/INSTANT" in elsewhere.stderr
    assert "Server Version: v1.34.0" in served.kubectl("version").stdout


def test_explain_reads_upstreams_schemas_from_openapi_v3_and_v2(served: Served) -> None:
    pod = served.kubectl("explain", "pod").stdout
    assert pod.startswith("KIND:       Pod\nVERSION:    v1\n") and "Pod is a collection of containers" in pod
    replicas = served.kubectl("explain", "deployment.spec.replicas").stdout
    assert "GROUP:      apps" in replicas and "FIELD: replicas <integer>" in replicas
    assert "Number of desired pods" in replicas
    resources = served.kubectl("explain", "pod.spec.containers.resources.limits").stdout
    assert "map[string]Quantity" in resources
    v2 = served.kubectl("explain", "pod.spec.containers.resources", "--output=plaintext-openapiv2").stdout
    assert "RESOURCE: resources <Object>" in v2 and "ResourceRequirements describes" in v2
    metrics = served.kubectl("explain", "podmetrics.containers").stdout
    assert "GROUP:      metrics.k8s.io" in metrics and "Container name corresponding" in metrics
    unknown = served.kubectl("explain", "pod.spec.nothing", ok=False)
    assert unknown.returncode == 1 and 'field "nothing" does not exist' in unknown.stderr


def test_auth_can_i_answers_read_only_truths(served: Served) -> None:
    assert served.kubectl("auth", "can-i", "get", "pods").stdout.strip() == "yes"
    assert served.kubectl("auth", "can-i", "watch", "deployments.apps", "-n", NAMESPACE).stdout.strip() == "yes"
    for args in (("create", "pods"), ("delete", "nodes"), ("get", "pods", "--subresource=log"), ("get", "secrets")):
        said = served.kubectl("auth", "can-i", *args, ok=False)
        assert said.returncode == 1 and said.stdout.startswith("no - "), (args, said.stdout)
    assert served.kubectl("auth", "can-i", "get", "/version").stdout.strip() == "yes"
    listed = served.kubectl("auth", "can-i", "--list").stdout
    assert any(line.split()[0] == "pods" and line.rstrip().endswith("[get list watch]") for line in listed.splitlines())
    who = table(served.kubectl("auth", "whoami").stdout)
    assert who[1] == ["Username", "system:anonymous"]


def test_the_daemonset_a_pod_is_controlled_by_can_be_listed(served: Served) -> None:
    """fluentd's DaemonSet: its one node should run it; its pod evicted and each replacement
    refused, at the end none runs."""
    columns = ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
    before = table(served.kubectl("-n", NAMESPACE, "get", "ds", at="4m").stdout)
    assert before == [columns, ["fluentd-elasticsearch", "1", "1", "1", "1", "1", "<none>", "4m"]]
    after = table(served.kubectl("-n", NAMESPACE, "get", "daemonsets").stdout)
    assert after[1] == ["fluentd-elasticsearch", "1", "0", "0", "0", "0", "<none>", "25m"]
    described = served.kubectl("-n", NAMESPACE, "describe", "pod", POD).stdout
    assert "Controlled By:  DaemonSet/fluentd-elasticsearch" in described
    owner = served.kubectl("-n", NAMESPACE, "get", "daemonset/fluentd-elasticsearch", "-o", "name").stdout
    assert owner.strip() == "daemonset.apps/fluentd-elasticsearch"


def test_workloads_as_stored_with_their_controllers_status(served: Served) -> None:
    out = served.kubectl("get", "deploy,rs,ds,sts,jobs", "-A", run=WORKLOADS, at="1m").stdout
    blocks = {b.splitlines()[1].split()[1].split("/")[0]: table(b) for b in out.strip().split("\n\n")}
    pods = table(served.kubectl("get", "pods", "-A", "-o", "wide", run=WORKLOADS, at="1m").stdout)[1:]
    web = [p for p in pods if p[1].startswith("web-")]
    (rs_name,) = {p[1].rsplit("-", 1)[0] for p in web}
    assert blocks["deployment.apps"][1] == ["default", "deployment.apps/web", "2/2", "2", "2", "60s"]
    assert blocks["replicaset.apps"][1] == ["default", f"replicaset.apps/{rs_name}", "2", "2", "2", "60s"]
    agents = [p for p in pods if p[1].startswith("agent-")]
    assert [p[7] for p in agents] == ["n1"]  # only the node its selector picks
    assert blocks["daemonset.apps"][1] == [
        "kube-system",
        "daemonset.apps/agent",
        "1",
        "1",
        "1",
        "1",
        "1",
        "pool=a",
        "60s",
    ]
    assert blocks["statefulset.apps"][1] == ["default", "statefulset.apps/db", "2/2", "60s"]
    (job,) = blocks["job.batch"][1:]
    assert job[:4] == ["default", "job.batch/once", "Running", "0/1"] and job[4:] == ["50s", "50s"]
    described = served.kubectl("describe", "deployment", "web", run=WORKLOADS, at="1m").stdout
    assert "2 desired | 2 updated | 2 total | 2 available | 0 unavailable" in described
    assert f"NewReplicaSet:     {rs_name} (2/2 replicas created)" in described


def _memory(top: str) -> dict[str, str]:
    return {r[-3] if len(r) > 3 else r[0]: r[-1] for r in table(top)[1:]}


def test_top_shows_what_each_pod_used_just_before_the_eviction(served: Served) -> None:
    """The run stores observations without their pods; what top shows of each is worked out
    again from the stored inputs, and is what the same run stored whole says."""
    (evicted,) = served.decisions("PodEvicted")
    just_before = f"{int(evicted['t']) - 1}s"
    derived = table(served.kubectl("top", "pods", "-n", NAMESPACE, at=just_before).stdout)
    whole = table(served.kubectl("top", "pods", "-n", NAMESPACE, at=just_before, run=FULL).stdout)
    assert derived[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert derived == whole and len(derived) > 5
    row = next(r for r in derived if r[0] == POD)
    assert row[1] == "0m" and row[2].endswith("Mi") and int(row[2][:-2]) > 0
    gone = table(served.kubectl("top", "pods", "-n", NAMESPACE, at=f"{int(evicted['t']) + 10}s").stdout)
    assert POD not in {r[0] for r in gone}  # an evicted pod runs no more
    node = table(served.kubectl("top", "nodes", at=just_before).stdout)
    assert node[0][:4] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)"] and node[1][0] == NODE
    assert node == table(served.kubectl("top", "nodes", at=just_before, run=FULL).stdout)
