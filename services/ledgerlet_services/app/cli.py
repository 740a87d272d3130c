"""``ledgerlet``: run scenarios, and (as the product grows) serve, replay and explain them."""

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
import dataclasses
import gc
import importlib.metadata
import logging
import math
import platform
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from rich.console import Console

from ledgerlet_bus.api import BusTimeout
from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.contracts.internal import RUN_FAILED
from ledgerlet_core.contracts.order import ORDER_BY_NODE
from ledgerlet_core.loop.membership import Membership, group_of
from ledgerlet_core.model.duration import SECOND, DurationError, format_duration, parse_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.bounds import MAX_DURATION, check_duration, decode_text
from ledgerlet_core.scenario.load import API_VERSION as SCENARIO_API_VERSION
from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_services.app.cli_help import complete as with_defaults_in_help
from ledgerlet_services.app.cli_postmortem import COMMANDS as POSTMORTEM_COMMANDS
from ledgerlet_services.app.cli_postmortem import add_parsers as add_postmortem_parsers
from ledgerlet_services.app.cli_postmortem import address_error, open_failure, store_reason
from ledgerlet_services.app.cli_postmortem import dispatch as dispatch_postmortem
from ledgerlet_services.app.completion import add_parser as add_completion_parser
from ledgerlet_services.app.inputs import read_bounded
from ledgerlet_services.app.messages import error, warning
from ledgerlet_services.app.outputs import Output, OutputFailed, OutputRefused, check_output, store_files, write_output
from ledgerlet_services.app.report_console import rate, summary_tables, virtual_time_progress
from ledgerlet_services.runtime.catalog import AUDIT_API, control_loop, parse_members, service_names
from ledgerlet_services.runtime.embedded import RunResult, ServiceFailed, new_run_id, record_outcome, run_embedded
from ledgerlet_services.runtime.health import DEFAULT_MAX_AGE, Heartbeat, health_file, is_healthy
from ledgerlet_services.runtime.recorder import DEFAULT_STORE_WAIT, StoreUnwritable
from ledgerlet_services.runtime.run_binding import RunMismatch, check_run_binding
from ledgerlet_services.runtime.run_completeness import RunShortfall
from ledgerlet_services.runtime.snapshots import DEFAULT_EVERY_RECORDS, DEFAULT_EVERY_SECONDS
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_services.runtime.topics import DEFAULT_PARTITIONS
from ledgerlet_store.contract import StoreError
from ledgerlet_store.dsn import DEFAULT_DSN, describe
from ledgerlet_store.run_ids import BadRunId, check_run_id
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def version_text() -> str:
    """What ``--version`` says: the package, the scenario format it reads, the Python."""
    try:
        package = importlib.metadata.version("ledgerlet")
    except importlib.metadata.PackageNotFoundError:  # (run from a source tree)
        package = "unknown"
    return f"ledgerlet {package} (scenarios {SCENARIO_API_VERSION}; Python {platform.python_version()})"


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _duration(text: str) -> int:
    """A Go duration such as 8760h, in nanoseconds (an argparse type)."""
    try:
        value = parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


def _max_duration(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--max-duration",
        type=_duration,
        default=format_duration(MAX_DURATION),
        metavar="DURATION",
        help=f"refuse a scenario longer than this in virtual time (default {format_duration(MAX_DURATION)}, a "
        "year: a longer run may never end while the store fills up); give a longer one to run it anyway",
    )


def _order_by_node(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--order-by-node",
        action="store_true",
        help="number the eviction manager's events per node (the ids a split eviction manager gives; "
        "the same decisions, other ids)",
    )


