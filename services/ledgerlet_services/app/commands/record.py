"""``ledgerlet record``: a live cluster recorded into the event store as a run's inputs,
until ``--for`` has passed or SIGINT/SIGTERM (app/live_record.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    STOP_SIGNALS,
    STORE_CLOSE_TIMEOUT,
    positive_duration,
    run_id_error,
)
from ledgerlet_services.app.commands.stored import address_error, open_failure, store_reason
from ledgerlet_services.app.messages import error
from ledgerlet_store.dsn import DEFAULT_DSN


def add_parser(sub: Any) -> None:
    """``record``'s options."""
    record = sub.add_parser(
        "record",
        help="record a live cluster into the store as the inputs of a run, until stopped",
        description="Through the API server (kubectl's kubeconfig): lists then watches the objects a scenario "
        "models and the core Events that tell what the cluster did, scrapes every node's /stats/summary each "
        "--interval and reads its configz again every --configz-every intervals, storing them as the inputs of a run "
        "in wall-clock time. Stop with Ctrl-C or SIGTERM; the same --run-id continues the run.",
    )
    record.add_argument(
        "--kubeconfig",
        help="a file or a :-separated list, merged as kubectl does (default: $KUBECONFIG or ~/.kube/config)",
    )
    record.add_argument("--context", help="default: the kubeconfig's current context")
    record.add_argument("--token", help="a bearer token, instead of the kubeconfig user's credentials")
    record.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}; postgresql://... for PostgreSQL)",
    )
    record.add_argument("--run-id", help="the run to record into (the same id again continues it; default: a new one)")
    record.add_argument("--name", default="live", help="the run's name (default live)")
    record.add_argument("--interval", type=positive_duration, default="10s", help="between scrapes (default 10s)")
    record.add_argument(
        "--for", dest="duration", type=positive_duration, help="stop after this long (default: until stopped)"
    )
    record.add_argument("--concurrency", type=int, default=16, help="nodes scraped at once (default 16)")
    record.add_argument(
        "--node-timeout",
        type=positive_duration,
        default="5s",
        help="a node that has not answered in this long is a gap for the interval (default 5s)",
    )
    record.add_argument(
        "--configz-every",
        type=int,
        default=6,
        metavar="N",
        help="read every kubelet's configz again each N intervals, storing a change (default 6: a minute at 10s)",
    )


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[list[signal.Signals]]:
    """SIGINT/SIGTERM end the recording at the end of its interval: what was stored stays."""
    loop = asyncio.get_running_loop()
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    got: list[signal.Signals] = []

    def stopping(sig: signal.Signals) -> None:
        got.append(sig)
        stop.set()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stopping, sig)
    try:
        yield got
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
            if before[sig] is not None:
                signal.signal(sig, before[sig])


async def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.collect import ApiError, Client
    from ledgerlet_services.app.kubeconfig import load_kubeconfig
    from ledgerlet_services.app.live_record import LiveRecorder, Tick
    from ledgerlet_services.runtime.embedded import new_run_id
    from ledgerlet_store.store import open_store

    if address_error(args.store, existing=False) or run_id_error(args.run_id):
        return EXIT_BAD_INPUT
    if args.concurrency < 1 or args.configz_every < 1:
        error(f"{'--concurrency' if args.concurrency < 1 else '--configz-every'}: at least 1")
        return EXIT_BAD_INPUT
    try:
        api = load_kubeconfig(args.kubeconfig, args.context, token=args.token)
    except InputError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    try:
        store = await open_store(args.store)
    except Exception as exc:  # a store we cannot open or migrate
        error(open_failure(args.store, exc))
        return EXIT_FAILED
    run = args.run_id or new_run_id()
    recorder = LiveRecorder(
        store,
        Client(api),
        run,
        interval=args.interval / 1e9,
        concurrency=args.concurrency,
        node_timeout=args.node_timeout / 1e9,
        name=args.name,
        configz_every=args.configz_every,
    )

    def status(tick: Tick) -> None:
        sys.stderr.write(f"record {run}: {tick.text()}\n")
        sys.stderr.flush()

    stop = asyncio.Event()
    try:
        with _stop_on_signals(stop):
            done = await recorder.record(
                stop, duration=None if args.duration is None else args.duration / 1e9, progress=status
            )
    except InputError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except ApiError as exc:
        error(f"{api.server}: {exc}")
        return EXIT_FAILED
    except (OSError, RuntimeError) as exc:  # (StoreError is one)
        error(f"{store.describe()}: {store_reason(exc)}; what was stored of run {run} stays")
        return EXIT_FAILED
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
    how = "continued" if done.resumed else "recorded"
    console.print(
        escape(
            f"run {run} {how}: {done.ticks} intervals, {done.events} inputs stored in {store.describe()}; "
            f"continue it with: ledgerlet record --run-id {run}"
        ),
        highlight=False,
    )
    for note in done.notes:
        console.print(escape(f"note: {note}"), highlight=False)
    return EXIT_OK
