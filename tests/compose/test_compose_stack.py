"""`docker compose up` for real: the project's compose.yaml (with the small override in
deploy/compose-test/) on a Docker engine, every service healthy through the file's own
health checks, the example post-mortem fed in as the README promises, and then faults:
the eviction manager's container stopped and started and the PostgreSQL container
restarted mid-scenario. Skipped, with the reason, where no engine can start (tests/compose/
conftest.py). The tests run in this order on one stack: the example's run first."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledgerlet_core.contracts.order import ORDER_BY_NODE
from tests.compose.stack import ComposeStack, compose_services, default_services, python_base_tags
from tests.conftest import EXAMPLES, ROOT
from tests.services.run_helpers import normalized, run_file
from tests.support.events import assert_same_events, count_events, stored_events, wait_until_stored
from tests.support.otlp import ReceivedSpan, chain_to_root
from tests.support.stack import EVICTION_TRACE

pytestmark = pytest.mark.compose

#: the example compose.yaml feeds in, and the log it writes to /out
EXAMPLE = EXAMPLES / "disk-pressure-fluentd.yaml"
EXAMPLE_LOG = "disk-pressure-fluentd.jsonl"
FAULT_RUN_PREFIX = "compose-fault-"


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _api(stack: ComposeStack) -> str:
    return f"http://127.0.0.1:{stack.port('audit-api', 8080)}"


def _example_run(stack: ComposeStack) -> str:
    """The run the example service stored (its run id is new at every drive)."""
    runs = httpx.get(f"{_api(stack)}/v1/runs", timeout=30).json()
    ours = [r for r in runs if r["source"] == EXAMPLE.name and not r["run"].startswith(FAULT_RUN_PREFIX)]
    assert len(ours) == 1, f"runs in the store: {runs}"
    return str(ours[0]["run"])


def _wait_healthy(stack: ComposeStack, timeout: float = 120) -> list[dict[str, Any]]:
    """Until every service with a health check is healthy and every other one runs."""
    checked = {name for name, svc in compose_services().items() if "healthcheck" in svc}
    deadline = time.monotonic() + timeout
    while True:
        ps = {c["Service"]: c for c in stack.ps()}
        waiting = [
            name
            for name, c in ps.items()
            if name != "example" and (c["Health"] != "healthy" if name in checked else c["State"] != "running")
        ]
        if not waiting:
            return list(ps.values())
        assert time.monotonic() < deadline, {n: (ps[n]["State"], ps[n]["Health"]) for n in waiting}
        time.sleep(1)


def test_the_images_are_built_as_people_would_ship_them(compose_stack: ComposeStack) -> None:
    engine = compose_stack.engine
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", dockerfile, re.MULTILINE)) >= 2, "a build stage and a runtime stage"
    config = json.loads(engine.docker("image", "inspect", "ledgerlet:dev").stdout)[0]["Config"]
    assert config["User"] not in ("", "root", "0"), "the services run as an unprivileged user"
    probe = (
        "id -u; for tool in gcc cc c++ clang make ld as /opt/ledgerlet/bin/pip; do command -v $tool; done;"
        " ls /tmp/extra-ca 2>/dev/null; sha256sum /etc/ssl/certs/ca-certificates.crt"
    )
    inside = engine.docker("run", "--rm", "--entrypoint", "sh", "ledgerlet:dev", "-c", probe, check=False).stdout
    uid, *rest, ca = inside.splitlines()
    assert uid != "0"
    assert rest == [], f"build tools or build inputs in the runtime image: {rest}"
    base = python_base_tags()[0]
    base_ca = engine.docker("run", "--rm", base, "sha256sum", "/etc/ssl/certs/ca-certificates.crt").stdout.strip()
    assert ca == base_ca, "the CA certificates added for the build reached the image that ships"
    assert engine.docker("run", "--rm", "ledgerlet:dev", "--version").stdout.startswith("ledgerlet ")
    committed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not [f for f in committed if f.endswith((".crt", ".pem", ".key"))], "a certificate is committed"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "out"} <= set(ignored)
    assert engine.image_size("ledgerlet:dev") < 1_000_000_000


def test_every_service_is_healthy_through_the_files_own_checks(compose_stack: ComposeStack) -> None:
    containers = _wait_healthy(compose_stack, timeout=5)
    by_service = {c["Service"]: c for c in containers}
    assert set(by_service) == set(default_services())
    assert by_service["example"]["State"] == "exited" and by_service["example"]["ExitCode"] == 0
    published = [p for c in containers for p in c.get("Publishers") or [] if p.get("PublishedPort")]
    assert published and all(p["URL"] == "127.0.0.1" for p in published), published


def test_the_example_decides_what_the_embedded_run_decides(compose_stack: ComposeStack, tmp_path: Path) -> None:
    got = _records(compose_stack.out / EXAMPLE_LOG)
    embedded, _ = asyncio.run(run_file(EXAMPLE, f"sqlite:///{tmp_path / 'embedded.db'}"))
    assert len(got) == len(embedded) > 0
    assert normalized(got) == normalized(embedded)  # (ids derive from the run id, new at each run)


def test_the_audit_api_answers_from_its_container(compose_stack: ComposeStack) -> None:
    api = _api(compose_stack)
    assert httpx.get(f"{api}/readyz", timeout=30).json()["status"] == "ready"
    run = _example_run(compose_stack)
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": "500", **({"cursor": cursor} if cursor else {})}
        answer = httpx.get(f"{api}/v1/runs/{run}/decisions", params=params, timeout=30)
        assert answer.status_code == 200 and answer.headers["Ledgerlet-Run-Status"] == "completed"
        page = answer.json()
        items += page["items"]
        cursor = page["next"]
        if not cursor:
            break
    assert {i.pop("kind") for i in items} == {"decision"}
    assert items == [{k: v for k, v in r.items() if k != "seq"} for r in _records(compose_stack.out / EXAMPLE_LOG)]


def test_a_trace_reaches_jaeger_through_the_collector(compose_stack: ComposeStack) -> None:
    """One clock tick's trace, from the driver (the example container) through the collector
    (OTLP/HTTP in, OTLP/gRPC on, as deploy/otel-collector.yaml says) to Jaeger's query API."""
    run = _example_run(compose_stack)
    jaeger = f"http://127.0.0.1:{compose_stack.port('jaeger', 16686)}"
    query = {"service": "ledgerlet-event-recorder", "operation": "event-recorder store PodEvicted", "limit": "100"}
    deadline = time.monotonic() + 60
    while True:
        spans = [
            _span(trace, s)
            for trace in httpx.get(f"{jaeger}/api/traces", params=query, timeout=30).json()["data"] or []
            for s in trace["spans"]
        ]
        stored = [s for s in spans if s.name == query["operation"] and s.attributes.get("ledgerlet.run") == run]
        if stored or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(stored) == 1, "the example evicts one pod; its stored eviction's trace is not in Jaeger"
    chain = chain_to_root(stored[0], spans)
    assert [(s.service, s.name) for s in chain] == EVICTION_TRACE
    assert len({s.trace_id for s in chain}) == 1
    assert chain[2].attributes["ledgerlet.node"] == "k8s-m1"