def _ordered(args: argparse.Namespace, scenario: Scenario | None) -> Scenario | None:
    """The scenario ordered by node if ``--order-by-node`` says so (contracts/order.py)."""
    if scenario is None or not args.order_by_node:
        return scenario
    return dataclasses.replace(scenario, order_scheme=ORDER_BY_NODE)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ledgerlet", description=__doc__)
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario through the control loops (embedded: one process)")
    run.add_argument("scenario", type=Path, help="scenario file (ledgerlet/v1 Scenario YAML)")
    run.add_argument("--decisions", type=Path, required=True, help="where to write the decision log (JSON Lines)")
    run.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}; postgresql://... for PostgreSQL)",
    )
    run.add_argument("--run-id", help="use this run id (ids in the log are derived from it)")
    run.add_argument(
        "--store-wait",
        type=_seconds,
        default=os.environ.get("LEDGERLET_STORE_WAIT") or DEFAULT_STORE_WAIT,  # (a variable's text: converted by type=)
        metavar="SECONDS",
        help="how long the store may refuse every write (a database restarting, a full disk) before the run "
        f"stops with exit 1 (env LEDGERLET_STORE_WAIT; default {DEFAULT_STORE_WAIT:g}); a write under way is "
        "let finish",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    _max_duration(run)
    _order_by_node(run)
    run.add_argument(
        "--store-observations",
        choices=["node", "full"],
        default="node",
        help="store derived observations with node-level stats only (default; they can be derived "
        "again from the stored inputs) or in full, with every pod's stats",
    )

    drive = sub.add_parser(
        "drive", help="run a scenario on the distributed stack (services running on Kafka + a store)"
    )
    drive.add_argument("scenario", type=Path, help="scenario file (ledgerlet/v1 Scenario YAML)")
    drive.add_argument("--decisions", type=Path, required=True, help="where to write the decision log (JSON Lines)")
    _bus_and_store(drive)
    drive.add_argument("--run-id", help="use this run id (ids in the log are derived from it)")
    drive.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    _max_duration(drive)
    _order_by_node(drive)
    drive.add_argument(
        "--members",
        default=os.environ.get("LEDGERLET_MEMBERS", ""),
        help="services split between several members, NAME=N[,NAME=N] (env LEDGERLET_MEMBERS): the clock "
        "waits for each member (stats-collector and eviction-manager can be split; a split eviction-manager "
        "orders the run by node; see `service --member` and `--pool`)",
    )
    drive.add_argument(
        "--idle-timeout",
        type=float,
        default=float(os.environ.get("LEDGERLET_IDLE_TIMEOUT", "600")),
        help="seconds the services may go without handling anything while a step is under way "
        "before the run gives up (default 600)",
    )

    service = sub.add_parser("service", help="run one service of the distributed stack until SIGTERM")
    service.add_argument("name", choices=service_names(), help="which service")
    _bus_and_store(service)
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

    health = sub.add_parser("health", help="exit 0 if the named service's loop turned recently (health checks)")
    health.add_argument("name", choices=service_names())
    health.add_argument("--member", default=None, help="I/N, as the service's (env LEDGERLET_MEMBER)")
    health.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE, help=f"seconds (default {DEFAULT_MAX_AGE:g})")

    add_postmortem_parsers(sub)

    contracts = sub.add_parser("contracts", help="write or check the JSON Schemas in contracts/")
    contracts.add_argument("--dir", type=Path, default=Path("contracts"), help="where the schemas are")
    contracts.add_argument("--check", action="store_true", help="fail if the committed schemas are stale")
    add_completion_parser(sub)
    return with_defaults_in_help(p)


def _bus_and_store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bus",
        default=os.environ.get("LEDGERLET_BUS"),
        help="kafka://HOST:PORT[,HOST:PORT][?namespace=NAME] (env LEDGERLET_BUS)",
    )
    p.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE"),
        help="event store DSN, postgresql://USER@HOST:PORT/DB (env LEDGERLET_STORE)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=int(os.environ.get("LEDGERLET_PARTITIONS", DEFAULT_PARTITIONS)),
        help=f"partitions of the keyed topics when they are created (default {DEFAULT_PARTITIONS})",
    )


def load_or_report(path: Path, console: Console, max_duration: int = MAX_DURATION) -> Scenario | None:
    """The scenario, or None once the error is said (exit 2): one that loads but whose
    run is longer than ``max_duration`` is refused too."""
    try:
        data = read_bounded(path, str(path))  # (a device or a FIFO too: up to the limit)
        scenario = load_scenario(decode_text(data, str(path)), str(path))
        check_duration(scenario.duration, max_duration, str(path))
        return scenario
    except OSError as exc:
        error(f"{path}: {exc.strerror or exc}")
        return None
    except InputError as exc:  # (its text is the input's, never markup)
        error(str(exc))
        return None


