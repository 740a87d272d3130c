"""``ledgerlet collect`` against a small fake API server over HTTPS (its own CA; a
bearer token or a client certificate, as kubeconfigs give them): the objects once, the
kubelet's configz, each node's /stats/summary per round; ``import`` reads the directory
and the run decides as from the recordings."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.documents import KubernetesLoader
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.collect import ApiError, Client, collect
from ledgerlet_services.app.kubeconfig import load_kubeconfig

RECORDED = Path(__file__).parents[1] / "data" / "recordings" / "kind-v1.31"
SUMMARIES = sorted(RECORDED.glob("summary-*.json"))
TOKEN = "s3cr3t-t0ken"
NODE = "kind-control-plane"


def _as_api_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """As the API server lists: a typed list whose items carry no kind or apiVersion."""
    bare = [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")} for i in items]
    return {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {"resourceVersion": "1000"}, "items": bare}


class FakeApiServer:
    """Answers the GETs collect makes; counts summary requests to step through rounds."""

    def __init__(self) -> None:
        text = (RECORDED / "kubectl-get-nodes-pods.yaml").read_text()
        dump = yaml.load(text, Loader=KubernetesLoader)["items"]  # (timestamps stay text)
        self.paths: dict[str, Any] = {
            "/api/v1/nodes": _as_api_list("Node", [o for o in dump if o["kind"] == "Node"]),
            "/api/v1/pods": _as_api_list("Pod", [o for o in dump if o["kind"] == "Pod"]),
            f"/api/v1/nodes/{NODE}/proxy/configz": json.loads((RECORDED / "configz.json").read_text()),
        }
        for plural, group in [("priorityclasses", "apis/scheduling.k8s.io/v1"), ("persistentvolumes", "api/v1")]:
            self.paths[f"/{group}/{plural}"] = _as_api_list("X", [])
        self.summaries = [json.loads(p.read_text()) for p in SUMMARIES]
        self.served = 0
        self.seen_auth: list[str] = []

    def answer(self, path: str, auth: str, client_cert: bool) -> tuple[int, Any]:
        self.seen_auth.append(auth or ("client-certificate" if client_cert else ""))
        if auth != f"Bearer {TOKEN}" and not client_cert:
            return 401, {"kind": "Status", "status": "Failure", "message": "Unauthorized", "code": 401}
        if path == f"/api/v1/nodes/{NODE}/proxy/stats/summary":
            summary = self.summaries[min(self.served, len(self.summaries) - 1)]
            self.served += 1
            return 200, summary
        if path in self.paths:
            return 200, self.paths[path]
        message = f"the server could not find the requested resource (get {path.rsplit('/', 1)[-1]})"
        return 404, {"kind": "Status", "status": "Failure", "message": message, "code": 404}


def _cert(name: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None, **ext: Any) -> tuple[Any, Any]:
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
    if ext.get("ip"):
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ext["ip"])]), critical=False)
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    return cert, key


def _pem(cert: Any, key: Any) -> tuple[bytes, bytes]:
    return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    ca_cert, ca_key = _cert("fake-kubernetes-ca", None)
    server_cert, server_key = _cert("kube-apiserver", (ca_cert.subject, ca_key), ip=ipaddress.ip_address("127.0.0.1"))
    client_cert, client_key = _cert("kubernetes-admin", (ca_cert.subject, ca_key))
    ca_pem, _ = _pem(ca_cert, ca_key)
    server = _pem(server_cert, server_key)
    client = _pem(client_cert, client_key)
    return {"ca": ca_pem, "server_cert": server[0], "server_key": server[1], "cert": client[0], "key": client[1]}


@pytest.fixture
def api(pki: dict[str, bytes], tmp_path: Path) -> Iterator[tuple[str, FakeApiServer]]:
    fake = FakeApiServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            status, body = fake.answer(self.path, self.headers.get("Authorization", ""), bool(peer))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    (tmp_path / "server.crt").write_bytes(pki["server_cert"])
    (tmp_path / "server.key").write_bytes(pki["server_key"])
    (tmp_path / "ca.crt").write_bytes(pki["ca"])
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    ctx.load_verify_locations(tmp_path / "ca.crt")
    ctx.verify_mode = ssl.CERT_OPTIONAL  # a client certificate, or a token
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", fake
    finally:
        server.shutdown()
        server.server_close()


def _kubeconfig(path: Path, server: str, user: dict[str, Any], cluster: dict[str, Any]) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kind-kind",
        "contexts": [{"name": "kind-kind", "context": {"cluster": "kind-kind", "user": "kind-kind"}}],
        "clusters": [{"name": "kind-kind", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "kind-kind", "user": user}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_collect_then_import_decides_as_the_recordings_do(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, fake = api
    config = _kubeconfig(
        tmp_path / "kubeconfig", server, {"token": TOKEN}, {"certificate-authority-data": _b64(pki["ca"])}
    )
    out = tmp_path / "recording"
    args = ["collect", "--kubeconfig", str(config), "--interval", "10ms", "--rounds", "3", "--out", str(out)]
    assert main(args) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "1 nodes, 4 pods; 3 summaries over 3 rounds of 1 nodes" in said
    assert "runtimeclasses not recorded (GET /apis/node.k8s.io/v1/runtimeclasses: HTTP 404: the server" in said
    assert fake.served == 3 and set(fake.seen_auth) == {f"Bearer {TOKEN}"}
    assert sorted(p.name for p in (out / "summaries" / NODE).iterdir()) == ["00000.json", "00001.json", "00002.json"]

    scenario = tmp_path / "scenario.yaml"
    assert main(["import", str(out), "--out", str(scenario)]) == 0
    log, store = tmp_path / "d.jsonl", f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["run", str(scenario), "--decisions", str(log), "--store", store, "--quiet"]) == 0
    evicted = [json.loads(line) for line in log.read_text().splitlines() if '"PodEvicted"' in line]
    # the recordings' own outcome (tests/postmortem/test_import_recordings.py)
    assert [(r["pod"], r["t"]) for r in evicted] == [("default/hog", 20.0)]


def test_a_client_certificate_from_files_authenticates(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path
) -> None:
    server, fake = api
    for name in ("ca", "cert", "key"):
        (tmp_path / f"{name}.pem").write_bytes(pki[name])
    user = {"client-certificate": "cert.pem", "client-key": "key.pem"}  # relative to the kubeconfig
    config = _kubeconfig(tmp_path / "kubeconfig", server, user, {"certificate-authority": "ca.pem"})
    done = collect(Client(load_kubeconfig(config)), tmp_path / "out", interval=0, rounds=1)
    assert done.summaries == 1 and set(fake.seen_auth) == {"client-certificate"}


def test_a_server_not_signed_by_the_ca_is_refused(api: tuple[str, FakeApiServer], tmp_path: Path) -> None:
    server, fake = api
    other_ca, other_key = _cert("someone-else", None)
    config = _kubeconfig(
        tmp_path / "kubeconfig",
        server,
        {"token": TOKEN},
        {"certificate-authority-data": _b64(_pem(other_ca, other_key)[0])},
    )
    assert main(["collect", "--kubeconfig", str(config), "--rounds", "1", "--out", str(tmp_path / "o")]) == 1
    assert fake.seen_auth == []  # nothing was sent to it


def test_wrong_credentials_and_failing_exec_plugins_say_so(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = api
    ca = {"certificate-authority-data": _b64(pki["ca"])}
    wrong = _kubeconfig(tmp_path / "wrong", server, {"token": "nope"}, ca)
    assert main(["collect", "--kubeconfig", str(wrong), "--rounds", "1", "--out", str(tmp_path / "o")]) == 1
    assert "GET /api/v1/nodes: HTTP 401: Unauthorized" in capsys.readouterr().err
    assert (
        main(["collect", "--kubeconfig", str(wrong), "--token", TOKEN, "--rounds", "1", "--out", str(tmp_path / "o")])
        == 0
    )
    capsys.readouterr()
    # a plugin that is not there (aws on a machine without it): named, nothing written
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws-not-installed", "args": ["eks"]}
    plugin = _kubeconfig(tmp_path / "exec", server, {"exec": exec_}, ca)
    assert main(["collect", "--kubeconfig", str(plugin), "--out", str(tmp_path / "p")]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"{plugin}: context kind-kind: the exec credential plugin 'aws-not-installed' failed:" in said
    assert not (tmp_path / "p").exists()
    # --token instead never runs the plugin; an earlier recording is never mixed in
    args = ["collect", "--kubeconfig", str(plugin), "--token", TOKEN, "--rounds", "1", "--out", str(tmp_path / "p")]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 1 and "is not an empty directory" in capsys.readouterr().err


def test_a_ca_written_over_several_lines_is_read(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path
) -> None:
    server, _ = api
    folded = "\n".join(_b64(pki["ca"])[i : i + 64] for i in range(0, len(_b64(pki["ca"])), 64))
    config = _kubeconfig(tmp_path / "kubeconfig", server, {"token": TOKEN}, {"certificate-authority-data": folded})
    assert collect(Client(load_kubeconfig(config)), tmp_path / "out", interval=0, rounds=1).summaries == 1


def _plugin(tmp_path: Path, credential: dict[str, Any], *, exit_code: int = 0) -> Path:
    """An exec credential plugin: a script that records what kubectl's protocol hands it
    (KUBERNETES_EXEC_INFO, its arguments) and prints an ExecCredential."""
    script = tmp_path / "credential-plugin"
    seen = tmp_path / "plugin-saw.json"
    script.write_text(
        f"""#!{sys.executable}
