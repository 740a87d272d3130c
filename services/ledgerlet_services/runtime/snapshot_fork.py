"""Pickling a service's state in a forked child, so the service goes on handling while a
fleet's state takes seconds to pickle (as Redis's BGSAVE does), and the child never
outlives the service."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Mapping
from typing import Final

from ledgerlet_services.runtime.snapshot_codec import RunnerState, capture


class Capture:
    """A state being pickled by a child process (``pid``) that writes it to a pipe
    (``fd``); or, where the platform cannot fork, already pickled (``blob``)."""

    def __init__(self, pid: int = 0, fd: int = -1, blob: bytes | None = None, cpu_seconds: float | None = None) -> None:
        self.pid, self.fd, self.blob = pid, fd, blob
        #: what pickling took of the CPU (known once :meth:`result` has returned)
        self.cpu_seconds = cpu_seconds

    async def result(self) -> bytes:
        if self.blob is not None:
            return self.blob
        loop = asyncio.get_running_loop()
        try:
            data = await loop.run_in_executor(None, _read_all, self.fd)
            _, status, usage = await loop.run_in_executor(None, os.wait4, self.pid, 0)
            self.pid = 0
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                raise RuntimeError(f"the process pickling the state exited with {code}")
            return data
        finally:
            self.drop()

    def drop(self) -> None:
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = 0
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def capture_aside(state: RunnerState, modules: Mapping[str, str]) -> Capture:
    """Pickle ``state`` (with the manifest ``modules``: snapshot_codec.py) in a forked child
    (copy-on-write: the child sees the state as it is at the fork, whatever the service does
    next), as Redis's BGSAVE does. The child only pickles and writes to a pipe, then leaves
    with ``os._exit``: it touches no socket, event loop or lock of the parent's, and dies
    with its parent."""
    if not hasattr(os, "fork"):
        began = time.process_time()
        blob = capture(state, modules)
        return Capture(blob=blob, cpu_seconds=time.process_time() - began)
    parent = os.getpid()
    read, write = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read)
        os.close(write)
        raise
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read)
            _die_with_parent(parent)
            _write_all(write, capture(state, modules))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Capture(pid=pid, fd=read)


def _load_prctl() -> Callable[..., int] | None:
    """The C library's prctl, or None where there is none (not Linux)."""
    try:
        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None


#: looked up by the parent at import: a forked child does as little as it can (loading a
#: library or looking up a symbol takes the dynamic loader's lock, which another thread
#: of the parent's may have held at the fork: the child would wait for ever)
_PRCTL: Final = _load_prctl()
_PR_SET_PDEATHSIG: Final = 1


def _die_with_parent(parent: int) -> None:
    """Linux's PR_SET_PDEATHSIG: a service killed mid-checkpoint leaves no child pickling
    on. It covers a parent that dies from now on, so a child whose ``parent`` is already
    gone (it was re-parented) leaves at once."""
    if _PRCTL is not None:
        with contextlib.suppress(Exception):
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
