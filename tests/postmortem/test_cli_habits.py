"""The command line's habits, as a shell user meets them: a closed pipe ends it quietly,
completion scripts complete, ``--help`` says every default and its variable, the
post-mortem commands print data with ``-o json|yaml``, ``--out -`` is standard output,
and progress goes to standard error only when wanted."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ledgerlet_services.app.cli import _parser, main
from ledgerlet_services.app.cli_help import ENV_VARS, DefaultsFormatter, parsers
from tests.conftest import EXAMPLES

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLI = [sys.executable, "-m", "ledgerlet_services.app.cli"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """memory-pressure (run mp) and then the fluentd incident (run fluentd, the newest)."""
    home = tmp_path_factory.mktemp("habits")
    dsn = f"sqlite:///{home / 'events.db'}"
    for example, run in (("memory-pressure.yaml", "mp"), ("disk-pressure-fluentd.yaml", "fluentd")):
        args = ["run", str(EXAMPLES / example), "--quiet", "--store", dsn, "--run-id", run]
        assert main([*args, "--decisions", str(home / f"{run}.jsonl")]) == 0
    return dsn


def _closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``ledgerlet ARGS | head -c 0``: the reader is gone before the first byte is written."""
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=60), "", err)


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(store: str) -> None:
    for args in (
        ["runs", "-o", "json", "--store", store],
        ["completion", "bash"],
        ["explain", "api", "--run", "mp", "--store", store],
    ):
        done = _closed_pipe(*args)
        assert done.returncode == 141, (args, done.stderr)  # 128 + SIGPIPE, as a shell reports a piped command
        assert done.stderr == "", (args, done.stderr)
    # a pipeline as typed: head takes what it wants, nothing is said
    shell = f"{' '.join(CLI)} runs -o json --store {store} | head -c 1"
    piped = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, "[", "")


def _bash_complete(script: Path, words: list[str], env: dict[str, str]) -> list[str]:
    """What bash offers for the last of ``words`` (the completion function as bash calls it)."""
    line = " ".join(words)
    program = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; "
        f'COMP_POINT=${{#COMP_LINE}}; _shtab_ledgerlet; printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_bash_completion_completes_commands_options_and_run_ids(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "ledgerlet.bash"
    script.write_text(capsys.readouterr().out)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # the ledgerlet on PATH is this one; run ids come from the store the shell names
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "LEDGERLET_STORE": store}
    assert _bash_complete(script, ["ledgerlet", "expl"], env) == ["explain"]
    assert set(_bash_complete(script, ["ledgerlet", "completion", ""], env)) == {"bash", "zsh", "tcsh"}
    assert "--run" in _bash_complete(script, ["ledgerlet", "replay", "--r"], env)
    assert _bash_complete(script, ["ledgerlet", "report", "--run", "f"], env) == ["fluentd"]
    assert set(_bash_complete(script, ["ledgerlet", "explain", "api", "--run", ""], env)) == {"mp", "fluentd"}


