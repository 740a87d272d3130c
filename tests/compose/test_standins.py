"""What the compose test is made of, checked where no engine is needed: the Kafka
stand-in's health-check tool must really ask a broker (here the tests' Tansu) and fail
when none answers; the override stays small; a machine that cannot run an engine says why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.compose import stack
from tests.compose.stack import (
    OVERRIDE,
    STANDIN_FOR,
    STANDINS,
    Engine,
    EngineUnavailable,
    compose_services,
    public_images,
)
from tests.support.brokers import free_port

PROBE = STANDINS / "kafka" / "kafka_broker_api_versions.py"


def _probe(bootstrap: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROBE), "--bootstrap-server", bootstrap, "--timeout", "5"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_kafka_health_check_asks_the_broker_for_its_api_versions(kafka_bootstrap: str) -> None:
    done = _probe(kafka_bootstrap)
    assert done.returncode == 0, done.stderr
    assert f"{kafka_bootstrap} -> (" in done.stdout
    assert "\tApiVersions(18): 0 to " in done.stdout and "\tProduce(0): 0 to " in done.stdout


def test_the_kafka_health_check_fails_when_no_broker_answers() -> None:
    done = _probe(f"127.0.0.1:{free_port()}")
    assert done.returncode == 1 and "refused" in done.stderr


def test_every_public_image_has_a_stand_in_and_the_override_stays_small() -> None:
    for image in public_images().values():
        directory, _ = STANDIN_FOR[image.rsplit(":", 1)[0]]
        assert (STANDINS / directory / "Dockerfile").exists()
    services = compose_services()
    for name, changes in yaml.safe_load(OVERRIDE.read_text().replace("!override", ""))["services"].items():
        assert name in services
        allowed = {"ports"} | ({"pull_policy"} if "build" not in services[name] else set())
        allowed |= {"volumes"} if name == "example" else set()
        assert set(changes) <= allowed, f"{name}: the override changes {set(changes) - allowed}"
        assert all(p.startswith("127.0.0.1::") for p in changes.get("ports", []))
        if "pull_policy" in changes:
            assert changes["pull_policy"] == "never"


def test_where_no_engine_can_start_the_reason_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """engine.sh preflight exits 3 with the reason (not root, not Debian, ...): the compose
    tests are skipped with it (tests/compose/conftest.py), never passed."""
    fake = tmp_path / "engine.sh"
    fake.write_text('#!/bin/sh\necho "not root: starting a Docker engine by hand needs root"\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setattr(stack, "ENGINE", fake)
    with pytest.raises(EngineUnavailable, match=r"^not root: starting a Docker engine by hand needs root$"):
        Engine(tmp_path).start()