def _span(trace: dict[str, Any], span: dict[str, Any]) -> ReceivedSpan:
    """A span of Jaeger's query API as the tests' OTLP receiver keeps spans."""
    parents = [r["spanID"] for r in span["references"] if r["refType"] == "CHILD_OF"]
    return ReceivedSpan(
        span["traceID"],
        span["spanID"],
        parents[0] if parents else "",
        span["operationName"],
        trace["processes"][span["processID"]]["serviceName"],
        {t["key"]: t["value"] for t in span["tags"]},
    )


def _count_when_back(stack: ComposeStack, run: str, timeout: float = 60.0) -> int:
    """The run's events stored, once the restarted database answers (its published port
    may have moved)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return asyncio.run(count_events(stack.store_dsn(), run))
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_eviction_manager_and_postgres_restarted_mid_scenario_lose_nothing(
    compose_stack: ComposeStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fed as the README says (`docker compose run --rm example drive ...`); at 30% of the
    run the eviction manager's container is stopped, and while it is down (the clock waits
    for it) PostgreSQL's container restarts; then the eviction manager starts again, and
    the rest of the run is stored through the restarted database (restarted later in the
    run, it could find the run already stored, or the recorder between two appends: its
    pool checks a connection before use, so a restart then goes unnoticed). The store must
    hold exactly the embedded run's events."""
    stack = compose_stack
    run = f"{FAULT_RUN_PREFIX}{uuid.uuid4().hex[:8]}"
    embedded_dsn = f"sqlite:///{tmp_path / 'embedded.db'}"
    monkeypatch.chdir(ROOT)  # the scenario's path as the container names it: it is stored with the run
    embedded_log, _ = asyncio.run(run_file(EXAMPLE.relative_to(ROOT), embedded_dsn, run=run))
    total = asyncio.run(count_events(embedded_dsn, run))
    drive = stack.popen(
        *("run", "--rm", "--no-deps", "-T", "example"),
        *("drive", f"examples/{EXAMPLE.name}", "--decisions", "/out/fault.jsonl", "--run-id", run, "--quiet"),
        log="fault-drive",
    )
    try:
        dsn = stack.store_dsn()
        wait_until_stored(dsn, run, int(total * 0.3), drive)
        stack.compose("stop", "eviction-manager", log="faults")
        time.sleep(1.0)  # the clock waits: the eviction manager has events it has not handled
        stack.compose("restart", "postgres", log="faults")
        stored_at_restart = _count_when_back(stack, run)
        stack.compose("start", "eviction-manager", log="faults")
        code = drive.wait(600)
    finally:
        if drive.poll() is None:
            drive.kill()
    log = (stack.engine.workdir / "fault-drive.log").read_text(errors="replace")
    assert code == 0, f"the drive exited {code}:\n{log[-3000:]}"
    dsn = stack.store_dsn()  # (PostgreSQL's published port may have moved with the restart)
    assert_same_events(asyncio.run(stored_events(embedded_dsn, run)), asyncio.run(stored_events(dsn, run)))
    assert _records(stack.out / "fault.jsonl") == embedded_log
    assert re.search(r"rebuilt state from [1-9]\d* events", stack.logs("eviction-manager")), "no restart seen"
    assert stored_at_restart < total, "the run was stored before the database restarted"
    _wait_healthy(stack)


