"""``ledgerlet import``: a scenario from recorded kubectl objects, kubelet summaries and configz."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
)
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import OutputFailed, OutputRefused, check_output, write_output


def add_parser(sub: Any) -> None:
    """``import``'s options."""
    imp = sub.add_parser(
        "import",
        help="a scenario from recorded kubectl objects, kubelet /pods, /stats/summary and /configz",
        description="Files are YAML or JSON; each given as INPUT is sorted by what it holds "
        "(summaries, a kubelet configuration, objects). - reads standard input.",
    )
    imp.add_argument("inputs", nargs="*", metavar="INPUT", help="recorded files of any of those kinds, or -")
    imp.add_argument(
        "--objects", action="append", default=[], help="kubectl get ... -o yaml|json output, or the kubelet's /pods"
    )
    imp.add_argument("--stats", action="append", default=[], help="a kubelet /stats/summary document (repeatable)")
    imp.add_argument("--kubelet-config", help="the kubelet's configz or a KubeletConfiguration")
    imp.add_argument("--name", default="imported", help="scenario name")
    imp.add_argument("--out", type=Path, required=True, help="scenario YAML to write (-: standard output)")
    imp.add_argument(
        "--allow-gaps",
        action="store_true",
        help="take recordings more than an hour apart (refused by default: files of two incidents mixed up)",
    )


def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.recording_import import import_files

    given = [*args.inputs, *args.objects, *args.stats, *([args.kubelet_config] if args.kubelet_config else [])]
    try:
        out = check_output(args.out, "--out", reads=[("a recording read", Path(p)) for p in given if p != "-"])
        summary = import_files(
            inputs=args.inputs,
            objects=args.objects,
            stats=args.stats,
            kubelet_config=args.kubelet_config,
            name=args.name,
            out=args.out,
            allow_gaps=args.allow_gaps,
            write=lambda data: write_output(out, data),
        )
    except (InputError, OutputRefused) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except OutputFailed as exc:
        error(f"the scenario was not written: {exc}")
        return EXIT_MISMATCH
    (Console(stderr=True) if str(args.out) == "-" else console).print(escape(summary), highlight=False)
    return EXIT_OK
