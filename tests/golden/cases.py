"""The scenarios whose decision logs are frozen: every example, the test data, the
scenarios other tests write on the fly (copied to ``scenarios/``), and small instances of
the benchmarks' generated shapes (eviction fleet, DaemonSets, scheduler_perf, graceful
shutdown).

A golden log is the byte-exact ``ledgerlet run --run-id golden`` output. A change that
alters one must say which bug it fixes and regenerate it (``make golden``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import yaml

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).parent / "logs"
#: scenarios frozen here only: those the tests write on the fly, and one of every workload and action
SCENARIOS = Path(__file__).parent / "scenarios"
RUN_ID = "golden"


def _bench_scenarios() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scenarios", ROOT / "bench" / "scenarios.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files() -> dict[str, Callable[[], tuple[str, str]]]:
    out: dict[str, Callable[[], tuple[str, str]]] = {}
    dirs = (ROOT / "examples", ROOT / "tests/data/scenarios", SCENARIOS)
    for path in (p for d in dirs for p in sorted(d.glob("*.yaml"))):
        out[path.stem] = lambda p=path: (p.read_text(), str(p.relative_to(ROOT)))
    return out


def _generated() -> dict[str, Callable[[], tuple[str, str]]]:
    b = _bench_scenarios()
    shapes = {
        "bench-eviction-fleet": lambda: b.cluster(8, 12, duration="40m", pressure_every=3),
        "bench-daemonsets": lambda: b.daemonset_cluster(6, 4, duration="1m"),
        "bench-scheduling-basic": lambda: b.scheduling_basic(24, 24, 60),
        "bench-preemption-basic": lambda: b.preemption_basic(8, 10),
        "bench-shutdown-110": lambda: b.shutdown_110(2, True),
    }
    return {
        name: (lambda make=make, name=name: (yaml.safe_dump(make(), sort_keys=False), f"{name}.yaml"))
        for name, make in shapes.items()
    }


def cases() -> dict[str, Callable[[], tuple[str, str]]]:
    """Name -> a function giving (scenario text, the name it is loaded under)."""
    return {**_files(), **_generated()}


def golden_path(name: str) -> Path:
    return LOGS / f"{name}.jsonl"
