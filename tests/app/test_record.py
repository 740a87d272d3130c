"""``ledgerlet record`` against a fake cluster served for real on a local port: an API
server that lists and watches (resourceVersions, chunked watch streams, watches cut off,
410 Gone once its history is compacted) and kubelets behind its node proxy answering
``/stats/summary`` (the kind v1.31 recordings), one of them silent. What is asserted is
what the store holds; time is the recorder's own (short intervals), waited for by polling
the store, never by sleeping."""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from ledgerlet_core.contracts.inputs import ClusterEventObserved, KubeletConfigObserved, StatsReported
from ledgerlet_core.contracts.order import INPUTS
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_core.scenario.documents import KubernetesLoader
from ledgerlet_core.scenario.feed import routing
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.recording import build_scenario
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.collect import Client
from ledgerlet_services.app.kubeconfig import load_kubeconfig
from ledgerlet_services.app.live_record import LiveRecorder, Recorded, Tick
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.support.waiting import until

RECORDED = Path(__file__).parents[1] / "data" / "recordings" / "kind-v1.31"
CONTROL = "kind-control-plane"
WORKER = "kind-worker"
SILENT = "kind-worker2"
#: the recorder's pace in these tests
INTERVAL = 0.05
NODE_TIMEOUT = 0.3

PATHS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    "/apis/scheduling.k8s.io/v1/priorityclasses": "priorityclasses",
    "/apis/apps/v1/replicasets": "replicasets",
    "/api/v1/events": "events",
}


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


