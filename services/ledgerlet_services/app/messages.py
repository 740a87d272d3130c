"""What the command line tells the user besides its answer: errors, warnings and notes
go to standard error, as kubectl's do, so that ``ledgerlet ... > out`` holds only the
answer; their text is the input's (file names, quantities, regexes), never markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

#: standard error, wide enough not to fold a path when it is not a terminal
_ERR = Console(stderr=True, highlight=False, soft_wrap=True)


def error(text: str, label: str = "error") -> None:
    _ERR.print(f"[red]{label}:[/red] {escape(text)}")


def warning(text: str, label: str = "warning") -> None:
    _ERR.print(f"[yellow]{label}:[/yellow] {escape(text)}")