def test_zsh_completion_is_a_compdef(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["completion", "zsh"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("#compdef ledgerlet") and "explain" in text and "--store" in text
    if shutil.which("zsh"):
        path = tmp_path / "_ledgerlet"
        path.write_text(text)
        assert subprocess.run(["zsh", "-n", str(path)]).returncode == 0


def _help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """One option's help as ``--help`` prints it, on one line."""
    formatter = DefaultsFormatter(parser.prog, width=10_000)
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_help_says_every_default_and_its_variable() -> None:
    checked = 0
    for command, parser in parsers(_parser()):
        assert parser.formatter_class is DefaultsFormatter, command
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            text = _help_of(parser, action)
            assert action.help, f"{command} {action.option_strings[0]} has no help"
            if action.default not in (None, False, "", [], argparse.SUPPRESS):
                shown = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
                assert shown in text, f"{command} {action.option_strings[0]}: {text}"
                checked += 1
            env = getattr(action, "ledgerlet_env", None)
            if env is not None:
                assert env.split("=")[0] in text, f"{command} {action.option_strings[0]}: {text}"
    assert checked > 20
    # and what --help prints, for one command
    said = subprocess.run(
        [*CLI, "serve", "--help"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    )
    assert (
        "default 8080; env LEDGERLET_API_PORT" in said.stdout
        and "default 127.0.0.1; env LEDGERLET_API_HOST" in said.stdout
    )


@pytest.mark.parametrize("var", sorted({v.split("=")[0] for v in ENV_VARS.values()}))
def test_each_variable_that_sets_a_default_is_named_in_that_options_help(
    var: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def defaults() -> dict[tuple[str, str], object]:
        return {(c, a.dest): a.default for c, p in parsers(_parser()) for a in p._actions}

    monkeypatch.delenv(var, raising=False)
    before = defaults()
    monkeypatch.setenv(var, "0" if var == "LEDGERLET_LEASE" else "7")
    after = defaults()
    changed = [key for key in before if before[key] != after[key]]
    for command, parser in parsers(_parser()):
        for action in parser._actions:
            if (command, action.dest) in changed:
                assert var in _help_of(parser, action), f"{command} {action.option_strings}: {var}"


def test_whatif_replay_and_report_print_data(store: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    whatif = ["whatif", "--store", store, "--set", "evictionHard.imagefs.available=5%"]
    assert main([*whatif, "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main([*whatif, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json
    assert as_json["run"] == "fluentd" and not as_json["same"]
    assert any(c["pod"] == "kube-system/fluentd-elasticsearch-wk8xc" for c in as_json["changes"])

    assert main(["replay", "--verify", "--store", store, "--run", "mp", "-o", "json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["run"] == "mp" and replayed["verified"] is True and replayed["mismatches"] == []
    assert replayed["compared"] > 0 and replayed["decisionsDerived"] == 10

    out = tmp_path / "r.html"
    assert main(["report", "--store", store, "--out", str(out), "-o", "yaml"]) == 0
    summary = yaml.safe_load(capsys.readouterr().out)
    assert summary == {"out": str(out), "run": "fluentd", **{k: summary[k] for k in ("decisions", "evictions")}} | {
        "plots": summary["plots"],
        "nodes": 1,
    }
    assert summary["evictions"] == 1 and out.read_text().startswith("<!doctype html>")


def test_out_dash_is_standard_output(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--store", store, "--out", "-"]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("<!doctype html>") and said.out.rstrip().endswith("</html>")
    assert "-: run fluentd" in said.err
    recording = REPO / "tests" / "data" / "recordings" / "kind-v1.31"
    files = [str(recording / name) for name in ("kubectl-get-nodes-pods.yaml", "summary-093000.json")]
    assert main(["import", *files, "--out", "-"]) == 0
    said = capsys.readouterr()  # the scenario on standard output, the summary on standard error
    assert yaml.safe_load(said.out)["kind"] == "Scenario" and said.err.startswith("-: ")
    assert "run it" not in said.err


def test_progress_on_standard_error_only_when_asked_or_on_a_terminal(
    store: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["replay", "--store", store, "--run", "mp", "--progress"]) == 0
    said = capsys.readouterr()
    lines = [line for line in said.err.splitlines() if line.startswith("replay: virtual time")]
    assert lines[0] == "replay: virtual time 0s of 12m0s" and lines[-1] == "replay: virtual time 12m0s of 12m0s"
    assert "virtual time" not in said.out
    assert main(["replay", "--store", store, "--run", "mp"]) == 0  # (pytest's stderr is no terminal)
    assert "virtual time" not in capsys.readouterr().err
    assert main(["report", "--store", store, "--out", str(tmp_path / "r.html"), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "report: reading node k8s-m1 (1/2)" in err and "report: drawing the charts (2/2)" in err


def test_a_pod_of_another_run_is_named_with_its_run(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "default/api", "--store", store]) == 2  # the newest run is the fluentd incident
    err = " ".join(capsys.readouterr().err.split())
    assert "no pod 'default/api' in run fluentd" in err
    assert "it is in run mp (memory-pressure, completed): ledgerlet explain default/api --run mp" in err
    assert "ledgerlet runs" in err
    assert main(["explain", "api", "--store", store]) == 2
    assert "ledgerlet explain default/api --run mp" in " ".join(capsys.readouterr().err.split())
    assert main(["explain", "default/api", "--run", "mp", "--store", store]) == 0


@pytest.mark.slow
def test_make_run_stores_where_the_read_commands_look(tmp_path: Path) -> None:
    """``make run``'s own commands, in a directory of their own: then the README's
    post-mortem commands, with no --store and no --run, find the fluentd incident."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    recipe = subprocess.run(
        ["make", "-s", "-n", "-f", str(REPO / "Makefile"), "run", f"BIN={BIN}", "STAMP="],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    env = {k: v for k, v in os.environ.items() if k != "LEDGERLET_STORE"}
    for line in recipe.splitlines():
        if line.startswith(("mkdir", str(BIN / "ledgerlet"))):
            subprocess.run(line, shell=True, cwd=tmp_path, env=env, check=True, capture_output=True)
    assert (tmp_path / "ledgerlet.db").is_file()
    explained = subprocess.run(
        [str(BIN / "ledgerlet"), "explain", "kube-system/fluentd-elasticsearch-wk8xc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert explained.returncode == 0, explained.stderr
    assert "evicted" in explained.stdout.lower()
