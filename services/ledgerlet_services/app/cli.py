"""``ledgerlet``: run scenarios and services; serve, replay, explain and report what they decided."""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":  # Ctrl-C or SIGTERM while the modules below load (seconds on a busy machine)

    def _stopped_loading(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        sys.stderr.write(f"stopped: interrupted by {name} while starting; nothing was run\n")
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, _stopped_loading)
    signal.signal(signal.SIGTERM, _stopped_loading)
    from ledgerlet_services.app.entry import Loading

    _loading = Loading()
    _loading.__enter__()  # (as `ledgerlet` loads this module: entry.py)

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import platform
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final

from rich.console import Console

from ledgerlet_core.scenario.load import API_VERSION as SCENARIO_API_VERSION
from ledgerlet_services.app.cli_help import complete as with_defaults_in_help
from ledgerlet_services.app.commands import (
    collect,
    completion,
    contracts,
    drive,
    explain,
    export,
    importing,
    kubeconfig,
    record,
    replay,
    report,
    run,
    runs,
    serve,
    service,
)
from ledgerlet_services.app.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    STOP_SIGNALS,
    load_or_report,
)
from ledgerlet_services.app.messages import warning

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_OK", "load_or_report", "main", "version_text"]


def version_text() -> str:
    """What ``--version`` says: the package, the scenario format it reads, the Python."""
    try:
        package = importlib.metadata.version("ledgerlet")
    except importlib.metadata.PackageNotFoundError:  # (run from a source tree)
        package = "unknown"
    return f"ledgerlet {package} (scenarios {SCENARIO_API_VERSION}; Python {platform.python_version()})"


#: the subcommands' modules, in the order ``ledgerlet --help`` lists them (``service`` adds
#: ``health`` too, ``replay`` adds ``whatif``)
PARSERS: Final = (
    run,
    drive,
    service,
    serve,
    kubeconfig,
    runs,
    replay,
    explain,
    report,
    importing,
    collect,
    record,
    export,
    contracts,
    completion,
)
#: the commands that run in an event loop, by name
ASYNC_COMMANDS: Final[dict[str, Callable[[argparse.Namespace, Console], Coroutine[Any, Any, int]]]] = {
    "run": run.command,
    "drive": drive.command,
    "runs": runs.command,
    "replay": replay.replay,
    "whatif": replay.whatif,
    "explain": explain.command,
    "report": report.command,
    "export": export.command,
    "record": record.command,
}
#: the others, by name
COMMANDS: Final[dict[str, Callable[[argparse.Namespace, Console], int]]] = {
    "service": lambda args, _: service.command(args),
    "health": lambda args, _: service.health(args),
    "serve": serve.command,
    "kubeconfig": lambda args, _: kubeconfig.command(args),
    "import": importing.command,
    "collect": collect.command,
    "contracts": contracts.command,
    "completion": lambda args, _: _completion(args),
}


def _parser() -> argparse.ArgumentParser:
    """Every subcommand's parser, each from its module (``commands/``)."""
    p = argparse.ArgumentParser(prog="ledgerlet", description=__doc__)
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True)
    for module in PARSERS:
        module.add_parser(sub)
    return with_defaults_in_help(p)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM outside a run's own handling: the command stops where it is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Ctrl-C and SIGTERM raise at once, wherever they land. (asyncio.run's own handler would
    # only ask the main task to cancel, which a long synchronous step, reading a large
    # scenario, does not see until its next await: the store's opening, half done, then
    # hangs the process on the database driver's thread; and SIGTERM's default kills the
    # process without a word.) The run installs its own handlers.
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, _interrupt)
    try:
        return _dispatch(args)
    except KeyboardInterrupt as exc:  # outside a run's own handling (reading a file, a second Ctrl-C)
        signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
        warning(f"interrupted by {signal.Signals(signum).name}", label="stopped")
        return 128 + signum
    except BrokenPipeError:  # `ledgerlet runs -o json | head`: the reader has all it wants
        return _pipe_closed()


def _pipe_closed() -> int:
    """End quietly, as a command killed by SIGPIPE does (exit 141): what is still buffered
    for standard output goes nowhere, so that Python's flush at exit does not fail too."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 128 + int(signal.SIGPIPE)


def _dispatch(args: argparse.Namespace) -> int:
    console = Console(stderr=False)
    if not console.is_terminal:
        console.width = max(console.width, 120)  # logs and pipes: do not squeeze the tables
    if args.command in ("run", "service", "drive", "replay", "whatif"):
        # Services hold hundreds of thousands of long-lived objects (pods, plans); the
        # default thresholds run the cyclic collector over all of them again and again
        # while they are built (a quarter of start-up at 110,000 pods).
        gc.set_threshold(50_000, 20, 100)
    if args.command in ASYNC_COMMANDS:
        return asyncio.run(ASYNC_COMMANDS[args.command](args, console))
    if args.command in COMMANDS:
        return COMMANDS[args.command](args, console)
    return EXIT_FAILED


def _completion(args: argparse.Namespace) -> int:
    """The completion script, written from this command line's parser."""
    sys.stdout.write(completion.script(_parser(), args.shell))
    return EXIT_OK


if __name__ == "__main__":
    _loading.__exit__()
    sys.exit(main())
