"""``ledgerlet service`` and ``ledgerlet health``: one service of the distributed stack
(the audit API among them) until SIGTERM, and whether its loop turned recently."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import signal
from collections.abc import Iterator
from typing import Any

from ledgerlet_core.loop.membership import Membership, group_of
from ledgerlet_services.app.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    bus_and_store_options,
)
from ledgerlet_services.app.commands.stored import address_error
from ledgerlet_services.app.messages import error
from ledgerlet_services.runtime.catalog import AUDIT_API, control_loop, service_names
from ledgerlet_services.runtime.health import DEFAULT_MAX_AGE, Heartbeat, health_file, is_healthy
from ledgerlet_services.runtime.snapshot_policy import DEFAULT_EVERY_RECORDS, DEFAULT_EVERY_SECONDS
from ledgerlet_services.runtime.stopping import DEFAULT_STOP_BUDGET, STOP_BUDGET_ENV
from ledgerlet_services.runtime.telemetry import Telemetry


def add_parser(sub: Any) -> None:
    """``service``'s and ``health``'s options."""
    service = sub.add_parser("service", help="run one service of the distributed stack until SIGTERM")
    service.add_argument("name", choices=service_names(), help="which service")
    bus_and_store_options(service)
    service.add_argument(
        "--no-lease",
        action="store_true",
        default=os.environ.get("LEDGERLET_LEASE", "1") == "0",
        help="do not take the service's lease in PostgreSQL (env LEDGERLET_LEASE=0): by default "
        "one process of a service is active and any others stand by",
    )
    service.add_argument(
        "--member",
        default=None,
        help="I/N: run as member I of N of a split service, working its share of the nodes (env "
        "LEDGERLET_MEMBER, which services that cannot be split ignore; stats-collector and "
        "eviction-manager); drive with --members NAME=N",
    )
    service.add_argument(
        "--pool",
        type=int,
        default=None,
        help="N: host a fair share of the N members of a split service (N / live processes, rounded "
        "up), which move between the processes started with --pool N as they come and go (env "
        "LEDGERLET_POOL, which services that cannot be split ignore); drive with --members NAME=N",
    )
    service.add_argument(
        "--snapshot-records",
        type=int,
        default=int(os.environ.get("LEDGERLET_SNAPSHOT_RECORDS", DEFAULT_EVERY_RECORDS)),
        help="a control loop checkpoints its state in the store after this many records "
        f"(env LEDGERLET_SNAPSHOT_RECORDS; default {DEFAULT_EVERY_RECORDS}; 0: never)",
    )
    service.add_argument(
        "--snapshot-seconds",
        type=float,
        default=float(os.environ.get("LEDGERLET_SNAPSHOT_SECONDS", DEFAULT_EVERY_SECONDS)),
        help="... or after this many seconds of handling, whichever comes first "
        f"(env LEDGERLET_SNAPSHOT_SECONDS; default {DEFAULT_EVERY_SECONDS:g})",
    )
    service.add_argument(
        "--stop-budget",
        type=_seconds,
        default=os.environ.get(STOP_BUDGET_ENV, f"{DEFAULT_STOP_BUDGET:g}"),
        help="seconds from SIGTERM to the exit: the service tries to finish its batch, commit and "
        "hand over, and then exits anyway, saying what it left unfinished (safe: the batch comes "
        "again); keep it below the orchestrator's grace period "
        f"(env {STOP_BUDGET_ENV}; default {DEFAULT_STOP_BUDGET:g}, compose's grace being 10 s)",
    )

    health = sub.add_parser("health", help="exit 0 if the named service's loop turned recently (health checks)")
    health.add_argument("name", choices=service_names())
    health.add_argument("--member", default=None, help="I/N, as the service's (env LEDGERLET_MEMBER)")
    health.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE, help=f"seconds (default {DEFAULT_MAX_AGE:g})")


def command(args: argparse.Namespace) -> int:
    if args.name == AUDIT_API:
        return _audit_service(args)
    if not args.bus:
        error("service needs --bus (or LEDGERLET_BUS)")
        return EXIT_BAD_INPUT
    if args.store and address_error(args.store, existing=False):
        return EXIT_BAD_INPUT
    try:
        member = _member(args)
    except ValueError as exc:
        error(f"--member: {exc}")
        return EXIT_BAD_INPUT
    try:
        pool = _pool(args)
    except ValueError as exc:
        error(f"--pool: {exc}")
        return EXIT_BAD_INPUT
    budget = args.stop_budget
    logging.basicConfig(
        level=os.environ.get("LEDGERLET_LOG_LEVEL", "INFO").upper(),
        format=f"%(asctime)s {args.name} %(levelname)s %(name)s: %(message)s",
    )
    from ledgerlet_services.runtime import stopping
    from ledgerlet_services.runtime.distributed import SnapshotEvery, UnknownService, serve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # (a signal handler of Python's own, not the loop's: it runs even while the loop is
        # busy, and its watchdog ends the process if the stop outlives the budget)
        stopping.StopBudget(budget, lambda: loop.call_soon_threadsafe(stop.set), name=args.name).install()
        await serve(
            args.name,
            bus_url=args.bus,
            store_dsn=args.store,
            partitions=args.partitions,
            telemetry=Telemetry.from_env(args.name),
            stop=stop,
            heartbeat=Heartbeat(health_file(group_of(args.name, member))),  # (a member's its own)
            snapshot_every=SnapshotEvery(args.snapshot_records, args.snapshot_seconds),
            lease=not args.no_lease,
            member=member,
            pool=pool,
        )
        stopping.begin("leaving the event loop (its worker threads)")

    try:
        asyncio.run(main())
    except UnknownService as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    return EXIT_OK


def _audit_service(args: argparse.Namespace) -> int:
    """The audit API as a stack service: the store from --store / LEDGERLET_STORE, port
    LEDGERLET_API_PORT (8080) on all interfaces, token LEDGERLET_API_TOKEN."""
    import uvicorn

    from ledgerlet_services.audit.http_api import create_app

    if not args.store:
        error("audit-api needs --store (or LEDGERLET_STORE)")
        return EXIT_BAD_INPUT
    if address_error(args.store, existing=True):
        return EXIT_BAD_INPUT
    app = create_app(
        args.store,
        token=os.environ.get("LEDGERLET_API_TOKEN") or None,
        heartbeat=Heartbeat(health_file(AUDIT_API)),
        publish_docs=os.environ.get("LEDGERLET_API_PUBLISH_DOCS", "") == "1",
    )
    port = int(os.environ.get("LEDGERLET_API_PORT", "8080"))
    cert, key = os.environ.get("LEDGERLET_API_TLS_CERT_FILE"), os.environ.get("LEDGERLET_API_TLS_PRIVATE_KEY_FILE")
    if bool(cert) != bool(key):
        error("LEDGERLET_API_TLS_CERT_FILE and LEDGERLET_API_TLS_PRIVATE_KEY_FILE go together")
        return EXIT_BAD_INPUT
    host = os.environ.get("LEDGERLET_API_HOST", "0.0.0.0")
    config = uvicorn.Config(
        app, host=host, port=port, log_level="info", ssl_certfile=cert or None, ssl_keyfile=key or None
    )
    server = _server_class()(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, server.request_exit)
        await server.serve()

    asyncio.run(main())
    return EXIT_OK if server.started else EXIT_FAILED


def _server_class() -> type:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """Stops on SIGTERM like every other service (exit 0); uvicorn's own handling
        re-raises the signal after shutting down, which reads as a crash."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        def request_exit(self) -> None:
            self.should_exit = True

    return QuietServer


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected seconds more than 0, got {text!r}")
    return value


def health(args: argparse.Namespace) -> int:
    try:
        member = _member(args)
    except ValueError as exc:
        error(f"--member: {exc}")
        return EXIT_BAD_INPUT
    return EXIT_OK if is_healthy(group_of(args.name, member), args.max_age) else EXIT_FAILED


def _member(args: argparse.Namespace) -> Membership | None:
    """The member ``--member`` names, else ``LEDGERLET_MEMBER`` for a service that can be
    split (set for a machine or a container, the others ignore it); ValueError if bad."""
    text = args.member
    if text is None:
        kind = control_loop(args.name)
        text = os.environ.get("LEDGERLET_MEMBER") if kind is not None and kind.splittable else None
    return Membership.parse(text) if text else None


def _pool(args: argparse.Namespace) -> int | None:
    """``--pool``, else ``LEDGERLET_POOL`` for a service that can be split; ValueError if
    it is not a whole number."""
    if args.pool is not None:
        return int(args.pool)
    kind = control_loop(args.name)
    text = os.environ.get("LEDGERLET_POOL") if kind is not None and kind.splittable else None
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"LEDGERLET_POOL: expected a number of members, got {text!r}") from None
