"""``ledgerlet health NAME``, compose's health check: a passing check is answered without
loading the product (it runs every ten seconds in every container), and everything else
behaves as the full command line does."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = """
import sys
from ledgerlet_services.app.entry import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("ledgerlet_services.app.cli", "sqlalchemy", "aiokafka", "numpy") if m in sys.modules)
print(",".join(heavy))
sys.exit(code)
"""


def _health(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "LEDGERLET_HEALTH_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "health", *args], env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout.strip(), done.stderr


def _beat(tmp_path: Path, name: str, age: float = 0.0) -> None:
    path = tmp_path / f"ledgerlet-{name}.alive"
    path.write_text("beat\n")
    os.utime(path, (time.time() - age, time.time() - age))


@pytest.mark.parametrize("extra", [[], ["--max-age", "5"], ["--max-age=5"]])
def test_a_fresh_heartbeat_is_healthy_without_loading_the_product(tmp_path: Path, extra: list[str]) -> None:
    _beat(tmp_path, "eviction-manager", age=1)
    code, heavy, _ = _health(tmp_path, "eviction-manager", *extra)
    assert (code, heavy) == (0, "")


@pytest.mark.slow
def test_a_stale_or_missing_heartbeat_fails_through_the_full_command_line(tmp_path: Path) -> None:
    _beat(tmp_path, "eviction-manager", age=60)
    code, heavy, _ = _health(tmp_path, "eviction-manager")
    assert code == 1 and "ledgerlet_services.app.cli" in heavy
    assert _health(tmp_path, "eviction-manager", "--max-age", "120")[0] == 0
    assert _health(tmp_path, "scheduler")[0] == 1


@pytest.mark.slow
def test_a_name_no_service_has_is_refused_as_before(tmp_path: Path) -> None:
    code, _, err = _health(tmp_path, "evicton-manager")
    assert code == 2 and "invalid choice" in err
    assert _health(tmp_path, "../eviction-manager")[0] == 2  # a path is never a service name
