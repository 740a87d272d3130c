"""compose.yaml against the Compose Specification, and what the stack needs of it."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from typing import Any

import jsonschema
import pytest
import yaml

from ledgerlet_bus.kafka import parse_bus_url
from ledgerlet_services.runtime.catalog import AUDIT_API, needs_bus, parse_members, service_names
from tests.conftest import ROOT

#: the schema the issue names, when the shared tree is there; the vendored copy otherwise
SHARED_SCHEMA = ROOT.parent / "shared" / "schemas" / "compose-spec.json"
VENDORED_SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"
#: the Compose Specification schema compose.yaml is checked against, by its digest (the
#: shared tree's copy when it was vendored): an edit to the vendored copy is seen in every
#: clone, and a shared copy that moved on is seen where the shared tree is there
SCHEMA_SHA256 = "1f91e091f16b2dd50ab8860e02bb391d22df553d91c145eacedb1b6eff9c3f0e"


def _schema() -> dict[str, Any]:
    path = SHARED_SCHEMA if SHARED_SCHEMA.exists() else VENDORED_SCHEMA
    return dict(json.loads(path.read_text()))


def _compose() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "compose.yaml").read_text()))


def test_compose_file_is_valid_compose_spec() -> None:
    compose = _compose()
    jsonschema.Draft7Validator(_schema()).validate(compose)
    for name, svc in compose["services"].items():
        if "build" in svc:
            assert (ROOT / svc["build"]["context"] / svc["build"]["dockerfile"]).exists(), name
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./deploy"):
                assert (ROOT / source).exists(), f"{name}: {source}"
            elif not source.startswith(("./", "${")):  # (a path, or one the user gives: a bind mount)
                assert source in compose["volumes"], f"{name}: named volume {source} is not declared"


def test_the_vendored_schema_is_the_pinned_one() -> None:
    assert hashlib.sha256(VENDORED_SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    schema = json.loads(VENDORED_SCHEMA.read_text())
    assert (schema["$id"], schema["title"]) == ("compose_spec.json", "Compose Specification")
    if SHARED_SCHEMA.exists():  # (not in a clean clone: the vendored copy is checked there)
        assert hashlib.sha256(SHARED_SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256


def test_the_schema_check_catches_mistakes() -> None:
    bad = {"services": {"x": {"image": "a", "depends_on": {"y": {"condition": "whenever"}}}}}
    try:
        jsonschema.Draft7Validator(_schema()).validate(bad)
    except jsonschema.ValidationError:
        return
    raise AssertionError("an invalid depends_on condition was accepted")


def test_every_service_the_code_defines_has_a_healthy_compose_entry() -> None:
    services = _compose()["services"]
    for name in service_names():
        assert name in services, f"compose.yaml has no entry for the {name} service"
        svc = services[name]
        assert svc["command"] == ["service", name]
        assert svc["healthcheck"]["test"] == ["CMD", "ledgerlet", "health", name]
        if needs_bus(name):
            assert svc["depends_on"]["kafka"]["condition"] == "service_healthy"
        assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"
        env = svc["environment"]
        parse_bus_url(env["LEDGERLET_BUS"])
        assert env["LEDGERLET_STORE"].startswith("postgresql://")
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"].startswith("http://otel-collector:")
    # the example drive waits for every service to be healthy
    waits_for = services["example"]["depends_on"]
    assert all(waits_for[n]["condition"] == "service_healthy" for n in service_names())


def _seconds(duration: str) -> float:
    """A compose duration (``10s``, ``2m30s``) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


@pytest.mark.parametrize("override", [None, "deploy/compose.pool.yaml"])
def test_every_service_gives_up_stopping_before_compose_kills_it(override: str | None) -> None:
    """A service's stop budget (LEDGERLET_STOP_BUDGET, after which it exits anyway and
    says what it left) ends comfortably before compose's stop_grace_period, after which
    compose kills it without a word."""
    services = _merged(override) if override else _compose()["services"]
    for name in service_names():
        if name == AUDIT_API:
            continue  # (uvicorn's own stop: no batch, commit or hand-over to bound)
        svc = services[name]
        budget = float(svc["environment"]["LEDGERLET_STOP_BUDGET"])
        grace = _seconds(svc["stop_grace_period"])
        assert 0 < budget <= grace - 2, f"{name}: budget {budget:g}s, grace {grace:g}s"


