"""Where the command line writes what it makes (a decision log, a report, a scenario),
so that nothing is lost whatever the path names.

* Checked before anything runs (:func:`check_output`, :class:`OutputRefused`, exit 2):
  only a regular file or a new path is written. A device (``--decisions /dev/null``
  replaced the system's ``/dev/null`` with a file), a FIFO, a socket or a directory is
  refused, and so are the files the command reads: the store's own SQLite file (writing
  the log there destroyed every run in it) and the scenario or recordings it was given.
  The folder is tried for writing then (a file made and removed), so a read-only
  filesystem or a folder the user may not write ends the command before the run, not
  after it.
* Written beside and renamed over the path (:func:`write_output`): a reader never sees
  half a file, and the rename happens only over a regular file (a symbolic link is
  followed: the file it names is replaced). A failure then (a full disk) raises
  :class:`OutputFailed`, and the file beside is removed: nothing half-written is left.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ledgerlet_store.dsn import sqlite_path


class OutputRefused(Exception):
    """The path cannot be written, or must not be (checked before anything runs)."""


class OutputFailed(Exception):
    """Writing failed after the work was done (a full disk, a filesystem gone read-only)."""


@dataclass(frozen=True, slots=True)
class Output:
    """A path checked for writing: ``target`` is the file replaced (links followed)."""

    path: Path
    target: Path
    option: str
    #: ``-``: written to standard output, not to a file
    stdout: bool = False


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (links and hard links followed)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # (either is not there)
        return False


def store_files(dsn: str) -> list[Path]:
    """A SQLite store's file and the files SQLite keeps beside it (none for PostgreSQL)."""
    try:
        path = sqlite_path(dsn)
    except ValueError:  # (no store address: said elsewhere)
        return []
    if path is None:
        return []
    return [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]


def check_output(path: Path, option: str, *, reads: Iterable[tuple[str, Path]] = ()) -> Output:
    """``path`` checked for writing; :class:`OutputRefused` says why it cannot be.
    ``reads``: the files the command reads, each with what it is (``the store``). ``-`` is
    standard output."""
    if str(path) == "-":
        return Output(path, path, option, stdout=True)
    target = Path(os.path.realpath(path))
    shown = f"{option} {path}"
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputRefused(f"{shown}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputRefused(f"{shown} is {_kind(mode)}; only a regular file or a new path is written")
    for what, other in reads:
        if same_file(target, other):
            raise OutputRefused(f"{shown} is {what}: writing there would destroy it")
    _check_folder(target.parent, shown)
    return Output(path, target, option)


def _check_folder(folder: Path, shown: str) -> None:
    """The folder takes a new file (or, not there yet, can be made)."""
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise OutputRefused(f"{shown}: {existing} is not a directory")
    if existing != folder:  # made when written: the nearest folder there must take it
        if not os.access(existing, os.W_OK | os.X_OK):
            raise OutputRefused(f"{shown}: cannot create {folder} (no permission to write {existing})")
        return
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".ledgerlet-", suffix=".probe")
    except OSError as exc:
        raise OutputRefused(f"{shown}: cannot write in {folder}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def write_output(out: Output, data: bytes) -> None:
    """Write ``data`` beside ``out`` and rename it over; :class:`OutputFailed` leaves
    the path as it was and nothing beside it. (``-``: to standard output, as it is.)"""
    if out.stdout:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except OSError as exc:  # (a closed pipe is the command line's: BrokenPipeError)
            if isinstance(exc, BrokenPipeError):
                raise
            raise OutputFailed(f"{out.option} -: {exc.strerror or exc}") from None
        return
    target = out.target
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            _write_all(f, data)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode: int | None = os.stat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):  # (it changed since it was checked)
            raise OutputFailed(f"{out.option} {out.path} is now {_kind(mode)}; it was not replaced")
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OutputFailed(f"{out.option} {out.path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_all(f: object, data: bytes) -> None:
    """(apart, so that a test can make the disk fill up half way)"""
    f.write(data)  # type: ignore[attr-defined]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
