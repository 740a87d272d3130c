"""Liveness by heartbeat file: a service touches its file while its loop turns, and
``ledgerlet health NAME`` (compose's health check) reads the file's age. Nothing heavy is
imported here: the check runs every few seconds in every container."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

HEALTH_DIR = Path(os.environ.get("LEDGERLET_HEALTH_DIR", "/tmp"))
#: seconds a heartbeat counts as recent (``ledgerlet health --max-age``)
DEFAULT_MAX_AGE = 30.0


def health_file(name: str) -> Path:
    return HEALTH_DIR / f"ledgerlet-{name}.alive"


class Heartbeat:
    """Touches a file while the service loop turns (compose's health check reads its age)."""

    def __init__(self, path: Path | None, every: float = 1.0) -> None:
        self.path = path
        self.every = every
        self._last = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if self.path is None or now - self._last < self.every:
            return
        self._last = now
        with contextlib.suppress(OSError):
            self.path.write_text(f"{time.time():.0f}\n")


def is_healthy(name: str, max_age: float = DEFAULT_MAX_AGE) -> bool:
    try:
        return time.time() - health_file(name).stat().st_mtime <= max_age
    except OSError:
        return False