class FakeCluster:
    """An evolving cluster as an API server and its kubelets answer: lists with a
    resourceVersion, watches that stream what changed after one, 410 Gone for a version
    older than the history kept; a summary per node (the recordings in turn)."""

    def __init__(self) -> None:
        dump = yaml.load((RECORDED / "kubectl-get-nodes-pods.yaml").read_text(), Loader=KubernetesLoader)["items"]
        node = next(o for o in dump if o["kind"] == "Node")
        self.version = 1000
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {p: {} for p in PATHS.values()}
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []
        self.compacted_below = 0
        self.cond = threading.Condition()
        self.closed = False
        #: plurals whose open watches are to be cut off (the connection dropped mid-stream)
        self.cut: set[str] = set()
        self.watches: list[tuple[str, str]] = []
        self.lists: dict[str, int] = {}
        self.silent = {SILENT}
        self.released = threading.Event()
        self.configz = json.loads((RECORDED / "configz.json").read_text())
        #: a kubelet whose configuration is not ``configz`` (changed while recording)
        self.configz_of: dict[str, dict[str, Any]] = {}
        self.configz_reads: dict[str, int] = {}
        base = [json.loads(p.read_text()) for p in sorted(RECORDED.glob("summary-*.json"))]
        self.summaries = {CONTROL: base}
        for name in (WORKER, SILENT):
            worker = copy.deepcopy(node)
            worker["metadata"]["name"] = name
            worker["metadata"]["labels"]["kubernetes.io/hostname"] = name
            self.put("nodes", worker)
            self.summaries[name] = [{**s, "node": {**s["node"], "nodeName": name}, "pods": []} for s in base]
        self.put("nodes", node)
        for pod in (o for o in dump if o["kind"] == "Pod"):
            self.put("pods", pod)
        self.served: dict[str, int] = {}
        self.slow = 0.0
        self.in_flight = self.most_in_flight = 0

    # -- the cluster changing --------------------------------------------------------------
    def put(self, plural: str, obj: dict[str, Any]) -> int:
        with self.cond:
            self.version += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.version)
            meta = obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            kind = "MODIFIED" if key in self.objects[plural] else "ADDED"
            self.objects[plural][key] = obj
            self.history.append((self.version, plural, kind, obj))
            self.cond.notify_all()
            return self.version

    def delete(self, plural: str, namespace: str, name: str) -> int:
        with self.cond:
            self.version += 1
            obj = copy.deepcopy(self.objects[plural].pop((namespace, name)))
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.history.append((self.version, plural, "DELETED", obj))
            self.cond.notify_all()
            return self.version

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        with self.cond:
            return copy.deepcopy(self.objects[plural][(namespace, name)])

    def forget(self, plural: str, namespace: str, name: str) -> None:
        """Delete an object in the history a compaction drops: only a new list shows it gone."""
        with self.cond:
            self.version += 1
            del self.objects[plural][(namespace, name)]

    def compact(self) -> None:
        """Forget the history before the current version: a watch from an older one is 410 Gone."""
        with self.cond:
            self.compacted_below = self.version
            self.cond.notify_all()

    def cut_watches(self, plural: str) -> None:
        with self.cond:
            self.cut.add(plural)
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.released.set()

    # -- answering ---------------------------------------------------------------------------
    def listing(self, plural: str) -> dict[str, Any]:
        with self.cond:
            self.lists[plural] = self.lists.get(plural, 0) + 1
            items = [_bare(o) for o in self.objects[plural].values()]
            return {
                "kind": "List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(self.version)},
                "items": items,
            }

    def summary(self, node: str) -> dict[str, Any] | None:
        if node in self.silent:
            self.released.wait()  # (a kubelet that never answers, until the test ends)
            return None
        with self.cond:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.released.wait(self.slow)  # (a kubelet that takes its time: 0 unless a test says)
        finally:
            with self.cond:
                self.in_flight -= 1
        n = self.served.get(node, 0)
        self.served[node] = n + 1
        docs: list[dict[str, Any]] = self.summaries[node]
        return docs[n % len(docs)]

    def stream(self, plural: str, since: str, handler: BaseHTTPRequestHandler) -> None:
        """Watch events after ``since``, one JSON line per chunk, until the watch is cut
        (the connection dropped, no final chunk) or the cluster closes."""
        with self.cond:
            self.watches.append((plural, since))
            self.cut.discard(plural)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def chunk(doc: dict[str, Any]) -> None:
            data = json.dumps(doc).encode() + b"\n"
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()

        last = int(since)
        if last < self.compacted_below:
            status = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410}
            chunk({"type": "ERROR", "object": {**status, "message": f"too old resource version: {last}"}})
            handler.wfile.write(b"0\r\n\r\n")
            return
        while True:
            with self.cond:
                pending = [(v, k, o) for v, p, k, o in self.history if p == plural and v > last]
                if not pending:
                    if self.closed or plural in self.cut:
                        handler.close_connection = True
                        return  # (no final chunk: the client sees the stream cut off)
                    self.cond.wait(0.5)
                    continue
            for version, kind, obj in pending:
                chunk({"type": kind, "object": obj})
                last = version


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeCluster, Path]]:
    fake = FakeCluster()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            try:
                self._answer()
            except ConnectionError:  # (a client that gave up on a silent kubelet, a watch it closed)
                self.close_connection = True

        def _answer(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path in PATHS and query.get("watch") == "1":
                fake.stream(PATHS[url.path], query.get("resourceVersion", "0"), self)
                return
            status, body = 404, {"kind": "Status", "code": 404, "message": "the server could not find it"}
            if url.path in PATHS:
                status, body = 200, fake.listing(PATHS[url.path])
            elif url.path.startswith("/api/v1/nodes/") and url.path.endswith("/proxy/stats/summary"):
                summary = fake.summary(url.path.split("/")[4])
                if summary is not None:
                    status, body = 200, summary
            elif url.path.startswith("/api/v1/nodes/") and url.path.endswith("/proxy/configz"):
                node = url.path.split("/")[4]
                fake.configz_reads[node] = fake.configz_reads.get(node, 0) + 1
                status, body = 200, fake.configz_of.get(node, fake.configz)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "kind-kind",
                "contexts": [{"name": "kind-kind", "context": {"cluster": "kind-kind", "user": "kind-kind"}}],
                "clusters": [
                    {"name": "kind-kind", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}
                ],
                "users": [{"name": "kind-kind", "user": {"token": "t"}}],
            }
        )
    )
    try:
        yield fake, config
    finally:
        fake.close()
        server.shutdown()
        server.server_close()


