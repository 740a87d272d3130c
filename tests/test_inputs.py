"""Files the command line reads are read within the loader's size limit whatever they
are: a regular file's size is asked first; anything else is read up to the limit only
(``/dev/zero`` was read until memory ran out: the size check trusted the reported 0)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app.cli import load_or_report
from ledgerlet_services.app.inputs import read_bounded
from tests.conftest import EXAMPLES


def test_a_device_is_read_only_up_to_the_limit() -> None:
    with pytest.raises(InputError, match="more than 1,048,576 bytes") as info:
        read_bounded(Path("/dev/zero"), "/dev/zero", limit=1 << 20)
    assert info.value.file == "/dev/zero"


READ_DEV_ZERO = """
import sys
from pathlib import Path
from rich.console import Console
from ledgerlet_core.scenario import bounds
bounds.MAX_SCENARIO_BYTES = 1 << 20
from ledgerlet_services.app.cli import load_or_report
sys.exit(0 if load_or_report(Path("/dev/zero"), Console()) is None else 1)
"""


def test_the_command_line_refuses_dev_zero_instead_of_reading_it_for_ever() -> None:
    """As ``ledgerlet run /dev/zero`` reads it (the limit lowered to a megabyte here: the
    real one is a gigabyte, read before the refusal)."""
    res = subprocess.run([sys.executable, "-c", READ_DEV_ZERO], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "/dev/zero: more than 1,048,576 bytes" in " ".join(res.stderr.split())


def test_a_regular_file_past_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(10 << 20)  # (sparse: nothing to read, only its size to ask)
    with pytest.raises(InputError, match="file is 10,485,760 bytes"):
        read_bounded(big, str(big), limit=1 << 20)


def _feed(fifo: Path, data: bytes) -> threading.Thread:
    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as f:
            f.write(data)  # (the reader stops at the limit and closes)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_read_within_the_limit(tmp_path: Path) -> None:
    """Process substitution (``<(gen-scenario)``) gives a FIFO: it still loads."""
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    writer = _feed(fifo, (EXAMPLES / "memory-pressure.yaml").read_bytes())
    scenario = load_or_report(fifo, Console())
    writer.join(10)
    assert scenario is not None and scenario.name == "memory-pressure"
    writer = _feed(fifo, b"x" * (2 << 20))
    with pytest.raises(InputError, match="more than 1,048,576 bytes"):
        read_bounded(fifo, str(fifo), limit=1 << 20)
    writer.join(10)
