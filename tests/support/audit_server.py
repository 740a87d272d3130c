"""``ledgerlet serve`` as a process on a free loopback port, for clients that are
programs of their own (kubectl)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ledgerlet(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command line, as a user runs it."""
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


@contextlib.contextmanager
def serving(dsn: str, *extra: str, ca: Path | None = None) -> Iterator[str]:
    """The audit API on ``dsn`` until the block ends; its base URL (https with
    ``--tls-...`` in ``extra``, checked against ``ca``)."""
    port = free_port()
    tls = "--tls-cert-file" in extra
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "serve", "--store", dsn, "--port", str(port), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(ca)) if ca is not None else True
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2, verify=verify).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the audit API did not come up"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        assert "Traceback" not in err, err[-3000:]
