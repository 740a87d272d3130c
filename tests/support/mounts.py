"""Filesystems of a test's own (tmpfs, as root): full, or read-only, for real; skipped,
saying why, where nothing can be mounted."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class Mount:
    def __init__(self, path: Path) -> None:
        self.path = path

    def read_only(self) -> None:
        """Remount read-only: what is there stays readable, nothing can be written."""
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True, capture_output=True)


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "64m") -> Iterator[Mount]:
    """A tmpfs of ``size`` at ``where`` until the block ends."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "ledgerlet-test", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield Mount(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
