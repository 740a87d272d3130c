"""Run ids as the store keeps them: within its column on every backend, and names that
every reader can give back (a URL path segment, a kubeconfig's server URL, a command
line argument). A run id over 64 characters was accepted, then failed mid-run on
PostgreSQL only (``character varying(64)``; SQLite does not enforce a length)."""

from __future__ import annotations

import re
from typing import Final

from ledgerlet_store.schema import events

#: the longest run id the store holds (the ``run`` column)
MAX_RUN_ID: Final = int(events.c.run.type.length or 64)  # type: ignore[attr-defined]
_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: what readers take to mean the newest completed run
RESERVED: Final = frozenset({"latest"})


class BadRunId(ValueError):
    """A run id the store could not keep, or a reader could not name."""


def check_run_id(run: str, option: str = "--run-id") -> None:
    """Refuse (:class:`BadRunId`) an id longer than the store holds, one that is not
    letters, digits, ``.``, ``_`` and ``-`` (starting with a letter or digit), or
    ``latest`` (which readers take for the newest completed run)."""
    if len(run) > MAX_RUN_ID:
        raise BadRunId(f"{option}: {len(run)} characters; a run id has at most {MAX_RUN_ID}")
    if not _RUN_ID.fullmatch(run):
        raise BadRunId(
            f"{option} {run!r}: a run id is letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
    if run in RESERVED:
        raise BadRunId(f"{option} {run!r} is what readers call the newest completed run; give another id")
