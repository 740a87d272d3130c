"""The compose stack for the tests of this directory: engine, images, ``up --wait``, the
example fed in; torn down (``down -v``, engine stopped by its PID) whatever happened."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.compose.stack import FIGURES, ComposeStack, Engine, EngineUnavailable, Timer


@pytest.fixture(scope="module")  # down and stopped as soon as its tests are done: the rest of the suite runs unloaded
def compose_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeStack]:
    work = tmp_path_factory.mktemp("compose")
    out = work / "out"
    out.mkdir()
    out.chmod(0o777)  # the example writes here as the image's unprivileged user
    timer = Timer()
    engine = Engine(work)
    try:
        with timer.step("engine set-up (install, start, Debian base image)"):
            engine.start()
    except EngineUnavailable as exc:
        pytest.skip(f"no Docker engine can start here: {exc}")
    stack = ComposeStack(engine, out)
    try:
        with timer.step("stand-in images built"):
            sizes = stack.build_standins()
        with timer.step("project image built (compose build)"):
            stack.build()
        for image, size in {**sizes, "ledgerlet:dev": engine.image_size("ledgerlet:dev")}.items():
            FIGURES[f"image {image}"] = f"{size / 1e6:.0f} MB"
        stack.down()  # what a killed run may have left
        with timer.step("up --wait (every service healthy)"):
            stack.compose("up", "--wait", "--wait-timeout", "300", log="up")
        with timer.step("example fed in (drive to the end)"):
            waited = stack.compose("wait", "example", check=False)
        assert waited.returncode == 0, f"the example exited {waited.returncode}:\n{stack.logs('example')[-3000:]}"
        yield stack
    finally:
        try:
            (work / "compose.log").write_text(stack.compose("logs", "--no-color", check=False).stdout)
            stack.down()
        finally:
            engine.stop()
            FIGURES["compose test, in all"] = f"{time.monotonic() - timer.started:.1f} s"
            (work / "figures.json").write_text(json.dumps(FIGURES, indent=1))
