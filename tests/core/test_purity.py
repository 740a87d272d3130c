"""The decision core stays pure: checked by import-linter and by reading its code."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

CORE = ROOT / "libs" / "ledgerlet_core"
#: the control loops' handlers: thin, but held to the core's rules
LOOPS = ROOT / "services" / "ledgerlet_services" / "loops"
FORBIDDEN_CALLS = {
    "now",
    "utcnow",
    "today",
    "uuid1",
    "uuid4",
    "getrandom",
    "urandom",
    "monotonic",
    "perf_counter",
    "time_ns",
    "sleep",
}
FORBIDDEN_NAMES = {"open", "print", "input", "exec", "eval"}


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is not installed"
    res = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 7  # purity, the layers of the whole and of core and services, loops apart
    assert f"Contracts: {len(contracts)} kept, 0 broken" in res.stdout


def test_core_and_loops_read_no_clock_and_do_no_io() -> None:
    problems: list[str] = []
    for path in sorted([*CORE.rglob("*.py"), *LOOPS.rglob("*.py")]):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if name in FORBIDDEN_CALLS or (isinstance(fn, ast.Name) and name in FORBIDDEN_NAMES):
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}()")
    assert problems == []


def test_the_check_would_catch_a_clock() -> None:
    tree = ast.parse("import datetime\nx = datetime.datetime.now()\n")
    calls = [n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    assert "now" in calls and FORBIDDEN_CALLS & set(calls)
