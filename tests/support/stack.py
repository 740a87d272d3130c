"""The distributed stack as separate OS processes, for tests and benchmarks: each
service started with ``ledgerlet service NAME``, and scenarios fed with ``ledgerlet drive``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ledgerlet_services.runtime.catalog import service_names

CLI = [sys.executable, "-m", "ledgerlet_services.app.cli"]

#: (service, span) from the clock tick to a stored eviction: one trace through every process
EVICTION_TRACE = [
    ("ledgerlet-driver", "clock ClockTick"),  # the virtual clock ticks (an input of the stack)
    ("ledgerlet-stats-collector", "stats-collector ClockTick"),  # housekeeping: observe
    ("ledgerlet-eviction-manager", "eviction-manager NodesObserved"),  # decide (a batch of observations)
    ("ledgerlet-event-recorder", "event-recorder store PodEvicted"),  # store
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalStack:
    bus_url: str
    store_dsn: str
    workdir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: where the audit-api service listens (a free loopback port)
    api_port: int = field(default_factory=lambda: _free_port())

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "LEDGERLET_BUS": self.bus_url,
            "LEDGERLET_STORE": self.store_dsn,
            "LEDGERLET_HEALTH_DIR": str(self.workdir),
            "LEDGERLET_LOG_LEVEL": "INFO",
            "LEDGERLET_API_HOST": "127.0.0.1",
            "LEDGERLET_API_PORT": str(self.api_port),
            **self.extra_env,
        }

    def log_path(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def start(self, names: list[str] | None = None, *, wait: bool = True) -> LocalStack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in names or service_names():
            self.start_service(name)
        if wait:
            self.wait_healthy(names)
        return self

    def start_service(self, name: str, member: str = "", args: tuple[str, ...] = ()) -> str:
        """Start a service; a ``member`` name starts another process of it (a standby),
        known here as ``NAME@MEMBER``, with a log and a heartbeat file of its own."""
        key = f"{name}@{member}" if member else name
        env = self.env
        if member:
            env = {**env, "LEDGERLET_HEALTH_DIR": str(self.member_dir(member))}
            self.member_dir(member).mkdir(parents=True, exist_ok=True)
        log = open(self.log_path(key), "ab")  # noqa: SIM115 (the process owns it)
        self.procs[key] = subprocess.Popen([*CLI, "service", name, *args], stdout=log, stderr=log, env=env)
        log.close()
        return key

    def start_pooled(self, name: str, process: str, count: int) -> str:
        """Start a process of a split service's pool (``--pool N``), known here as
        ``NAME@PROCESS``."""
        return self.start_service(name, process, ("--pool", str(count)))

    def start_share(self, name: str, index: int, count: int) -> str:
        """Start member ``index`` (from 1) of ``count`` of a split service (``--member I/N``),
        known here, as its heartbeat file is, as ``NAME.member-I-of-N``."""
        key = f"{name}.member-{index}-of-{count}"
        log = open(self.log_path(key), "ab")  # noqa: SIM115 (the process owns it)
        cmd = [*CLI, "service", name, "--member", f"{index}/{count}"]
        self.procs[key] = subprocess.Popen(cmd, stdout=log, stderr=log, env=self.env)
        log.close()
        return key

    def member_dir(self, member: str) -> Path:
        return self.workdir / f"member-{member}"

    def wait_healthy(self, names: list[str] | None = None, timeout: float = 60.0) -> None:
        """Until every service's loop has turned (its heartbeat file is fresh)."""
        deadline = time.monotonic() + timeout
        for name in names or service_names():
            service, _, member = name.partition("@")
            beat = (self.member_dir(member) if member else self.workdir) / f"ledgerlet-{service}.alive"
            while not (beat.exists() and time.time() - beat.stat().st_mtime < 5):
                proc = self.procs.get(name)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.tail(name)}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name} not healthy after {timeout}s:\n{self.tail(name)}")
                time.sleep(0.05)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        proc = self.procs.pop(name)
        proc.send_signal(sig)
        code = proc.wait(30)
        service, _, member = name.partition("@")
        (self.member_dir(member) if member else self.workdir).joinpath(f"ledgerlet-{service}.alive").unlink(
            missing_ok=True
        )
        return code

    def restart(self, name: str, sig: int = signal.SIGKILL) -> None:
        self.kill(name, sig)
        self.start_service(name)

    def stop(self, grace: float = 30.0) -> dict[str, int]:
        """SIGTERM every service at once and wait: the codes they exited with (one still
        running ``grace`` seconds after the signal is killed: -9)."""
        codes: dict[str, int] = {}
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = proc.wait()
        self.procs.clear()
        return codes

    def drive(
        self, scenario: Path, decisions: Path, *, run_id: str, timeout: float = 600, background: bool = False
    ) -> subprocess.Popen[bytes]:
        """Start ``ledgerlet drive`` (wait for it with :func:`finish`)."""
        log = open(self.workdir / f"drive-{run_id}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                *CLI,
                *("drive", str(scenario), "--decisions", str(decisions)),
                *("--run-id", run_id, "--quiet", "--idle-timeout", str(timeout)),
            ],
            stdout=log,
            stderr=log,
            env=self.env,
        )
        log.close()
        return proc

    def finish(self, proc: subprocess.Popen[bytes], run_id: str, timeout: float = 600) -> None:
        code = proc.wait(timeout)
        if code != 0:
            raise RuntimeError(
                f"ledgerlet drive exited {code}:\n{(self.workdir / f'drive-{run_id}.log').read_text()}\n"
                + "\n".join(f"--- {n}\n{self.tail(n)}" for n in (self.procs or service_names()))
            )

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