class Recording:
    """A recorder running in a task, and the store it writes, read as the test goes."""

    def __init__(
        self, store: SqlEventStore, config: Path, run: str, concurrency: int = 16, configz_every: int = 6
    ) -> None:
        self.recorder = LiveRecorder(
            store,
            Client(load_kubeconfig(str(config))),
            run,
            interval=INTERVAL,
            concurrency=concurrency,
            node_timeout=NODE_TIMEOUT,
            read_timeout=5.0,
            configz_every=configz_every,
        )
        self.store, self.run = store, run
        self.stop = asyncio.Event()
        self.ticks: list[Tick] = []
        self.task = asyncio.create_task(self.recorder.record(self.stop, progress=self.ticks.append))
        self.inputs: list[StoredEvent] = []

    async def read(self) -> list[StoredEvent]:
        self.inputs = await self.store.read_run(self.run, kind="input")
        return self.inputs

    async def until(self, test: Any, what: str) -> None:
        async def holds() -> bool:
            if self.task.done():
                self.task.result()  # (its failure, not a time-out)
            return bool(test(await self.read()))

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not await holds():
            assert loop.time() < deadline, f"not so after 10 s: {what}"
            await asyncio.sleep(0.01)

    async def stopped(self) -> Recorded:
        self.stop.set()
        return await self.task


def of_type(events: list[StoredEvent], type_: str) -> list[Any]:
    return [decode_data(e.envelope) for e in events if e.envelope.type == type_]


def pods_applied(events: list[StoredEvent], name: str) -> list[Any]:
    return [
        d
        for d in of_type(events, "ObjectApplied")
        if d.object["kind"] == "Pod" and d.object["metadata"]["name"] == name
    ]


def stats_of(events: list[StoredEvent], node: str) -> int:
    return sum(1 for d in of_type(events, "StatsReported") if d.node == node)


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[SqlEventStore]:
    s = await open_store(store_dsn)
    try:
        yield s
    finally:
        await s.close()


async def test_a_live_cluster_is_recorded_and_recording_again_continues_the_run(
    cluster: tuple[FakeCluster, Path], store: SqlEventStore
) -> None:
    fake, config = cluster
    rec = Recording(store, config, "live-1")
    await rec.until(lambda ev: stats_of(ev, CONTROL) >= 2 and stats_of(ev, WORKER) >= 2, "two rounds of summaries")
    [started] = of_type(rec.inputs, "ScenarioStarted")
    assert started.source.startswith("live http://127.0.0.1:") and started.duration == 0
    assert started.node_order == [CONTROL, WORKER, SILENT]
    assert started.kubelet_config["evictionHard"] == fake.configz["kubeletconfig"]["evictionHard"]
    initial = [d for d in of_type(rec.inputs, "ObjectApplied") if d.initial]
    assert sorted(d.object["kind"] for d in initial) == ["Node"] * 3 + ["Pod"] * 4
    assert {
        e.envelope.t
        for e in rec.inputs
        if e.envelope.type == "ScenarioStarted" or b'"initial":true' in bytes(e.envelope.data)
    } == {0}

    # the silent kubelet is a gap in each interval, not an error; the others go on
    missed = of_type(rec.inputs, "StatsMissed")
    assert missed and {m.node for m in missed} == {SILENT}
    assert missed[0].reason == f"no answer within {NODE_TIMEOUT:g}s"
    assert stats_of(rec.inputs, SILENT) == 0
    assert any(t.gaps == [SILENT] and t.scraped == 2 and t.nodes == 3 for t in rec.ticks)
    assert "2/3 nodes scraped, 1 gaps (kind-worker2)" in rec.ticks[0].text()

    # the summaries stored are what import then run make of the same document
    reported = next(d for d in of_type(rec.inputs, "StatsReported") if d.node == CONTROL)
    dump = yaml.load((RECORDED / "kubectl-get-nodes-pods.yaml").read_text(), Loader=KubernetesLoader)
    doc, _ = build_scenario(name="x", objects=[("dump", dump)], summaries=[("s", fake.summaries[CONTROL][0])])
    imported = load_scenario(yaml.safe_dump(doc), "x.yaml").events[0].data
    assert isinstance(imported, StatsReported)
    assert reported.summary == imported.summary

    # the cluster changes: a pod comes, a pod goes; a node's heartbeat changes nothing stored
    late = {**fake.get("pods", "default", "hog"), "metadata": {"name": "late", "namespace": "default", "uid": "u-late"}}
    late["spec"] = {**late["spec"], "nodeName": WORKER}
    fake.put("pods", late)
    fake.delete("pods", "default", "hog")
    beat = fake.get("nodes", "", WORKER)
    beat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-28T21:00:00Z"}]
    fake.put("nodes", beat)
    await rec.until(
        lambda ev: pods_applied(ev, "late") and any(d.name == "hog" for d in of_type(ev, "ObjectDeleted")),
        "the new pod and the deletion stored",
    )
    assert [d.object["spec"]["nodeName"] for d in pods_applied(rec.inputs, "late")] == [WORKER]
    assert len([d for d in of_type(rec.inputs, "ObjectApplied") if d.object["kind"] == "Node"]) == 3
    assert sum(t.changed for t in rec.ticks) == 2  # (the heartbeat is no change)
    first = await rec.stopped()
    assert not first.resumed and first.ticks >= 2
    before = await rec.read()
    stopped_at = max(e.envelope.t for e in before)

    # while nothing records: one pod goes, one comes; the rest stays as it was
    fake.delete("pods", "default", "late")
    fake.put("pods", {**late, "metadata": {"name": "later", "namespace": "default", "uid": "u-later"}})
    again = Recording(store, config, "live-1")
    await again.until(lambda ev: stats_of(ev, CONTROL) > stats_of(before, CONTROL), "a round recorded again")
    assert (await again.stopped()).resumed
    after = await again.read()
    [resumed] = of_type(after, "RecordingResumed")
    assert resumed.since == stopped_at
    new = [e for e in after if e.envelope.id not in {b.envelope.id for b in before}]
    assert min(e.envelope.t for e in new) > stopped_at
    changes = [(e.envelope.type, e.envelope.pod) for e in new if e.envelope.type.startswith("Object")]
    assert sorted(changes) == [("ObjectApplied", "default/later"), ("ObjectDeleted", "default/late")]
    assert len(of_type(after, "ScenarioStarted")) == 1
    for name in ("etcd-kind-control-plane", "web-7d9c8f6b5-x2k4q"):
        assert len(pods_applied(after, name)) == 1  # (there before and after the gap: stored once)
    assert len({e.envelope.id for e in after}) == len(after)