def test_the_services_containers_share_their_checkpoint_turn(compose_stack: ComposeStack) -> None:
    """One lock file in a volume every ledgerlet container mounts: while one container
    holds it (as a checkpoint's child would), another cannot have it, and then can.

    The services are live and take their own checkpoints in turn, so the holder waits for
    the turn, and the last take waits for a free one, rather than expecting either at
    once; the holder lets go only when told (a file), however slow the other take is."""
    stack = compose_stack
    holder_log = stack.engine.workdir / "turn-holder.log"
    holder_log.unlink(missing_ok=True)
    holder = stack.popen("exec", "-T", "eviction-manager", "python", "-c", _HOLD_TURN, log="turn-holder")
    take = ("exec", "-T", "stats-collector", "python", "-c", _TAKE_TURN)
    try:
        deadline = time.monotonic() + 90
        while "held" not in holder_log.read_text(errors="replace"):
            assert time.monotonic() < deadline and holder.poll() is None, holder_log.read_text(errors="replace")
            time.sleep(0.2)
        assert stack.compose(*take, log="turn", check=False).returncode == 3  # taken by the other container
    finally:
        stack.compose("exec", "-T", "eviction-manager", "touch", _LET_GO, log="turn", check=False)
        assert holder.wait(timeout=60) == 0, holder_log.read_text(errors="replace")
    deadline = time.monotonic() + 60
    while (code := stack.compose(*take, log="turn", check=False).returncode) == 3:  # a service's own checkpoint
        assert time.monotonic() < deadline, "the turn never came free"
        time.sleep(0.5)
    assert code == 0


#: the file that tells the holder to let go (in the holder's container)
_LET_GO = "/tmp/ledgerlet-let-go"

#: waits (up to 60 s: a service may be checkpointing) for the turn, says so, and holds it
#: until told to let go (at most 120 s)
_HOLD_TURN = f"""
import os, time
from ledgerlet_services.runtime.host_memory import HOST_SLOT, take_host_slot
if os.path.exists("{_LET_GO}"):
    os.unlink("{_LET_GO}")
deadline = time.monotonic() + 60
while take_host_slot(HOST_SLOT) is None:
    assert time.monotonic() < deadline, "the turn never came free"
    time.sleep(0.1)
print("held", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists("{_LET_GO}") and time.monotonic() < deadline:
    time.sleep(0.1)
"""

#: exit 0: the turn was had; 3: another container holds it
_TAKE_TURN = """
import sys
from ledgerlet_services.runtime.host_memory import HOST_SLOT, take_host_slot
assert str(HOST_SLOT) == "/run/ledgerlet/snapshot.lock", HOST_SLOT
fd = take_host_slot(HOST_SLOT)
sys.exit(3 if fd is None else 0)
"""


