"""What ``--help`` says about every option: its default and the environment variable that
sets it, so that nobody has to read the source to learn either.

The variables are listed here by the option's destination (the same name means the same
setting in every command that has it); ``complete`` gives every parser of the command
line the formatter that appends ``(default X; env VAR)`` to each option's help, leaving out
whichever part the help already says.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Final

#: the environment variable behind each option, by its destination
ENV_VARS: Final = {
    "store": "LEDGERLET_STORE",
    "bus": "LEDGERLET_BUS",
    "partitions": "LEDGERLET_PARTITIONS",
    "members": "LEDGERLET_MEMBERS",
    "idle_timeout": "LEDGERLET_IDLE_TIMEOUT",
    "no_lease": "LEDGERLET_LEASE=0",
    "member": "LEDGERLET_MEMBER",
    "pool": "LEDGERLET_POOL",
    "snapshot_records": "LEDGERLET_SNAPSHOT_RECORDS",
    "snapshot_seconds": "LEDGERLET_SNAPSHOT_SECONDS",
    "host": "LEDGERLET_API_HOST",
    "port": "LEDGERLET_API_PORT",
    "token_file": "LEDGERLET_API_TOKEN",
    "tls_cert_file": "LEDGERLET_API_TLS_CERT_FILE",
    "tls_private_key_file": "LEDGERLET_API_TLS_PRIVATE_KEY_FILE",
}
#: options whose variable is another command's (kubeconfig's --token-file is the client's file)
NOT_FROM_ENV: Final = {("kubeconfig", "token_file")}


def _shown(default: object) -> bool:
    """A default worth saying: not absent, not a flag's False, not an empty list."""
    return default not in (None, False, "", [], argparse.SUPPRESS)


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help with ``(default X; env VAR)`` after each option's text."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if text == argparse.SUPPRESS:
            return text
        notes = []
        if action.option_strings and _shown(action.default) and "default" not in text.lower():
            default = action.default
            notes.append(f"default {default:g}" if isinstance(default, float) else f"default {default}")
        env = getattr(action, "ledgerlet_env", None)
        if env and env.split("=")[0] not in text:
            notes.append(f"env {env}")
        if not notes:
            return text
        added = "; ".join(notes).replace("%", "%%")  # (the help is a format string)
        if text.endswith(")") and not text.endswith("()"):  # "... (default 6)" -> "... (default 6; env X)"
            return f"{text[:-1]}; {added})"
        return f"{text} ({added})" if text else added


def parsers(root: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The root parser (named "") and every command's, by command name."""
    yield "", root
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def complete(root: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Every parser under ``root`` says its defaults and variables in ``--help``."""
    for command, parser in parsers(root):
        parser.formatter_class = DefaultsFormatter
        for action in parser._actions:
            env = ENV_VARS.get(action.dest)
            if env is not None and action.option_strings and (command, action.dest) not in NOT_FROM_ENV:
                setattr(action, "ledgerlet_env", env)  # noqa: B010 (argparse's Action has no such attribute)
    return root
