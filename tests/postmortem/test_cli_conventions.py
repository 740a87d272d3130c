"""The post-mortem commands keep kubectl's habits: a pod by its bare name or with
``-n``, ``-o json|yaml|wide`` where objects are printed, errors on standard error with
nothing on standard output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ledgerlet_services.app.cli import main
from tests.conftest import EXAMPLES

TWO_DBS = """    - apiVersion: v1
      kind: Pod
      metadata: {name: db, namespace: team-b}
      spec:
        nodeName: worker-1
        containers: [{name: redis, image: "redis:7"}]
"""


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A store holding memory-pressure.yaml with a second ``db`` pod, in team-b."""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    at = text.index("    - apiVersion: v1\n      kind: Pod\n      metadata: {name: api")
    scenario = tmp_path / "two-dbs.yaml"
    scenario.write_text(text[:at] + TWO_DBS + text[at:])
    dsn = f"sqlite:///{tmp_path / 'events.db'}"
    args = ["run", str(scenario), "--quiet", "--store", dsn, "--run-id", "r1", "--decisions", str(tmp_path / "d.jsonl")]
    assert main(args) == 0
    return dsn


def test_a_pod_by_bare_name_by_n_or_by_namespace_slash_name(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "api", "--store", store]) == 0  # one namespace has an api
    by_name = capsys.readouterr().out
    assert main(["explain", "default/api", "--store", store]) == 0
    assert capsys.readouterr().out == by_name
    assert main(["explain", "api", "-n", "default", "--store", store]) == 0
    assert capsys.readouterr().out == by_name and "default/api" in by_name


def test_a_bare_name_two_namespaces_have_is_refused_naming_both(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "db", "--store", store]) == 2
    said = capsys.readouterr()
    assert not said.out
    assert "pods named 'db' in 2 namespaces of run r1: default/db, team-b/db; give -n" in " ".join(said.err.split())
    assert main(["explain", "db", "-n", "team-b", "--store", store]) == 1  # (1: it did not end)
    assert "team-b/db" in capsys.readouterr().out
    assert main(["explain", "API", "--store", store]) == 2  # names are case-sensitive (SQLite's LIKE is not)
    capsys.readouterr()
    assert main(["explain", "ghost", "--store", store]) == 2
    assert "no pod named 'ghost' in run r1" in capsys.readouterr().err
    assert main(["explain", "default/api", "-n", "default", "--store", store]) == 2


def test_explain_and_runs_print_json_and_yaml_alike(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "default/api", "-o", "json", "--store", store]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["explain", "default/api", "-o", "yaml", "--store", store]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json
    assert main(["explain", "default/api", "--json", "--store", store]) == 0
    assert json.loads(capsys.readouterr().out) == as_json
    assert main(["runs", "-o", "yaml", "--store", store]) == 0
    rows = yaml.safe_load(capsys.readouterr().out)
    assert [(r["run"], r["status"]) for r in rows] == [("r1", "completed")]
    assert main(["runs", "-o", "wide", "--store", store]) == 0
    wide = capsys.readouterr().out
    assert "720s" in wide  # the virtual duration, a column of -o wide only
    assert main(["runs", "--store", store]) == 0
    assert "720s" not in capsys.readouterr().out
