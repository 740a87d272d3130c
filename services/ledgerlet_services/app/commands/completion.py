"""``ledgerlet completion bash|zsh|tcsh``: a completion script written from the command
line's own parser (shtab), so it never falls behind a new command or option.

Files and directories complete where an option takes one; run ids complete from the
store the shell's ``LEDGERLET_STORE`` (or ``ledgerlet.db`` here) names, through
``ledgerlet runs -o name``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

import shtab

from ledgerlet_services.app.cli_help import parsers

SHELLS: Final = ("bash", "zsh", "tcsh")
#: the options that name a run, completed from the store
RUN_OPTIONS: Final = frozenset({"run", "compare"})


def _complete_values(root: argparse.ArgumentParser) -> None:
    runs = shtab.cmd("ledgerlet runs -o name 2>/dev/null")
    for _, parser in parsers(root):
        for action in parser._actions:
            if action.dest in RUN_OPTIONS:
                setattr(action, "complete", runs)  # noqa: B010 (shtab's attribute, unknown to argparse)
            elif action.type is Path or action.dest in ("decisions", "out", "config", "kubeconfig"):
                setattr(action, "complete", shtab.FILE)  # noqa: B010


def script(root: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`SHELLS`)."""
    _complete_values(root)
    text: str = shtab.complete(root, shell=shell)
    return text


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or tcsh)",
        description="bash: source <(ledgerlet completion bash), or write it to "
        '/etc/bash_completion.d/ledgerlet; zsh: ledgerlet completion zsh > "${fpath[1]}/_ledgerlet" '
        "(then compinit).",
    )
    completion.add_argument("shell", choices=SHELLS)