def _run_id_error(run: str | None, option: str = "--run-id") -> bool:
    """Say what is wrong with a run id the user gave (True), before anything runs."""
    if run is None:
        return False
    try:
        check_run_id(run, option)
    except BadRunId as exc:
        error(str(exc))
        return True
    return False


async def _run(args: argparse.Namespace, console: Console) -> int:
    if address_error(args.store, existing=False) or _run_id_error(args.run_id):
        return EXIT_BAD_INPUT
    scenario = _ordered(args, load_or_report(args.scenario, console, args.max_duration))
    if scenario is None:
        return EXIT_BAD_INPUT
    decisions = _decisions_output(args)
    if decisions is None:
        return EXIT_BAD_INPUT
    for w in scenario.warnings:
        warning(f"{scenario.source}: {w}")
    try:  # (the same OTEL_* variables as the distributed services read; all off by default)
        telemetry = Telemetry.from_env("embedded")
    except ValueError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    with stopped_by_signals(cancel=False) as opening:
        try:
            store = await open_store(args.store)
        except Exception as exc:  # a store we cannot open or migrate
            error(open_failure(args.store, exc))
            telemetry.shutdown()
            return EXIT_FAILED
    if opening.signals:
        telemetry.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
        warning(
            f"interrupted by {opening.signals[0].name} before the run began; nothing of it was stored", label="stopped"
        )
        return 128 + int(opening.signals[0])
    run_id = args.run_id or new_run_id()
    refused = await _bound_to_its_run(args, store, run_id, scenario) if args.run_id else None
    if refused is not None:
        telemetry.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
        return refused
    try:
        with (
            stopped_by_signals() as stopping,
            virtual_time_progress(console, scenario.duration, enabled=not args.quiet and console.is_terminal) as cb,
        ):
            result: RunResult | None = None
            try:
                result = await run_embedded(
                    scenario,
                    store,
                    run=run_id,
                    progress=cb,
                    full_observations=args.store_observations == "full",
                    telemetry=telemetry,
                    store_wait=args.store_wait,
                )
            except asyncio.CancelledError:
                if not stopping.signals:
                    raise
        if result is None:
            return await _interrupted(stopping.signals[0], store, run_id, scenario.duration, console)
    except ServiceFailed as exc:
        error(_failure(exc, store.describe(), run_id, args.store_wait))
        return EXIT_FAILED
    except STORE_ERRORS as exc:  # (storing how the run ended, or reading its decisions back)
        error(
            f"{store.describe()} failed at the end of run {run_id}: {store_reason(exc)}; the run is incomplete. "
            f"Run the same scenario with --run-id {run_id} to complete it."
        )
        return EXIT_FAILED
    finally:
        telemetry.shutdown()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
    return _report(args, console, scenario, result, store.describe(), decisions)


#: what a store that fails raises
STORE_ERRORS: Final = (StoreError, OSError)


def _failure(exc: ServiceFailed, where: str, run: str, wait: float) -> str:
    """Why the run stopped; for a store that took nothing for ``--store-wait``, whether
    the run is stored as failed and how to complete it."""
    cause = exc.__cause__
    if not isinstance(cause, StoreUnwritable):
        return str(exc)
    stored = (
        "it is stored as failed"
        if exc.outcome_stored
        else "it could not be stored as failed either (the store shows it running, then abandoned)"
    )
    return (
        f"{where} could not be written: {cause} (--store-wait {wait:g}); run {run} stopped and {stored}. "
        f"Run the same scenario with --run-id {run} once the store takes writes again to complete it."
    )