def test_the_recorder_records_into_the_stacks_store_only_when_asked() -> None:
    """``ledgerlet record`` runs under its own profile (``make up`` does not start it),
    into the PostgreSQL the stack's services use, with the user's kubeconfig mounted
    read-only from the path LEDGERLET_KUBECONFIG gives; its stop (the interval under way,
    at most --node-timeout, then one write) ends before compose kills it."""
    services = _compose()["services"]
    rec = services["recorder"]
    assert rec["profiles"] == ["record"]
    assert all("profiles" not in svc for name, svc in services.items() if name != "recorder")
    command = rec["command"]
    assert command[0] == "record"
    kubeconfig = command[command.index("--kubeconfig") + 1]
    [(source, mode)] = [
        (v.rsplit(":", 2)[0], v.rsplit(":", 2)[2]) for v in rec["volumes"] if v.rsplit(":", 2)[1] == kubeconfig
    ]
    assert mode == "ro"
    assert re.fullmatch(r"\$\{LEDGERLET_KUBECONFIG(:-[^}]+)?\}", source), source
    store = rec["environment"]["LEDGERLET_STORE"]
    assert store == services["audit-api"]["environment"]["LEDGERLET_STORE"]
    assert store.startswith("postgresql://") and "@postgres:" in store
    assert rec["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "kafka" not in rec["depends_on"]  # (no bus: it writes the store alone)
    node_timeout = _seconds(command[command.index("--node-timeout") + 1])
    assert node_timeout <= _seconds(rec["stop_grace_period"]) - 2
    assert "LEDGERLET_STOP_BUDGET" not in rec["environment"]  # (record does not read it)
    run = command[command.index("--run-id") + 1]
    assert re.fullmatch(r"\$\{LEDGERLET_RECORD_RUN:-[a-z0-9][a-z0-9._-]*\}", run), run


def test_kafka_runs_in_kraft_mode_with_the_official_image() -> None:
    kafka = _compose()["services"]["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft: no ZooKeeper
    assert "zookeeper" not in json.dumps(_compose()).lower()
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"  # services create their topics


def test_collector_pipelines_use_what_the_config_defines() -> None:
    config = yaml.safe_load((ROOT / "deploy" / "otel-collector.yaml").read_text())
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"{component} is not defined under {kind}"
    jaeger = config["exporters"]["otlp/jaeger"]["endpoint"].split(":")[0]
    assert jaeger in _compose()["services"]


def test_dockerfile_copies_what_the_package_needs() -> None:
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    for needed in ("pyproject.toml", "libs", "services", "examples"):
        assert f"COPY {needed}" in text
    stages = re.findall(r"^FROM (\S+)(?: AS ([\w-]+))?$", text, re.MULTILINE)
    assert len(stages) >= 2 and stages[-1][1] == ""  # built in a stage of its own; one image ships
    ledgerlet = [svc for svc in _compose()["services"].values() if "build" in svc]
    assert {svc["image"] for svc in ledgerlet} == {"ledgerlet:dev"}  # one image for every service


def _merged(override: str) -> dict[str, Any]:
    """The services of compose.yaml with ``override``, as compose itself merges them."""
    from tests.compose.stack import compose_binary

    merged = subprocess.run(
        [str(compose_binary()), "-f", "compose.yaml", "-f", override, "config"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(yaml.safe_load(merged)["services"])


@pytest.mark.parametrize("service", ["stats-collector", "eviction-manager"])
def test_the_members_override_splits_the_per_node_services_three_ways(service: str) -> None:
    """``docker compose -f compose.yaml -f deploy/compose.members.yaml``, as compose
    itself merges it: members 1/3..3/3 of each per-node service, each health-checked as
    the service is, and the example's driver waiting for all of them."""
    services = _merged("deploy/compose.members.yaml")
    members = [service, f"{service}-2", f"{service}-3"]
    assert [services[m]["environment"]["LEDGERLET_MEMBER"] for m in members] == ["1/3", "2/3", "3/3"]
    bus = services["scheduler"]["environment"]["LEDGERLET_BUS"]
    for m in members:
        assert services[m]["command"] == ["service", service]
        assert services[m]["healthcheck"]["test"] == ["CMD", "ledgerlet", "health", service]
        assert services[m]["environment"]["LEDGERLET_BUS"] == bus
    example = services["example"]
    assert parse_members(example["environment"]["LEDGERLET_MEMBERS"]) == {"stats-collector": 3, "eviction-manager": 3}
    assert all(example["depends_on"][m]["condition"] == "service_healthy" for m in members)


@pytest.mark.parametrize("service", ["stats-collector", "eviction-manager"])
def test_the_pool_override_shares_each_per_node_service_between_replicas(service: str) -> None:
    """``docker compose -f compose.yaml -f deploy/compose.pool.yaml``, as compose itself
    merges it: two replicas of each per-node service sharing its six members
    (``LEDGERLET_POOL``, read by ``ledgerlet service`` as ``--pool``), health-checked as
    the service is, and the example's driver waiting for the six members of each."""
    services = _merged("deploy/compose.pool.yaml")
    pooled = services[service]
    assert pooled["deploy"]["replicas"] == 2
    assert pooled["stop_grace_period"] == "2m30s"  # (members are checkpointed as they are handed over)
    assert "container_name" not in pooled  # (replicas need compose to name them)
    assert pooled["command"] == ["service", service]
    assert pooled["healthcheck"]["test"] == ["CMD", "ledgerlet", "health", service]
    pool = int(pooled["environment"]["LEDGERLET_POOL"])
    example = services["example"]
    assert parse_members(example["environment"]["LEDGERLET_MEMBERS"])[service] == pool
