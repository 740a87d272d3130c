"""Reading the files the command line is given (scenarios, recordings) within the size
the loader accepts, whatever they are.

The size a regular file reports is checked before it is read; anything else (``/dev/zero``,
a FIFO, process substitution's ``/dev/fd/63``) reports none, so it is read only up to
the limit and refused past it: ``/dev/zero`` was read until memory ran out.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario import bounds
from ledgerlet_core.scenario.bounds import check_size


def read_bounded(path: Path, source: str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``: by default the loader's
    :data:`~ledgerlet_core.scenario.bounds.MAX_SCENARIO_BYTES`); :class:`InputError`
    past it, and ``OSError`` as opening or reading raises it."""
    limit = bounds.MAX_SCENARIO_BYTES if limit is None else limit
    with open(path, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISREG(mode):
            check_size(os.fstat(f.fileno()).st_size, source, limit)  # before reading it all in
        return read_stream_bounded(f, source, limit)


def read_stream_bounded(f: BinaryIO, source: str, limit: int | None = None) -> bytes:
    """What a stream holds (standard input, a FIFO, a device), read up to ``limit``."""
    limit = bounds.MAX_SCENARIO_BYTES if limit is None else limit
    data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            f"more than {limit:,} bytes (read up to the limit: it is not a regular file, so its size "
            f"is not known beforehand); scenarios of at most {limit:,} bytes are read",
            file=source,
        )
    return data