async def _bound_to_its_run(args: argparse.Namespace, store: SqlEventStore, run: str, scenario: Scenario) -> int | None:
    """The exit code if ``--run-id`` names a stored run of another scenario or options
    (:mod:`~ledgerlet_services.runtime.run_binding`), or if that cannot be read."""
    full = args.store_observations == "full"
    with stopped_by_signals() as stopping:
        try:
            await check_run_binding(store, run, scenario, full_observations=full)
            return None
        except RunMismatch as exc:
            error(str(exc))
            return EXIT_BAD_INPUT
        except asyncio.CancelledError:
            if not stopping.signals:
                raise
        except Exception as exc:  # the store would not answer
            error(f"cannot read run {run} in {store.describe()}: {store_reason(exc)}")
            return EXIT_FAILED
    warning(f"interrupted by {stopping.signals[0].name} before the run began; nothing was stored", label="stopped")
    return 128 + int(stopping.signals[0])


#: how long closing the store may take once a run has stopped (a store cut off mid-write
#: could otherwise keep the process alive)
STORE_CLOSE_TIMEOUT = 10.0


#: the signals that stop a command cleanly (128 + the signal's number)
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class _Stopping:
    """The signals received while a run was under way (the first one stops it)."""

    def __init__(self) -> None:
        self.signals: list[signal.Signals] = []


@contextlib.contextmanager
def stopped_by_signals(*, cancel: bool = True) -> Iterator[_Stopping]:
    """SIGINT (Ctrl-C) and SIGTERM stop the run cleanly: the current task is cancelled, so
    every service stops and the store is closed; a second Ctrl-C while that happens gets
    Python's own handling (an immediate KeyboardInterrupt). With ``cancel=False`` the
    signal is only noted, for steps that must not be cut in half (opening the store: its
    driver's thread would answer a loop already gone)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stopping = _Stopping()
    # (the loop's removal of a handler leaves the signal's default, which for SIGTERM
    # kills the process: the command's own handlers are put back instead)
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}

    def restore() -> None:
        for s in STOP_SIGNALS:
            loop.remove_signal_handler(s)
            if before[s] is not None:
                signal.signal(s, before[s])

    def stop(sig: signal.Signals) -> None:
        stopping.signals.append(sig)
        restore()
        if task is not None and cancel:
            task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    try:
        yield stopping
    finally:
        restore()
        if stopping.signals and task is not None and cancel:
            task.uncancel()


async def _interrupted(sig: signal.Signals, store: SqlEventStore, run: str, t: int, console: Console) -> int:
    """Say where the run stopped and how to finish it; exit 128 + the signal's number."""
    reason = f"interrupted by {sig.name}"
    with contextlib.suppress(Exception):
        await asyncio.wait_for(record_outcome(store, run, t, RUN_FAILED, reason), STORE_CLOSE_TIMEOUT)
    warning(
        f"{reason}; run {run} is incomplete in {store.describe()}. "
        f"Run the same scenario with --run-id {run} to complete it.",
        label="stopped",
    )
    return 128 + int(sig)


def _decisions_output(args: argparse.Namespace) -> Output | None:
    """``--decisions``, checked before anything runs: never a device, a FIFO, a
    directory, the store's own file or the scenario (:mod:`outputs`)."""
    reads = [("the scenario", args.scenario), *(("the store's own file", f) for f in store_files(args.store))]
    try:
        return check_output(args.decisions, "--decisions", reads=reads)
    except OutputRefused as exc:
        error(str(exc))
        return None


def _report(
    args: argparse.Namespace, console: Console, scenario: Scenario, result: RunResult, where: str, out: Output
) -> int:
    """Write the decision log; print what was decided. A log that cannot be written
    (a full disk) fails the command, and says that the run itself is stored and how
    to write its log (the same scenario again under its run id: what is stored is kept)."""
    records = to_records([d.envelope for d in result.decisions], scenario.start)
    try:
        write_output(out, encode_records(records))
    except OutputFailed as exc:
        error(
            f"run {result.run} is stored in {where} ({len(records)} decisions), but its decision log was not "
            f"written: {exc}. Run the same scenario with --run-id {result.run} and another --decisions path "
            "to write it from the store.",
        )
        return EXIT_FAILED
    if not args.quiet:
        for table in summary_tables(result.decisions):
            console.print(table)
        console.print(
            f"{len(records)} decisions -> {args.decisions}; {result.events_stored} events stored in "
            f"{where} (run {result.run}); {result.driver.virtual_time / SECOND:g}s of virtual time in "
            f"{result.wall_seconds:.2f}s wall ({rate(result.driver.virtual_time, result.wall_seconds)})",
            highlight=False,
        )
    return EXIT_OK