import json, os, sys
with open({str(seen)!r}, "a") as f:
    f.write(json.dumps({{"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "argv": sys.argv[1:],
                        "region": os.environ.get("AWS_REGION")}}) + "\\n")
if {exit_code}:
    print("token expired: run the login first", file=sys.stderr)
    sys.exit({exit_code})
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {json.dumps(credential)}}}))
"""
    )
    script.chmod(0o755)
    return script


def _exec_user(script: Path) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(script),
            "args": ["token", "-i", "kind"],
            "env": [{"name": "AWS_REGION", "value": "eu-west-1"}],
            "interactiveMode": "Never",
        }
    }


def test_an_exec_plugin_is_run_and_its_token_sent(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path
) -> None:
    server, fake = api
    script = _plugin(tmp_path, {"token": TOKEN, "expirationTimestamp": "2099-01-01T00:00:00Z"})
    config = _kubeconfig(
        tmp_path / "kubeconfig", server, _exec_user(script), {"certificate-authority-data": _b64(pki["ca"])}
    )
    done = collect(Client(load_kubeconfig(config)), tmp_path / "out", interval=0, rounds=2)
    assert done.summaries == 2 and set(fake.seen_auth) == {f"Bearer {TOKEN}"}
    (saw,) = [json.loads(line) for line in (tmp_path / "plugin-saw.json").read_text().splitlines()]
    assert saw["argv"] == ["token", "-i", "kind"] and saw["region"] == "eu-west-1"
    assert saw["info"]["kind"] == "ExecCredential" and saw["info"]["apiVersion"] == "client.authentication.k8s.io/v1"


def test_an_exec_plugin_may_give_a_client_certificate(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path
) -> None:
    server, fake = api
    credential = {"clientCertificateData": pki["cert"].decode(), "clientKeyData": pki["key"].decode()}
    script = _plugin(tmp_path, credential)
    config = _kubeconfig(
        tmp_path / "kubeconfig", server, _exec_user(script), {"certificate-authority-data": _b64(pki["ca"])}
    )
    assert collect(Client(load_kubeconfig(config)), tmp_path / "out", interval=0, rounds=1).summaries == 1
    assert set(fake.seen_auth) == {"client-certificate"}


def test_a_failing_exec_plugin_says_what_it_said(
    api: tuple[str, FakeApiServer], pki: dict[str, bytes], tmp_path: Path
) -> None:
    server, fake = api
    script = _plugin(tmp_path, {}, exit_code=3)
    config = _kubeconfig(
        tmp_path / "kubeconfig", server, _exec_user(script), {"certificate-authority-data": _b64(pki["ca"])}
    )
    with pytest.raises(InputError) as err:
        load_kubeconfig(config)
    assert f"the exec credential plugin {str(script)!r} failed: exec: process returned 3" in str(err.value)
    assert "token expired: run the login first" in str(err.value) and fake.seen_auth == []


def test_kubeconfig_lists_are_merged_as_kubectl_merges_them(
    api: tuple[str, FakeApiServer],
    pki: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """KUBECONFIG=a:b: the first file to name a cluster, user or context wins, and the
    first current-context set; each file's relative paths are its own (client-go's
    clientcmd loading rules)."""
    server, fake = api
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "ca.pem").write_bytes(pki["ca"])
    (tmp_path / "b" / "token").write_text(TOKEN)
    a = tmp_path / "a" / "config"
    a.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "prod",
                "clusters": [{"name": "prod", "cluster": {"server": server, "certificate-authority": "ca.pem"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "sre"}}],
            }
        )
    )
    b = tmp_path / "b" / "config"
    b.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "elsewhere",  # (a's is set first: a's wins)
                "clusters": [{"name": "prod", "cluster": {"server": "https://127.0.0.1:1"}}],  # shadowed by a's
                "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "nobody"}}],  # shadowed
                "users": [{"name": "sre", "user": {"tokenFile": "token"}}],  # relative to b/
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", f"{a}:{tmp_path / 'missing'}:{b}")
    out = tmp_path / "recording"
    assert main(["collect", "--interval", "0s", "--rounds", "1", "--out", str(out)]) == 0
    assert set(fake.seen_auth) == {f"Bearer {TOKEN}"}
    assert "1 summaries over 1 rounds of 1 nodes" in " ".join(capsys.readouterr().out.split())
    # the other way round, b's context and cluster would be used: unreachable
    monkeypatch.setenv("KUBECONFIG", f"{b}:{a}")
    assert main(["collect", "--context", "prod", "--rounds", "1", "--out", str(tmp_path / "r2")]) == 1
    assert "127.0.0.1:1" in capsys.readouterr().err


def test_a_redirect_is_refused_and_the_token_never_follows_it(tmp_path: Path) -> None:
    """urllib3 would follow it (to another host, or plain http) with the bearer token on;
    kubectl's client does not send it there: collect stops."""
    seen: list[str] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)

    class Redirecting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_address[1]}{self.path}")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    first = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    for s in (other, first):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        config = _kubeconfig(
            tmp_path / "kubeconfig", f"http://127.0.0.1:{first.server_address[1]}", {"token": TOKEN}, {}
        )
        with pytest.raises(
            ApiError, match=r"HTTP 302: redirected to http://127\.0\.0\.1:\d+/api/v1/nodes: not followed"
        ):
            Client(load_kubeconfig(config)).get("/api/v1/nodes")
        assert seen == []
    finally:
        for s in (other, first):
            s.shutdown()
            s.server_close()
