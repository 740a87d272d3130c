"""``ledgerlet kubeconfig``: a kubeconfig whose server is a stored run's facade."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app import messages
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
)
from ledgerlet_services.app.messages import error


def add_parser(sub: Any) -> None:
    """``kubeconfig``'s options."""
    kube = sub.add_parser(
        "kubeconfig",
        help="a kubeconfig for kubectl against a stored run at one instant (served by ledgerlet serve)",
        description="Prints a kubeconfig whose current context is RUN at AT on the audit API at --server: "
        "kubectl get/describe/watch then read the run as the API server held it then.",
    )
    kube.add_argument("--server", required=True, help="the audit API, e.g. http://127.0.0.1:8080")
    kube.add_argument("--run", help="run id or a prefix of one (default: the newest completed run)")
    kube.add_argument(
        "--at",
        default="end",
        help="the instant: end (default), an offset into the run (5m, 90s), a time of day on the run's day "
        "(09:05, 09:05:30; UTC unless +hh:mm is given) or RFC 3339 (2026-01-29T09:05:00Z)",
    )
    kube.add_argument(
        "--clock",
        choices=("now", "recorded"),
        default="now",
        help="now (default): timestamps moved so that the instant reads as the moment of each request, and "
        "kubectl's own ages (describe, events) agree with get's; recorded: the recorded timestamps",
    )
    kube.add_argument("--token-file", type=Path, help="the bearer token the server wants (referred to, not copied)")
    kube.add_argument(
        "--certificate-authority",
        type=Path,
        help="the CA (PEM) that signed the https server's certificate",
    )


def command(args: argparse.Namespace) -> int:
    from ledgerlet_services.app.kube_context import Unreachable, kubeconfig_and_note

    try:
        text, note = kubeconfig_and_note(
            args.server,
            run=args.run,
            at=args.at,
            clock=args.clock,
            token_file=args.token_file,
            certificate_authority=args.certificate_authority,
        )
        print(text, end="")
        messages.warning(note, label="kubeconfig")
    except InputError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except Unreachable as exc:
        error(str(exc))
        return EXIT_MISMATCH
    return EXIT_OK