async def _drive(args: argparse.Namespace, console: Console) -> int:
    scenario = _ordered(args, load_or_report(args.scenario, console, args.max_duration))
    if scenario is None:
        return EXIT_BAD_INPUT
    if not args.bus or not args.store:
        error("drive needs --bus and --store (or LEDGERLET_BUS, LEDGERLET_STORE)")
        return EXIT_BAD_INPUT
    if address_error(args.store, existing=False) or _run_id_error(args.run_id):
        return EXIT_BAD_INPUT
    decisions = _decisions_output(args)
    if decisions is None:
        return EXIT_BAD_INPUT
    for w in scenario.warnings:
        warning(f"{scenario.source}: {w}")
    try:
        members = parse_members(args.members)
    except ValueError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    telemetry = Telemetry.from_env("driver")
    from ledgerlet_services.runtime.distributed import drive  # (Kafka's client: for drive and service alone)

    try:
        with virtual_time_progress(console, scenario.duration, enabled=not args.quiet and console.is_terminal) as cb:
            result = await drive(
                scenario,
                bus_url=args.bus,
                store_dsn=args.store,
                run=args.run_id,
                partitions=args.partitions,
                progress=cb,
                idle_timeout=args.idle_timeout,
                telemetry=telemetry,
                members=members,
            )
    except BusTimeout as exc:
        running = " (is every member of a split service running, as --members says?)" if members else ""
        error(f"{exc}{running}")
        return EXIT_FAILED
    except RunMismatch as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except RunShortfall as exc:
        error(f"{exc} (stored as failed)")
        return EXIT_FAILED
    finally:
        telemetry.shutdown()
    return _report(args, console, scenario, result, describe(args.store), decisions)


def _service(args: argparse.Namespace) -> int:
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
    logging.basicConfig(
        level=os.environ.get("LEDGERLET_LOG_LEVEL", "INFO").upper(),
        format=f"%(asctime)s {args.name} %(levelname)s %(name)s: %(message)s",
    )
    from ledgerlet_services.runtime.distributed import SnapshotEvery, UnknownService, serve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
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


def _contracts(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.contracts_gen import check_or_write

    problems = check_or_write(args.dir, write=not args.check)
    for p in problems:
        error(p, label="stale")
    if problems and args.check:
        console.print("run `ledgerlet contracts` to regenerate the schemas", highlight=False)
        return EXIT_FAILED
    return EXIT_OK


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


def _health(args: argparse.Namespace) -> int:
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


def _dispatch(args: argparse.Namespace) -> int:
    console = Console(stderr=False)
    if not console.is_terminal:
        console.width = max(console.width, 120)  # logs and pipes: do not squeeze the tables
    if args.command in ("run", "service", "drive", "replay", "whatif"):
        # Services hold hundreds of thousands of long-lived objects (pods, plans); the
        # default thresholds run the cyclic collector over all of them again and again
        # while they are built (a quarter of start-up at 110,000 pods).
        gc.set_threshold(50_000, 20, 100)
    if args.command == "run":
        return asyncio.run(_run(args, console))
    if args.command == "drive":
        return asyncio.run(_drive(args, console))
    if args.command == "service":
        return _service(args)
    if args.command == "health":
        return _health(args)
    if args.command == "contracts":
        return _contracts(args, console)
    if args.command == "completion":
        from ledgerlet_services.app.completion import script

        sys.stdout.write(script(_parser(), args.shell))
        return EXIT_OK
    if args.command in POSTMORTEM_COMMANDS:
        return dispatch_postmortem(args, console)
    return EXIT_FAILED


if __name__ == "__main__":
    _loading.__exit__()
    sys.exit(main())
