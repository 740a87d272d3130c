"""compose.yaml against the Compose Specification, and the image's build inputs."""

from __future__ import annotations

import json

import jsonschema
import yaml

from tests.conftest import ROOT


def test_compose_file_is_valid_compose_spec() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    jsonschema.Draft7Validator(schema).validate(compose)
    for name, svc in compose["services"].items():
        if "build" in svc:
            assert (ROOT / svc["build"]["dockerfile"]).exists(), name


def test_the_schema_check_catches_mistakes() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    bad = {"services": {"x": {"image": "a", "depends_on": {"y": {"condition": "whenever"}}}}}
    try:
        jsonschema.Draft7Validator(schema).validate(bad)
    except jsonschema.ValidationError:
        return
    raise AssertionError("an invalid depends_on condition was accepted")


def test_dockerfile_copies_what_the_package_needs() -> None:
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    for needed in ("pyproject.toml", "libs", "services", "examples"):
        assert f"COPY {needed}" in text
