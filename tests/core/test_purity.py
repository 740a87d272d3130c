"""The decision core stays pure: checked by import-linter and by reading its code."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

CORE = ROOT / "libs" / "ledgerlet_core"
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
    assert "Contracts: 2 kept, 0 broken" in res.stdout


def test_core_reads_no_clock_and_does_no_io() -> None:
    problems: list[str] = []
    for path in sorted(CORE.rglob("*.py")):
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
