"""``ledgerlet serve``: the decision audit API and the kubectl facade over a store."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    address_error,
)
from ledgerlet_services.app.inputs import read_bounded
from ledgerlet_services.app.messages import error
from ledgerlet_store.dsn import DEFAULT_DSN


def add_parser(sub: Any) -> None:
    """``serve``'s options."""
    serve = sub.add_parser("serve", help="the decision audit API (read-only HTTP, OpenAPI at /docs)")
    serve.add_argument("--store", default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN), help="event store DSN")
    serve.add_argument(
        "--host", default=os.environ.get("LEDGERLET_API_HOST", "127.0.0.1"), help="the address to listen on"
    )
    serve.add_argument(
        "--port", type=int, default=int(os.environ.get("LEDGERLET_API_PORT", "8080")), help="the port to listen on"
    )
    serve.add_argument(
        "--token-file", type=Path, help="require this bearer token (also LEDGERLET_API_TOKEN; none: open)"
    )
    serve.add_argument(
        "--tls-cert-file",
        type=Path,
        default=os.environ.get("LEDGERLET_API_TLS_CERT_FILE") or None,
        help="serve HTTPS with this certificate (PEM; kubectl sends a bearer token only over TLS)",
    )
    serve.add_argument(
        "--tls-private-key-file",
        type=Path,
        default=os.environ.get("LEDGERLET_API_TLS_PRIVATE_KEY_FILE") or None,
        help="the certificate's private key (PEM)",
    )
    serve.add_argument(
        "--publish-docs",
        action="store_true",
        help="serve /docs and /openapi.json without the token (with a token they are behind it by default)",
    )


def command(args: argparse.Namespace, console: Console) -> int:
    import uvicorn

    from ledgerlet_services.audit.http_api import create_app

    if address_error(args.store, existing=True):
        return EXIT_BAD_INPUT
    token = os.environ.get("LEDGERLET_API_TOKEN") or None
    if args.token_file is not None:
        try:  # (a token is a line: a megabyte is plenty, /dev/zero is not read for ever)
            token = read_bounded(args.token_file, str(args.token_file), 1 << 20).decode().strip() or None
        except (OSError, InputError, UnicodeDecodeError) as exc:
            error(f"--token-file {args.token_file}: {getattr(exc, 'strerror', None) or exc}")
            return EXIT_BAD_INPUT
    tls = tls_files(args.tls_cert_file, args.tls_private_key_file)
    if isinstance(tls, str):
        error(tls)
        return EXIT_BAD_INPUT
    docs = "OpenAPI: /docs" if not token or args.publish_docs else "OpenAPI: /openapi.json, with the token"
    scheme = "https" if tls else "http"
    console.print(f"audit API on {scheme}://{args.host}:{args.port} ({docs}){'' if token else ', no token'}")
    console.print(f"kubectl: ledgerlet kubeconfig --server {scheme}://{args.host}:{args.port} > kubeconfig")
    app = create_app(args.store, token=token, publish_docs=args.publish_docs)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        ssl_certfile=str(tls[0]) if tls else None,
        ssl_keyfile=str(tls[1]) if tls else None,
    )
    return EXIT_OK


def tls_files(cert: Path | None, key: Path | None) -> tuple[Path, Path] | str | None:
    """Both files (HTTPS), neither (HTTP), or what is wrong with them."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        return "--tls-cert-file and --tls-private-key-file go together"
    for path in (cert, key):
        if not path.is_file():
            return f"no file {path}"
    return cert, key