def test_a_scaled_up_service_runs_its_second_container_as_a_standby(compose_stack: ComposeStack) -> None:
    """`docker compose up --scale scheduler=2`, as the README says: the second container
    waits on the scheduler's lease, healthy, while the first stays active."""
    stack = compose_stack
    scale = ("up", "--detach", "--no-deps", "--no-recreate", "--wait")
    stack.compose(*scale, "--scale", "scheduler=2", "scheduler", log="scale")
    try:
        replicas = [c for c in stack.ps() if c["Service"] == "scheduler"]
        assert len(replicas) == 2 and all(c["Health"] == "healthy" for c in replicas), replicas
        deadline = time.monotonic() + 60
        while "standby (another member holds the lease)" not in (logs := stack.logs("scheduler")):
            assert time.monotonic() < deadline, logs[-3000:]
            time.sleep(1)
        assert logs.count("holds the lease: active") >= 1
    finally:
        stack.compose(*scale, "--scale", "scheduler=1", "scheduler", log="scale")
    assert len([c for c in stack.ps() if c["Service"] == "scheduler"]) == 1


def test_the_collector_serves_the_services_metrics_to_prometheus(compose_stack: ComposeStack) -> None:
    """The collector's prometheus exporter (:8889) has every service's metrics (they are
    exported once a minute: by now, at least once)."""
    url = f"http://127.0.0.1:{compose_stack.port('otel-collector', 8889)}/metrics"
    wanted = {
        ("ledgerlet_ledgerlet_events_in_total", "ledgerlet-eviction-manager"),
        ("ledgerlet_ledgerlet_decision_latency_count", "ledgerlet-eviction-manager"),
        ("ledgerlet_ledgerlet_events_stored_total", "ledgerlet-event-recorder"),
    }
    deadline = time.monotonic() + 90
    while True:
        text = httpx.get(url, timeout=30).text
        found = set(re.findall(r'^(\w+)\{.*?job="([^"]+)"', text, re.MULTILINE))
        if wanted <= found or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert wanted <= found, f"missing: {wanted - found}"


def _hosted(logs: str) -> dict[str, set[int]]:
    """Which members each container of a pooled service hosts now, from its log."""
    hosted: dict[str, set[int]] = {}
    for container, what, member in re.findall(r"^(\S+)\s+\|.*: (took|handed) member (\d) of 6", logs, re.M):
        mine = hosted.setdefault(container, set())
        (mine.add if what == "took" else mine.discard)(int(member))
    return hosted


def test_the_pool_override_shares_each_per_node_services_members_between_its_replicas(
    compose_stack: ComposeStack, tmp_path: Path
) -> None:
    """`docker compose -f compose.yaml -f deploy/compose.pool.yaml up`, as the README
    says: two containers of the stats collector and of the eviction manager share each
    service's six members (three each, by their leases), and a run driven with the
    override's --members decides what the embedded run, ordered by node, decides. The
    stack is put back as compose.yaml has it afterwards."""
    pooled = dataclasses.replace(compose_stack, files=(ROOT / "deploy" / "compose.pool.yaml",))
    up = ("up", "--detach", "--no-deps", "--wait", "--wait-timeout", "240")
    per_node = ("stats-collector", "eviction-manager")
    pooled.compose(*up, *per_node, log="pool")
    try:
        for service in per_node:  # (alone at first, one container takes all it can; then they even out)
            deadline = time.monotonic() + 120
            while sorted(map(len, (hosted := _hosted(pooled.logs(service))).values())) != [3, 3]:
                assert time.monotonic() < deadline, (hosted, pooled.logs(service)[-3000:])
                time.sleep(1)
            assert sorted(i for m in hosted.values() for i in m) == [1, 2, 3, 4, 5, 6], hosted
        run = f"{FAULT_RUN_PREFIX}pool-{uuid.uuid4().hex[:8]}"
        pooled.compose(
            *("run", "--rm", "--no-deps", "example", "drive", f"examples/{EXAMPLE.name}"),
            *("--decisions", "/out/pool.jsonl", "--run-id", run, "--quiet"),
            log="pool-drive",
        )
        got = _records(compose_stack.out / "pool.jsonl")
    finally:
        compose_stack.compose(
            *up, "--scale", "stats-collector=1", "--scale", "eviction-manager=1", *per_node, log="pool"
        )
    embedded, _ = asyncio.run(run_file(EXAMPLE, f"sqlite:///{tmp_path / 'embedded.db'}", order_scheme=ORDER_BY_NODE))
    assert len(got) == len(embedded) > 0
    assert normalized(got) == normalized(embedded)
    assert len([c for c in compose_stack.ps() if c["Service"] == "eviction-manager"]) == 1