async def test_a_dropped_watch_resumes_from_its_last_version_and_410_gone_lists_again(
    cluster: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    fake, config = cluster
    fake.silent.clear()
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        rec = Recording(store, config, "live-2")
        await rec.until(lambda ev: stats_of(ev, WORKER) >= 1, "a first round")
        assert fake.lists.get("pods") == 1

        # the watch is cut right after a change: the next one starts from that change's version
        pod = fake.get("pods", "default", "web-7d9c8f6b5-x2k4q")
        pod["metadata"]["labels"] = {**pod["metadata"].get("labels", {}), "tier": "front"}
        version = fake.put("pods", pod)
        await rec.until(lambda ev: len(pods_applied(ev, "web-7d9c8f6b5-x2k4q")) == 2, "the change stored")
        fake.cut_watches("pods")
        await until(lambda: ("pods", str(version)) in fake.watches, what="a watch from the last version seen")
        await rec.until(lambda ev: any("pods watch resumed" in n for t in rec.ticks for n in t.notes), "said")
        assert fake.lists.get("pods") == 1  # (resumed, not listed again)

        # the history is compacted while the watch is down: 410 Gone, listed again, the difference stored
        fake.forget("pods", "default", "hog")
        fake.compact()
        fake.cut_watches("pods")
        await rec.until(lambda ev: any(d.name == "hog" for d in of_type(ev, "ObjectDeleted")), "hog deleted")
        assert fake.lists.get("pods") == 2
        assert any("410 Gone: listed again" in n for t in rec.ticks for n in t.notes)
        done = await rec.stopped()
        assert not done.resumed
        assert len(pods_applied(rec.inputs, "web-7d9c8f6b5-x2k4q")) == 2  # (not again after the new list)
        assert len(pods_applied(rec.inputs, "etcd-kind-control-plane")) == 1
        assert not of_type(rec.inputs, "StatsMissed")
    finally:
        await store.close()


def test_the_command_records_for_a_while_and_says_so(
    cluster: tuple[FakeCluster, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake, config = cluster
    fake.silent.clear()
    dsn = f"sqlite:///{tmp_path / 'e.db'}"
    args = ["record", "--kubeconfig", str(config), "--store", dsn, "--run-id", "live-3"]
    assert main([*args, "--interval", "50ms", "--for", "200ms"]) == 0
    out, err = capsys.readouterr()
    assert "run live-3 recorded:" in " ".join(out.split())
    assert "ledgerlet record --run-id live-3" in " ".join(out.split())
    assert "record live-3: t=" in err and "3/3 nodes scraped, 0 gaps" in err
    assert main([*args, "--interval", "50ms", "--for", "100ms"]) == 0
    assert "run live-3 continued:" in " ".join(capsys.readouterr().out.split())


def test_a_run_of_a_scenario_is_not_continued_as_a_recording(
    cluster: tuple[FakeCluster, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = cluster
    dsn = f"sqlite:///{tmp_path / 'e.db'}"
    scenario = Path(__file__).parents[2] / "examples" / "disk-pressure-fluentd.yaml"
    out = tmp_path / "d.jsonl"
    assert main(["run", str(scenario), "--decisions", str(out), "--store", dsn, "--run-id", "r1", "--quiet"]) == 0
    assert main(["record", "--kubeconfig", str(config), "--store", dsn, "--run-id", "r1", "--for", "1s"]) == 2
    assert "not a live recording" in capsys.readouterr().err


async def test_no_more_nodes_are_scraped_at_once_than_the_bound(
    cluster: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    fake, config = cluster
    fake.silent.clear()
    fake.slow = 0.05  # (long enough for three scrapes to overlap, were they let)
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        rec = Recording(store, config, "live-4", concurrency=2)
        await rec.until(lambda ev: all(stats_of(ev, n) >= 3 for n in (CONTROL, WORKER, SILENT)), "three rounds")
        await rec.stopped()
        assert fake.most_in_flight == 2
    finally:
        await store.close()


@pytest.mark.slow
def test_sigterm_stops_the_command_with_what_it_recorded_stored(
    cluster: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    _, config = cluster
    dsn = f"sqlite:///{tmp_path / 'e.db'}"
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "record", "--kubeconfig", str(config)]
    cmd += ["--store", dsn, "--run-id", "live-5", "--interval", "50ms", "--node-timeout", "300ms"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    async def recorded() -> list[StoredEvent]:
        await until(lambda: proc.poll() is not None or (tmp_path / "e.db").exists(), 60, "the store made")
        store = await open_store(dsn)
        try:
            while True:
                assert proc.poll() is None, proc.communicate()
                events = await store.read_run("live-5", kind="input")
                if stats_of(events, CONTROL) >= 2:
                    return events
                await asyncio.sleep(0.02)
        finally:
            await store.close()

    try:
        asyncio.run(asyncio.wait_for(recorded(), 60))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "run live-5 recorded:" in " ".join(out.split())
    assert "2/3 nodes scraped, 1 gaps (kind-worker2)" in err


def core_event(
    name: str,
    reason: str,
    about: tuple[str, str, str],
    *,
    count: int = 1,
    last: str = "2026-11-28T09:30:00Z",
    message: str = "",
    host: str = WORKER,
) -> dict[str, Any]:
    """A core v1 Event as the API server lists it (its items without kind/apiVersion)."""
    kind, namespace, obj = about
    return {
        "metadata": {"name": name, "namespace": namespace or "default", "uid": f"u-{name}"},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": obj, "uid": f"u-{obj}", "apiVersion": "v1"},
        "reason": reason,
        "message": message or f"{reason} of {obj}",
        "source": {"component": "kubelet", "host": host},
        "firstTimestamp": "2026-11-28T09:29:00Z",
        "lastTimestamp": last,
        "count": count,
        "type": "Warning" if reason in ("Evicted", "OOMKilling", "Preempted") else "Normal",
        "reportingComponent": "kubelet",
        "reportingInstance": host,
    }


def observed_of(events: list[StoredEvent], key: str) -> list[Any]:
    return [d for d in of_type(events, "ClusterEventObserved") if d.event == key]


async def test_core_events_that_tell_what_the_cluster_did_are_stored_once_per_change(
    cluster: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    fake, config = cluster
    fake.silent.clear()
    hog = ("Pod", "default", "hog")
    evicted = core_event("hog.1", "Evicted", hog, message="The node was low on resource: memory.")
    fake.put("events", evicted)
    fake.put("events", core_event("hog.0", "Scheduled", hog))  # (not a reason kept)
    fake.put("events", core_event(f"{WORKER}.1", "NodeHasInsufficientMemory", ("Node", "", WORKER)))
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        rec = Recording(store, config, "live-ev")
        await rec.until(lambda ev: stats_of(ev, WORKER) >= 1, "a first round")
        # what the cluster did before the recording began is kept at its start, as it was
        first = {
            d.event: (d, e.envelope.t)
            for e in rec.inputs
            if e.envelope.type == "ClusterEventObserved"
            for d in [decode_data(e.envelope)]
        }
        assert sorted(first) == ["default/hog.1", f"default/{WORKER}.1"]
        stored, t0 = first["default/hog.1"]
        assert t0 == 0
        assert (stored.reason, stored.type, stored.message) == ("Evicted", "Warning", evicted["message"])
        assert (stored.kind, stored.namespace, stored.name, stored.uid) == ("Pod", "default", "hog", "u-hog")
        assert (stored.component, stored.host, stored.count) == ("kubelet", WORKER, 1)
        assert (stored.first_timestamp, stored.last_timestamp) == ("2026-11-28T09:29:00Z", "2026-11-28T09:30:00Z")
        node_event = first[f"default/{WORKER}.1"][0]
        assert (node_event.kind, node_event.namespace, node_event.name) == ("Node", "", WORKER)

        # a new resourceVersion alone is not stored again; a new count and lastTimestamp is
        fake.put("events", evicted)
        fake.put("events", {**evicted, "count": 2, "lastTimestamp": "2026-11-28T09:31:00Z"})
        others = {
            "web.1": core_event("web.1", "Preempted", ("Pod", "default", "web"), host=""),
            "oom.1": core_event("oom.1", "OOMKilling", ("Node", "", WORKER)),
            "down.1": core_event("down.1", "Shutdown", ("Node", "", CONTROL), host=CONTROL),
            "taint.1": core_event("taint.1", "TaintManagerEviction", hog),
            "pulled.1": core_event("pulled.1", "Pulled", hog),
        }
        for e in others.values():
            fake.put("events", e)
        fake.delete("events", "default", "hog.0")  # (an event that expired: nothing the cluster did)
        await rec.until(lambda ev: observed_of(ev, "default/taint.1"), "the last new event stored")
        assert [d.count for d in observed_of(rec.inputs, "default/hog.1")] == [1, 2]
        assert {d.reason for d in of_type(rec.inputs, "ClusterEventObserved")} == {
            "Evicted",
            "NodeHasInsufficientMemory",
            "Preempted",
            "OOMKilling",
            "Shutdown",
            "TaintManagerEviction",
        }
        assert any(t.observed >= 1 and "observed (events" in t.text() for t in rec.ticks)

        # 410 Gone on the events' watch: listed again, and what did not change is not stored again
        fake.forget("events", "default", "down.1")  # (expired while the history was compacted)
        fake.compact()
        fake.cut_watches("events")
        await until(lambda: fake.lists.get("events") == 2, what="events listed again")
        fake.put("events", {**evicted, "count": 3, "lastTimestamp": "2026-11-28T09:32:00Z"})
        await rec.until(lambda ev: len(observed_of(ev, "default/hog.1")) == 3, "the third count stored")
        await rec.stopped()
        assert [d.count for d in observed_of(rec.inputs, "default/hog.1")] == [1, 2, 3]
        assert all(len(observed_of(rec.inputs, f"default/{k}")) == 1 for k in ("web.1", "oom.1", "taint.1"))

        # recorded again: an event that changed meanwhile is stored once more, the others not
        before = await rec.read()
        fake.put("events", {**evicted, "count": 4, "lastTimestamp": "2026-11-28T09:40:00Z"})
        again = Recording(store, config, "live-ev")
        await again.until(lambda ev: stats_of(ev, WORKER) > stats_of(before, WORKER), "a round recorded again")
        await again.stopped()
        new = [e for e in await again.read() if e.envelope.id not in {b.envelope.id for b in before}]
        assert [(d.event, d.count) for d in of_type(new, "ClusterEventObserved")] == [("default/hog.1", 4)]
    finally:
        await store.close()


async def test_a_kubelet_configuration_that_changes_is_stored_when_read_again(
    cluster: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    fake, config = cluster
    fake.silent.clear()
    store = await open_store(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        rec = Recording(store, config, "live-cfg", configz_every=2)
        await rec.until(lambda ev: stats_of(ev, WORKER) >= 3, "three rounds")
        assert not of_type(rec.inputs, "KubeletConfigObserved")  # (every kubelet as the run's start says)

        # a field the scenario does not model changes nothing stored; one it models does
        unmodelled = copy.deepcopy(fake.configz)
        unmodelled["kubeletconfig"]["staticPodPath"] = "/etc/elsewhere"
        fake.configz_of[CONTROL] = unmodelled
        changed = copy.deepcopy(fake.configz)
        changed["kubeletconfig"]["evictionHard"]["memory.available"] = "1Gi"
        fake.configz_of[WORKER] = changed
        await rec.until(lambda ev: of_type(ev, "KubeletConfigObserved"), "the change stored")
        rounds = stats_of(rec.inputs, CONTROL)
        await rec.until(lambda ev: stats_of(ev, CONTROL) >= rounds + 4, "two more reads of configz")
        [observed] = of_type(rec.inputs, "KubeletConfigObserved")
        assert observed.node == WORKER
        assert observed.config["evictionHard"]["memory.available"] == "1Gi"
        assert "staticPodPath" not in observed.config
        [env] = [e.envelope for e in rec.inputs if e.envelope.type == "KubeletConfigObserved"]
        assert env.node == WORKER
        done = await rec.stopped()
        # read at the first interval and every second one after, not at every one (the
        # first node also for the run's start; a read still on its way when the recording
        # stopped is not counted yet)
        assert done.ticks >= 6
        assert 3 <= fake.configz_reads[WORKER] <= (done.ticks + 1) // 2
        assert fake.configz_reads[CONTROL] <= (done.ticks + 1) // 2 + 1

        # recorded again: the changed configuration is known, not stored again; a change back is
        before = await rec.read()
        del fake.configz_of[WORKER]
        again = Recording(store, config, "live-cfg", configz_every=2)
        await again.until(lambda ev: len(of_type(ev, "KubeletConfigObserved")) == 2, "the change back stored")
        await again.stopped()
        back = of_type(await again.read(), "KubeletConfigObserved")[-1]
        assert back.node == WORKER and back.config["evictionHard"]["memory.available"] == "500Mi"
        assert len(of_type(before, "KubeletConfigObserved")) == 1
    finally:
        await store.close()


def test_the_loops_ignore_what_the_cluster_was_seen_to_do_and_replay_verifies(tmp_path: Path) -> None:
    """A run whose inputs hold ClusterEventObserved and KubeletConfigObserved (as a live
    recording's do, beside the stats of the same instant) re-derives the very decisions
    it stored: no loop reads them, and no step is added for them."""
    dsn = f"sqlite:///{tmp_path / 'e.db'}"
    scenario = Path(__file__).parents[2] / "examples" / "disk-pressure-fluentd.yaml"
    out = tmp_path / "d.jsonl"
    assert main(["run", str(scenario), "--decisions", str(out), "--store", dsn, "--run-id", "r1", "--quiet"]) == 0
    assert "Evicted" in out.read_text()  # (decisions to re-derive)
    assert asyncio.run(_add_observed(dsn, "r1")) == 4
    assert main(["replay", "--run", "r1", "--store", dsn, "--verify", "--no-progress"]) == 0


async def _add_observed(dsn: str, run: str) -> int:
    """An observed Evicted event and a changed kubelet configuration at two instants of
    the run's stats, after the inputs already there; how many were stored."""
    store = await open_store(dsn)
    try:
        inputs = await store.read_run(run, kind="input")
        [started] = of_type(inputs, "ScenarioStarted")
        node = started.node_order[0]
        [ended] = [e.envelope.t for e in inputs if e.envelope.type == "ScenarioEnded"]
        added = []
        # beside the start's inputs, and at an instant of the run no input had
        for t in (0, ended // 2 // 10**9 * 10**9 + 1_234_000_000):
            last = max((e.envelope.order[-1] for e in inputs if e.envelope.t == t), default=-1)
            seen = [
                ClusterEventObserved(
                    event="default/fluentd.1",
                    reason="Evicted",
                    type="Warning",
                    message="The node was low on resource: ephemeral-storage.",
                    kind="Pod",
                    namespace="default",
                    name="fluentd",
                    component="kubelet",
                    host=node,
                ),
                KubeletConfigObserved(node=node, config={"evictionHard": {"memory.available": "1Gi"}}),
            ]
            for i, data in enumerate(seen, start=last + 1):
                stream, on, pod = routing(data)
                added.append(make_envelope(data, run=run, t=t, order=[INPUTS, i], stream=stream, node=on, pod=pod))
        return await store.append_batch(added)
    finally:
        await store.close()
