"""The ``ledgerlet`` command's entry point. A health check that passes is answered here,
before the command line loads the product: compose runs ``ledgerlet health NAME`` in every
container every ten seconds, and importing everything (about a second of CPU each time,
eight containers at once) made the checks time out on a busy machine. Anything else, a
check that fails included, goes to the full command line, with its messages and exit codes."""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Sequence


def _stopped_loading(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM while the command line loads (seconds on a busy machine): a
    message and 128 + the signal's number, as later on (SIGTERM's default would end
    the process without a word)."""
    sys.stderr.write(f"stopped: interrupted by {signal.Signals(signum).name} while starting; nothing was run\n")
    os._exit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stopped_loading)
    args = list(sys.argv[1:] if argv is None else argv)
    if healthy_at_once(args):
        return 0
    with Loading():
        from ledgerlet_services.app.cli import main as cli_main

    return cli_main(args)


class Loading:
    """Loading the command line makes some 700 modules' objects, none of them garbage:
    the cyclic collector is held off meanwhile (it went over them again and again, a
    tenth of a second), and what they made is frozen out of every later collection."""

    def __enter__(self) -> None:
        self.thresholds = gc.get_threshold()
        gc.set_threshold(200_000, 50, 100)

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self.thresholds)
        gc.freeze()


def healthy_at_once(args: list[str]) -> bool:
    """True if ``args`` is ``health NAME [--max-age S]`` and NAME's heartbeat is recent."""
    if len(args) < 2 or args[0] != "health" or not args[1].replace("-", "").isalnum():
        return False  # not a check, or a name no service has: the command line says so
    from ledgerlet_services.runtime.health import DEFAULT_MAX_AGE, is_healthy

    match args[2:]:
        case []:
            value = str(DEFAULT_MAX_AGE)
        case ["--max-age", value]:
            pass
        case [option] if option.startswith("--max-age="):
            value = option.removeprefix("--max-age=")
        case _:
            return False
    try:
        max_age = float(value)
    except ValueError:
        return False
    return is_healthy(args[1], max_age)
