"""The ``ledgerlet`` command line called in the test's own process: what a test of its
messages and exit codes needs, without the second of imports a process of its own costs
each command (``make check`` ran dozens). Tests of the process itself (signals, exit on
a broken pipe, the entry point's early answers) still start one."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Result:
    """What one command said: its exit code and its two streams (the names are
    ``subprocess.CompletedProcess``'s)."""

    returncode: int
    stdout: str
    stderr: str


#: a command's arguments, then where it runs (its working directory)
Command = Callable[..., Result]


def in_process(capsys: pytest.CaptureFixture[str]) -> Command:
    """``ledgerlet ARGS`` run from ``cwd`` in this process, its output captured."""
    from ledgerlet_services.app.cli import main

    def call(*args: str, cwd: Path | None = None) -> Result:
        capsys.readouterr()  # (what came before is not this command's)
        before = Path.cwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = main(list(args))
        finally:
            os.chdir(before)
        said = capsys.readouterr()
        return Result(code, said.out, said.err)

    return call
